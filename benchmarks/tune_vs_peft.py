"""One soft-prompt tuning step: softeval vs PEFT prompt tuning, same model, same batch, same run.

A randomly initialised Llama-style model with a Qwen-sized vocabulary (speed does not depend
on trained weights), or a real one with `--model` (a Hugging Face directory, `smollm2`, or a
zoo model of a finished run: benchmarks/benchmark_inputs.py). Both sides start from the same
vectors; the script checks the losses agree, then times forward + backward + AdamW step and
prints the ratio.

    python benchmarks/tune_vs_peft.py                    # defaults: vocab 151936, batch 8
    python benchmarks/tune_vs_peft.py --model smollm2 --threads 1
"""

from __future__ import annotations

import argparse
import copy
import statistics
import time

import torch
from peft import PromptTuningConfig, get_peft_model
from transformers import LlamaConfig, LlamaForCausalLM

from softeval.engine.batching import IGNORE, TokenBatch
from softeval.engine.softprompt import answer_loss, freeze


def make_batch(args: argparse.Namespace, generator: torch.Generator) -> TokenBatch:
    """Unpadded rows (where PEFT's and our soft-prompt placement coincide), answer at the end."""
    ids = torch.randint(0, args.vocab, (args.batch, args.prompt_len + args.answer_len), generator=generator)
    labels = torch.full_like(ids, IGNORE)
    labels[:, -args.answer_len :] = ids[:, -args.answer_len :]
    return TokenBatch(ids, torch.ones_like(ids), labels)


def real_model(args: argparse.Namespace) -> torch.nn.Module:
    """A real model in float32; its vocabulary and width replace --vocab and --width."""
    from benchmark_inputs import model_directory
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(model_directory(args.model), dtype=torch.float32)
    args.vocab, args.width = model.get_input_embeddings().weight.shape
    args.layers = model.config.num_hidden_layers
    return model


def timed_steps(step, repeats: int) -> list[float]:
    step()  # warm-up
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        step()
        times.append(time.perf_counter() - start)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", help="a real model: a directory, smollm2, or a zoo model's name")
    parser.add_argument("--vocab", type=int, default=151936)
    parser.add_argument("--width", type=int, default=256)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--prompt-len", type=int, default=64)
    parser.add_argument("--answer-len", type=int, default=6)
    parser.add_argument("--n-tokens", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=args.vocab,
        hidden_size=args.width,
        intermediate_size=4 * args.width,
        num_hidden_layers=args.layers,
        num_attention_heads=4,
        num_key_value_heads=4,
        tie_word_embeddings=True,
    )
    ours_model = LlamaForCausalLM(config) if args.model is None else real_model(args)
    freeze(ours_model)
    peft_model = get_peft_model(
        copy.deepcopy(ours_model), PromptTuningConfig(task_type="CAUSAL_LM", num_virtual_tokens=args.n_tokens)
    )
    generator = torch.Generator().manual_seed(0)
    start_vectors = torch.randn(args.n_tokens, args.width, generator=generator) * 0.02
    batch = make_batch(args, generator)

    vectors = torch.nn.Parameter(start_vectors.clone())
    ours_opt = torch.optim.AdamW([vectors], lr=0.1)
    prompt_weight = peft_model.prompt_encoder["default"].embedding.weight
    with torch.no_grad():
        prompt_weight.copy_(start_vectors)
    peft_opt = torch.optim.AdamW([prompt_weight], lr=0.1)

    ours_loss = answer_loss(ours_model, vectors, batch).item()
    peft_loss = peft_model(input_ids=batch.input_ids, attention_mask=batch.attention_mask, labels=batch.labels).loss
    print(f"loss: ours {ours_loss:.6f}  peft {peft_loss.item():.6f}  |diff| {abs(ours_loss - peft_loss.item()):.2e}")

    def ours_step() -> None:
        answer_loss(ours_model, vectors, batch).backward()
        ours_opt.step()
        ours_opt.zero_grad(set_to_none=True)

    def peft_step() -> None:
        peft_model(input_ids=batch.input_ids, attention_mask=batch.attention_mask, labels=batch.labels).loss.backward()
        peft_opt.step()
        peft_opt.zero_grad(set_to_none=True)

    ours_times = timed_steps(ours_step, args.repeats)
    peft_times = timed_steps(peft_step, args.repeats)
    ours_median, peft_median = statistics.median(ours_times), statistics.median(peft_times)
    print(
        f"model: vocab {args.vocab}, width {args.width}, layers {args.layers}; batch {args.batch} x "
        f"({args.n_tokens} + {args.prompt_len} + {args.answer_len}) tokens; {args.threads} threads"
    )
    print(f"step (median of {args.repeats}): ours {ours_median * 1000:.1f} ms, peft {peft_median * 1000:.1f} ms")
    print(f"speed-up ours vs peft: {peft_median / ours_median:.2f}x")


if __name__ == "__main__":
    main()
