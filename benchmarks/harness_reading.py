"""What lm-evaluation-harness's reading of each response costs: one pass with two readings vs
softeval's reading alone, and vs a second generation run for the harness's (the naive way).

The generate job of a task with `harness_generation` keeps a row going until both softeval's
stops/budget and the harness's (its stop strings, 256 tokens) have ended. This script times, on
the same prompts in the same run: (1) softeval's reading alone, (2) one pass with both readings,
(3) two passes, one per reading; it checks that (2) gives exactly the texts of (1) and (3).

    python benchmarks/harness_reading.py --model smollm2 --task gsm8k --method few_shot --threads 1
"""

from __future__ import annotations

import argparse
from pathlib import Path

import torch
from benchmark_inputs import add_model_and_task_arguments, best_of, model_directory, task_splits
from transformers import AutoModelForCausalLM, AutoTokenizer

from softeval.data.tasks import load_task
from softeval.engine.generate import generate_greedy
from softeval.engine.methods import build_prompts, few_shot_examples
from softeval.jobs.generate import harness_reading


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_model_and_task_arguments(parser, model="smollm2", task="gsm8k")
    parser.add_argument("--method", default="few_shot", choices=["zero_shot", "few_shot"])
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--max-new-tokens", type=int, default=200, help="softeval's budget (the task's, say)")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    results = Path(args.results)
    model_dir = model_directory(args.model, results, args.role)
    task = load_task(args.task_dir, args.task)
    also = harness_reading(task)
    if also is None:
        raise SystemExit(f"task {args.task} has no harness_generation: nothing to compare")
    splits = task_splits(task, results, Path(args.mirror))
    shots = few_shot_examples(splits["few_shot"], 3, 0, task) if args.method == "few_shot" else []
    method = build_prompts(task, args.method, splits["test"], shots)
    tokenizer = AutoTokenizer.from_pretrained(model_dir, padding_side="left")
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32).eval()
    n = len(method.prompts)
    print(
        f"model {model_dir}, task {args.task} {args.method}, {n} prompts, batch {args.batch}, {args.threads} threads; "
        f"softeval: stops {task.stop!r}, {args.max_new_tokens} tokens; harness: stops {also.stops!r}, "
        f"{also.max_new_tokens} tokens"
    )

    def run(stops, budget, second=None):
        return generate_greedy(
            model,
            tokenizer,
            method.prompts,
            stops=stops,
            max_new_tokens=budget,
            batch_size=args.batch,
            shared_prefix=method.shared_prefix,
            also=second,
        )

    alone_s, alone = best_of(lambda: run(task.stop, args.max_new_tokens), args.repeats)
    both_s, both = best_of(lambda: run(task.stop, args.max_new_tokens, also), args.repeats)
    harness_s, harness = best_of(lambda: run(also.stops, also.max_new_tokens), args.repeats)
    assert [g.text for g in both] == [g.text for g in alone], "softeval's reading changed"
    assert [g.also_text for g in both] == [g.text for g in harness], "the harness's reading differs from its own run"
    tokens = sum(g.new_tokens for g in alone), sum(g.new_tokens for g in harness)
    print(f"softeval's reading alone : {alone_s:7.1f} s ({tokens[0]} new tokens)")
    print(f"the harness's alone      : {harness_s:7.1f} s ({tokens[1]} new tokens)")
    print(f"one pass, both readings  : {both_s:7.1f} s = {both_s / alone_s:.2f}x softeval's alone")
    print(
        f"two passes (naive)       : {alone_s + harness_s:7.1f} s = {(alone_s + harness_s) / both_s:.2f}x the one pass"
    )
    changed = sum(g.text != g.also_text for g in both)
    print(f"responses whose harness reading differs from softeval's: {changed}/{n}")


if __name__ == "__main__":
    main()
