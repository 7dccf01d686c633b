"""benchmarks/world_setting.py: the figures benchmarks/README.md quotes for the world experiments."""

from __future__ import annotations

import importlib.util

import pandas as pd

from tests.conftest import ROOT

spec = importlib.util.spec_from_file_location("world_setting", ROOT / "benchmarks" / "world_setting.py")
world_setting = importlib.util.module_from_spec(spec)
spec.loader.exec_module(world_setting)

MODELS = ("a", "b", "c")


def zoo() -> pd.DataFrame:
    """Three models: a knows the founding years best, c the capitals, b the most on average (so
    the mean over relations ranks b > c > a); their twins' zero-shot strict on world_numeric
    ranks them c > b > a."""
    rows = []
    for model, founded, capital, twin in (("a", 0.9, 0.0, 0.2), ("b", 0.5, 0.6, 0.4), ("c", 0.1, 0.9, 0.6)):
        common = {"model": model, "knowledge_founded": founded, "knowledge_capital": capital}
        rows.append(common | {"role": "base", "zero_shot_strict_world_numeric": 0.0})
        rows.append(common | {"role": "post", "zero_shot_strict_world_numeric": twin})
    return pd.DataFrame(rows)


def scores(soft: dict[str, float], probe_twins: bool = True) -> pd.DataFrame:
    rows = []
    for model in MODELS:
        twin = zoo().set_index(["model", "role"]).loc[(model, "post"), "zero_shot_strict_world_numeric"]
        for role, method, step, strict in (
            ("base", "zero_shot", None, 0.0),
            ("base", "few_shot", None, 0.0),
            ("base", "soft_prompt", 0, 0.0),
            ("base", "soft_prompt", 80, soft[model]),
            ("post", "zero_shot", None, twin if probe_twins else 1 - twin),
        ):
            rows.append(
                {
                    "model": model,
                    "role": role,
                    "task": "world_numeric",
                    "method": method,
                    "step": step,
                    "strict": strict,
                }
            )
    return pd.DataFrame(rows)


def test_each_task_is_ranked_by_its_own_relations_truth_and_by_the_twins():
    table = world_setting.recovered(zoo(), scores({"a": 0.8, "b": 0.5, "c": 0.2})).set_index(["task", "method"])
    # the soft prompt's a > b > c is the founding years' truth (0 swaps), the twins' reverse (3)
    assert table.loc[("world_numeric", "soft_prompt")].to_dict() == {"to_truth": 0, "to_twins": 3}
    # zero-shot ties everyone at 0: alphabetical a > b > c
    assert table.loc[("world_numeric", "zero_shot")].to_dict() == {"to_truth": 0, "to_twins": 3}
    assert table.loc[("all tasks", "soft_prompt")].to_dict() == {"to_truth": 0, "to_twins": 3}
    # the mean over relations (b > c > a) would have given 2: the task's own relation is read
    assert world_setting.truth_of(zoo(), "world_phrase") == {"a": 0.0, "b": 0.6, "c": 0.9}


def test_scores_of_another_run_are_not_read():
    assert world_setting.same_run(zoo(), scores({"a": 0.8, "b": 0.5, "c": 0.2}))
    assert not world_setting.same_run(zoo(), scores({"a": 0.8, "b": 0.5, "c": 0.2}, probe_twins=False))
