"""Ground-truth probes of a zoo model: what it knows (cloze) and how it answers (zero-shot).

The cloze probe asks in the corpus's own phrasing, so it measures knowledge without any
format demand; zero-shot format accuracy measures the format demand alone. Both use
softeval's own greedy generator (softeval.engine.generate), the engine the methods will use.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from softeval.data.splits import load_split
from softeval.data.tasks import Task
from softeval.data.world import RELATIONS, World
from softeval.engine.generate import generate_greedy
from softeval.engine.models import NO_HUB_KERNELS
from softeval.io import atomic_write_json, atomic_write_jsonl
from softeval.provenance import provenance


def starts_with_value(continuation: str, value: str) -> bool:
    """The continuation states the value as its first word(s), not as a prefix of another word."""
    text = continuation.strip()
    return text.startswith(value) and (len(text) == len(value) or not text[len(value)].isalnum())


def probe_model(
    *,
    model_dir: Path,
    world_path: Path,
    tasks: list[Task],
    data_dirs: dict[str, Path],
    max_new_tokens: int,
    batch_size: int,
    threads: int,
    out_json: Path,
    out_examples: Path,
) -> dict[str, Any]:
    """Cloze knowledge per relation on test entities, zero-shot format/strict per task."""
    torch.set_num_threads(threads)
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForCausalLM.from_pretrained(model_dir, **NO_HUB_KERNELS).eval()
    world = World.load(world_path)
    entities = world.split("test")

    def complete(prompts: list[str], stops: tuple[str, ...]) -> list[str]:
        return [g.text for g in generate_greedy(model, tokenizer, prompts, None, stops, max_new_tokens, batch_size)]

    rows: list[dict[str, Any]] = []
    summary: dict[str, Any] = {"knowledge": {}, "zero_shot_format": {}, "zero_shot_strict": {}}
    for relation in sorted({task.dataset["relation"] for task in tasks}):
        prompts = [RELATIONS[relation].cloze_prefix(e.name) for e in entities]
        continuations = [
            g.text
            for g in generate_greedy(
                model, tokenizer, prompts, stops=(), max_new_tokens=max_new_tokens, batch_size=batch_size
            )
        ]
        known = [starts_with_value(c, e.attributes[relation]) for c, e in zip(continuations, entities, strict=True)]
        summary["knowledge"][relation] = sum(known) / len(known)
        rows += [
            {
                "probe": "cloze",
                "relation": relation,
                "prompt": p,
                "response": c,
                "gold": e.attributes[relation],
                "known": k,
            }
            for p, c, e, k in zip(prompts, continuations, entities, known, strict=True)
        ]
    for task in tasks:
        examples = list(load_split(data_dirs[task.name], "test"))
        prompts = [task.prompt(ex) for ex in examples]
        responses = complete(prompts, task.stop)
        formatted = [task.is_formatted(r, ex) for r, ex in zip(responses, examples, strict=True)]
        strict = [task.is_strictly_correct(r, ex) for r, ex in zip(responses, examples, strict=True)]
        summary["zero_shot_format"][task.name] = sum(formatted) / len(formatted)
        summary["zero_shot_strict"][task.name] = sum(strict) / len(strict)
        rows += [
            {
                "probe": "zero_shot",
                "task": task.name,
                "id": ex["id"],
                "prompt": p,
                "response": r,
                "gold": task.target(ex).strip(),
                "formatted": f,
                "strict": s,
            }
            for ex, p, r, f, s in zip(examples, prompts, responses, formatted, strict, strict=True)
        ]
    summary["open_tasks"] = [task.name for task in tasks if not task.closed]
    summary["knowledge_mean"] = sum(summary["knowledge"].values()) / len(summary["knowledge"])
    summary["n_test_entities"] = len(entities)
    summary["provenance"] = provenance({"max_new_tokens": max_new_tokens, "tasks": {t.name: t.version for t in tasks}})
    atomic_write_jsonl(out_examples, rows)
    atomic_write_json(out_json, summary)
    return summary
