from __future__ import annotations

import json

import pytest

from softeval.data.splits import load_split, prepare_task, task_examples
from softeval.schema import InputError


@pytest.fixture
def prepared(tmp_path, world, tasks):
    world.save(tmp_path / "world.json")
    for name, task in tasks.items():
        prepare_task(task, tmp_path / name, tmp_path / "world.json")
    return tmp_path


def test_splits_read_back_as_written(prepared, world, tasks):
    train = load_split(prepared / "world_numeric", "train")
    test = load_split(prepared / "world_numeric", "test")
    assert len(train) == len(world.split("train")) and len(test) == len(world.split("test"))
    assert {row["entity"] for row in train}.isdisjoint(row["entity"] for row in test)
    assert test == [json.loads(line) for line in (prepared / "world_numeric" / "test.jsonl").open()]
    by_name = {e.name: e for e in world.entities}
    for row in test:
        assert row["answer"] == by_name[row["entity"]].attributes["founded"]
        assert row["question"] == f"In what year was {row['entity']} founded?"
    meta = json.loads((prepared / "world_numeric" / "meta.json").read_text())
    assert meta["task_version"] == tasks["world_numeric"].version
    assert meta["counts"] == {"train": len(train), "test": len(test), "few_shot": len(train)}


def test_closed_examples_list_the_gold_among_sorted_options(prepared, world):
    rows = list(load_split(prepared / "world_choice", "test"))
    for row in rows:
        assert row["options"] == sorted(row["options"])
        assert row["options"][row["label"]] == row["answer"]
        assert len(set(row["options"])) == 4
    assert len({row["label"] for row in rows}) > 1


def test_examples_are_deterministic(world, tasks):
    assert task_examples(tasks["world_choice"], world, "test") == task_examples(tasks["world_choice"], world, "test")


def test_split_with_a_missing_field_is_named(tmp_path):
    (tmp_path / "test.jsonl").write_text('{"id": "1", "question": "q"}\n')
    with pytest.raises(InputError, match=r"test\.jsonl: examples lack field 'answer'"):
        load_split(tmp_path, "test")


def test_a_field_some_rows_lack_is_none_there(tmp_path):
    """As `datasets` read it: every row has every field of the split."""
    (tmp_path / "test.jsonl").write_text(
        '{"id": "1", "question": "q", "answer": "a", "options": ["x"]}\n{"id": "2", "question": "r", "answer": "b"}\n'
    )
    assert load_split(tmp_path, "test")[1] == {"id": "2", "question": "r", "answer": "b", "options": None}


def test_missing_split_file_says_which_rule(tmp_path):
    with pytest.raises(InputError, match="run the prepare_task rule"):
        load_split(tmp_path, "train")
