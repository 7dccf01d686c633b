"""Task splits: built from the world or a real benchmark (through `datasets`), written and read back as JSONL.

Every task gets the same three files: train (soft-prompt tuning), test (evaluation) and
few_shot (the pool the k shots are drawn from; the train split unless the benchmark has a
dedicated one, like MMLU's dev split).
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

from softeval.data.fields import to_example
from softeval.data.sources import load_rows, roles
from softeval.data.tasks import Task
from softeval.data.world import Entity, World
from softeval.io import atomic_write_json, atomic_write_jsonl, read_jsonl
from softeval.layout import SPLITS as SPLITS  # the prepared splits (train, test, few_shot)
from softeval.provenance import provenance
from softeval.schema import InputError

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


def pilot_sample(test: list[dict[str, Any]], limit: int | None, seed: int, task: str) -> list[dict[str, Any]]:
    """A pilot run's test examples: a seeded sample of `limit` (in split order), the same for every
    model and method because the split is written once; the whole split without a limit."""
    if limit is None or limit >= len(test):
        return test
    keep = sorted(random.Random(f"{seed}-{task}-test-limit").sample(range(len(test)), limit))
    return [test[i] for i in keep]


def prepare_task(
    task: Task,
    out_dir: Path,
    world_path: Path | None = None,
    source: str = "hub",
    mirror: Path | None = None,
    test_limit: int | None = None,
    seed: int = 0,
) -> None:
    """Write <out_dir>/{train,test,few_shot}.jsonl and meta.json for one task (with `test_limit`,
    a seeded sample of the test split: a pilot run)."""
    if task.dataset["source"] == "world":
        if world_path is None:
            raise InputError(f"task {task.name}: a world task needs the world file (--world)")
        world = World.load(world_path)
        splits = {split: task_examples(task, world, split) for split in ("train", "test")}
        origin: dict[str, Any] = {"world_seed": world.seed}
    else:
        splits, origin = {}, {}
        for role in roles(task):
            rows, record = load_rows(task, role, source, mirror)
            where = record.get("file") or f"{record['path']}:{record['split']}"
            splits[role] = [to_example(task, dict(row), i, role, where) for i, row in enumerate(rows)]
            if not splits[role]:
                raise InputError(f"{where}: the {role} split of task {task.name} is empty")
            origin[role] = record
        origin.setdefault("few_shot", origin["train"])
    splits.setdefault("few_shot", splits["train"])  # shots come from train unless the benchmark has its own
    for split, rows in splits.items():
        check_unique_ids(rows, task, split, origin.get(split, {}))
    test_total = len(splits["test"])
    splits["test"] = pilot_sample(splits["test"], test_limit, seed, task.name)
    for split, rows in splits.items():
        atomic_write_jsonl(out_dir / f"{split}.jsonl", rows)
    atomic_write_json(
        out_dir / "meta.json",
        {
            "task": task.name,
            "task_version": task.version,
            "kind": task.kind,
            "counts": {split: len(rows) for split, rows in splits.items()},
            "test_total": test_total,
            "test_limit": test_limit,
            "provenance": provenance(
                params={"task": task.name, "data": origin, "test_limit": test_limit, "seed": seed}
            ),
        },
    )


def check_unique_ids(rows: list[dict[str, Any]], task: Task, split: str, record: dict[str, Any]) -> None:
    """Every later stage pairs a response with its gold by id: a repeated id would pair one
    example's response with another's answer, so it stops here."""
    seen: dict[str, int] = {}
    for index, row in enumerate(rows):
        if row["id"] in seen:
            where = record.get("file") or (f"{record['path']}:{record['split']}" if "path" in record else task.name)
            raise InputError(
                f"{where}: the {split} split of task {task.name} repeats id {row['id']!r} (rows {seen[row['id']]} and "
                f"{index}); ids must be unique per split: fix the data, or drop `fields.id` from the task file to "
                "number the rows"
            )
        seen[row["id"]] = index


def load_split(data_dir: Path | str, split: str) -> list[dict[str, Any]]:
    """A prepared split's examples, checking the fields every task needs.

    Plain JSON lines (this workflow wrote them): a job that only reads its splits does not pay
    for importing `datasets` (about a second) and its Arrow cache. As `datasets` would, every
    row has every field of the split (None where a row lacks one)."""
    path = Path(data_dir) / f"{split}.jsonl"
    if not path.is_file():
        raise InputError(f"{path}: split file not found; run the prepare_task rule for this task first")
    rows = read_jsonl(path, "split")
    fields = list(dict.fromkeys(name for row in rows for name in row))
    missing = [name for name in REQUIRED_FIELDS if name not in fields]
    if missing:
        raise InputError(
            f"{path}: examples lack field '{missing[0]}'; every example needs {', '.join(REQUIRED_FIELDS)}"
        )
    return [{name: row.get(name) for name in fields} for row in rows]
