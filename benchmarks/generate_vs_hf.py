"""Soft-prompt generation: softeval's generator vs `model.generate` on a PEFT model, same prompts.

Uses a trained zoo model and its tuned soft prompt (run `snakemake --cores all` first), so
rows stop at different lengths as in a real evaluation. Both sides decode greedily up to
the same token limit and stop at the task's stop strings; the script checks the texts are
identical, then prints the throughput of each and the ratio. (PEFT's generate is timed
without its KV cache, because with it the virtual tokens are lost after the first step on
current PEFT/transformers; the script shows that too.) Our side also reuses the KV
cache of the shared instruction and drops finished rows from the batch.

    python benchmarks/generate_vs_hf.py                       # atlas, base, world_numeric
    python benchmarks/generate_vs_hf.py --model scholar --task world_phrase
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import torch
from peft import PeftModel
from transformers import AutoModelForCausalLM, AutoTokenizer

from softeval.data import load_split
from softeval.generate import cut_at_stop, generate_greedy
from softeval.methods import build_prompts
from softeval.softprompt import import_peft
from softeval.tasks import load_task


def hf_generate(peft_model, tokenizer, prompts, stops, max_new_tokens, batch_size, use_cache) -> list[str]:
    """The usual recipe: left-padded batches through PeftModel.generate, cut at the stop strings."""
    texts = []
    for start in range(0, len(prompts), batch_size):
        batch = tokenizer(prompts[start : start + batch_size], return_tensors="pt", padding=True)
        with torch.no_grad():
            out = peft_model.generate(
                **batch,
                max_new_tokens=max_new_tokens,
                do_sample=False,
                stop_strings=list(stops),
                tokenizer=tokenizer,
                pad_token_id=tokenizer.pad_token_id,
                eos_token_id=tokenizer.eos_token_id,
                use_cache=use_cache,
            )
        new = out[:, batch["input_ids"].shape[1] :]
        texts += [cut_at_stop(tokenizer.decode(row, skip_special_tokens=True), stops) for row in new]
    return texts


def best_of(run, repeats: int) -> tuple[float, list[str]]:
    times, result = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        result = run()
        times.append(time.perf_counter() - start)
    return min(times), result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results", default="results")
    parser.add_argument("--model", default="atlas")
    parser.add_argument("--role", default="base")
    parser.add_argument("--task", default="world_numeric")
    parser.add_argument("--task-dir", default="config/tasks")
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--max-new-tokens", type=int, default=24)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    results = Path(args.results)
    model_dir = results / "zoo" / args.model / args.role
    adapter = results / "softprompts" / args.model / args.role / args.task / "peft"
    if not adapter.is_dir():
        raise SystemExit(f"{adapter} not found: run `snakemake --cores all` first")
    task = load_task(args.task_dir, args.task)
    test = [dict(row) for row in load_split(results / "data" / args.task, "test")]
    method = build_prompts(task, "soft_prompt", test)
    tokenizer = AutoTokenizer.from_pretrained(model_dir, padding_side="left")
    model = AutoModelForCausalLM.from_pretrained(model_dir).eval()
    vectors = import_peft(adapter)
    peft_model = PeftModel.from_pretrained(AutoModelForCausalLM.from_pretrained(model_dir), str(adapter)).eval()

    def ours() -> list[str]:
        generations = generate_greedy(
            model,
            tokenizer,
            method.prompts,
            vectors=vectors,
            stops=task.stop,
            max_new_tokens=args.max_new_tokens,
            batch_size=args.batch,
            shared_prefix=method.shared_prefix,
        )
        return [g.text for g in generations]

    n = len(method.prompts)
    print(f"model {model_dir}, task {args.task}, {n} prompts, batch {args.batch}, {args.threads} threads")
    ours_s, ours_texts = best_of(ours, args.repeats)
    print(f"softeval            : {n / ours_s:8.1f} prompts/s ({ours_s * 1000:.0f} ms)")
    # PEFT's generate with the KV cache drops the virtual tokens after the first step on
    # this PEFT/transformers pair (cf. huggingface/peft#1391, #2123): its texts differ.
    # Without the cache its texts are right, so that is the reference we time.
    for use_cache in (False, True):
        seconds, texts = best_of(
            lambda use_cache=use_cache: hf_generate(
                peft_model, tokenizer, method.prompts, task.stop, args.max_new_tokens, args.batch, use_cache
            ),
            args.repeats,
        )
        same = sum(a == b for a, b in zip(ours_texts, texts, strict=True))
        label = f"PEFT+HF use_cache={use_cache!s:<5}"
        print(f"{label}: {n / seconds:8.1f} prompts/s ({seconds * 1000:.0f} ms), identical texts {same}/{n}")
        if not use_cache:
            print(f"speed-up over the correct reference: {seconds / ours_s:.2f}x")
        if same != n:
            first = next(i for i in range(n) if ours_texts[i] != texts[i])
            print(f"  first difference at {first}: {ours_texts[first]!r} vs {texts[first]!r}")


if __name__ == "__main__":
    main()
