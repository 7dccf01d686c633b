"""Task splits: built from the world, written as JSONL, read back through `datasets`.

Reading through `datasets.load_dataset("json", ...)` keeps one loader for the embedded
world, local files and (later) hub datasets.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import datasets

from softeval.io import atomic_write_json, atomic_write_jsonl
from softeval.provenance import provenance
from softeval.schema import InputError
from softeval.tasks import Task
from softeval.world import Entity, World

SPLITS = ("train", "test")
REQUIRED_FIELDS = ("id", "question", "answer")


def make_example(
    task: Task, world: World, entity: Entity, relation: str, question: str, rng: random.Random, example_id: str
) -> dict[str, Any]:
    """One question about `entity`.

    Closed tasks get seeded distractors from the relation's category pool, listed in sorted
    order: when n_options equals the pool size, every question shows the same lettered list
    (as in NLI- or sentiment-style lettered tasks), which tiny models can learn to answer.
    """
    answer = entity.attributes[relation]
    example: dict[str, Any] = {
        "id": example_id,
        "entity": entity.name,
        "question": question.format(entity=entity.name),
        "answer": answer,
        "options": None,
        "label": None,
    }
    if task.closed:
        pool = [value for value in world.categories[relation] if value != answer]
        options = sorted([*rng.sample(pool, task.dataset["n_options"] - 1), answer])
        example["options"] = options
        example["label"] = options.index(answer)
    return example


def task_examples(task: Task, world: World, split: str) -> list[dict[str, Any]]:
    """All examples of a split: one per entity of that split, in world order."""
    rng = random.Random(f"{world.seed}-{task.name}-{split}")
    return [
        make_example(
            task, world, entity, task.dataset["relation"], task.dataset["question"], rng, f"{task.name}-{split}-{i:04d}"
        )
        for i, entity in enumerate(world.split(split))
    ]


def exposure_example(task: Task, world: World, entity: Entity, rng: random.Random) -> dict[str, Any]:
    """A question about the task's *other* relation, for format-exposure documents."""
    exposure = task.dataset["exposure"]
    return make_example(task, world, entity, exposure["relation"], exposure["question"], rng, "exposure")


def prepare_task(task: Task, world_path: Path, out_dir: Path) -> None:
    """Write <out_dir>/{train,test}.jsonl and meta.json for one task."""
    world = World.load(world_path)
    counts = {}
    for split in SPLITS:
        rows = task_examples(task, world, split)
        atomic_write_jsonl(out_dir / f"{split}.jsonl", rows)
        counts[split] = len(rows)
    atomic_write_json(
        out_dir / "meta.json",
        {
            "task": task.name,
            "task_version": task.version,
            "kind": task.kind,
            "counts": counts,
            "provenance": provenance(params={"world_seed": world.seed, "task": task.name}),
        },
    )


def load_split(data_dir: Path | str, split: str) -> datasets.Dataset:
    """Read a prepared split with `datasets`, checking the fields every task needs."""
    path = Path(data_dir) / f"{split}.jsonl"
    if not path.is_file():
        raise InputError(f"{path}: split file not found; run the prepare_task rule for this task first")
    dataset = datasets.load_dataset("json", data_files=str(path), split="train")
    missing = [name for name in REQUIRED_FIELDS if name not in dataset.column_names]
    if missing:
        raise InputError(
            f"{path}: examples lack field '{missing[0]}'; every example needs {', '.join(REQUIRED_FIELDS)}"
        )
    return dataset
