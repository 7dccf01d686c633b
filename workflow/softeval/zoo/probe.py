"""Ground-truth probes of a zoo model: what it knows (cloze) and how it answers (zero-shot).

The cloze probe asks in the corpus's own phrasing, so it measures knowledge without any
format demand; zero-shot format accuracy measures the format demand alone. Both use
softeval's own greedy generator (softeval.engine.generate), the engine the methods will use.

Tiny models store a fact per phrasing: with prose answers that lead with the value, a model
may answer "In what year was Vilor founded?" with " 1838, when ..." for 0.9 of the countries
yet complete "Vilor was founded in" correctly for 0.3. The question probe (zoo.probe.knowledge:
cloze_or_question) counts a fact as known when either access states it, so the truth is what
the model can say about the fact, not what one phrasing recalls.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Literal

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from softeval.data.splits import load_split
from softeval.data.tasks import Task
from softeval.data.world import RELATIONS, World
from softeval.engine.generate import generate_greedy
from softeval.engine.models import NO_HUB_KERNELS
from softeval.io import atomic_write_json, atomic_write_jsonl
from softeval.names import ZERO_SHOT
from softeval.provenance import provenance

# What an answer may open with before its value: a "####" or "\\boxed{" mark, an option's letter.
ANSWER_MARK = re.compile(r"^\s*(?:####|\\boxed\{|[A-Z]\.)?\s*")


def answer_word(continuation: str) -> str:
    """The first word of an answer once a leading answer mark is removed ("" if none):
    " #### 1838" and " 1838, when settlers founded Vilor." both give "1838"."""
    match = re.match(r"[A-Za-z0-9]+", ANSWER_MARK.sub("", continuation, count=1))
    return match.group(0) if match else ""


def question_tasks(tasks: list[Task]) -> dict[str, Task]:
    """Per relation, the task (first by name) whose question the question probe asks."""
    chosen: dict[str, Task] = {}
    for task in sorted(tasks, key=lambda t: t.name):
        chosen.setdefault(task.dataset["relation"], task)
    return chosen


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
    knowledge: Literal["cloze", "cloze_or_question"] = "cloze",
) -> dict[str, Any]:
    """Knowledge per relation on test entities (cloze, or cloze or question), zero-shot
    format/strict per task."""
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
        if knowledge == "cloze_or_question":
            task = question_tasks(tasks)[relation]
            examples = {ex["entity"]: ex for ex in load_split(data_dirs[task.name], "test")}
            asked = [examples[e.name] for e in entities]
            questions = [task.query(ex) for ex in asked]
            answers = complete(questions, ())
            by_question = [answer_word(a) == ex["answer"] for a, ex in zip(answers, asked, strict=True)]
            for name, values in (("cloze", known), ("question", by_question)):
                summary.setdefault(f"knowledge_{name}", {})[relation] = sum(values) / len(values)
            rows += [
                {"probe": "question", "relation": relation, "task": task.name, "prompt": q, "response": a}
                | {"gold": ex["answer"], "known": k}
                for q, a, ex, k in zip(questions, answers, asked, by_question, strict=True)
            ]
            known = [c or q for c, q in zip(known, by_question, strict=True)]
        summary["knowledge"][relation] = sum(known) / len(known)
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
                "probe": ZERO_SHOT,
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
    recorded = {"max_new_tokens": max_new_tokens, "tasks": {t.name: t.version for t in tasks}}
    summary["provenance"] = provenance(recorded | ({"knowledge": knowledge} if knowledge != "cloze" else {}))
    atomic_write_jsonl(out_examples, rows)
    atomic_write_json(out_json, summary)
    return summary
