"""benchmarks/world_setting.py: the figures benchmarks/README.md quotes for the world experiments."""

from __future__ import annotations

import importlib.util

import pandas as pd

from tests.conftest import ROOT

spec = importlib.util.spec_from_file_location("world_setting", ROOT / "benchmarks" / "world_setting.py")
world_setting = importlib.util.module_from_spec(spec)
spec.loader.exec_module(world_setting)

# a knows the founding years best, c the capitals, b the most on average (the mean over relations
# ranks b > c > a); their twins' zero-shot strict on world_numeric ranks them c > b > a
KNOWLEDGE = {"a": (0.9, 0.0), "b": (0.5, 0.6), "c": (0.1, 0.9)}
TWINS = {"a": 0.2, "b": 0.4, "c": 0.6}


def zoo() -> pd.DataFrame:
    return pd.DataFrame(
        {"model": model, "knowledge_founded": founded, "knowledge_capital": capital, "role": role}
        | {"zero_shot_strict_world_numeric": TWINS[model] if role == "post" else 0.0}
        for model, (founded, capital) in KNOWLEDGE.items()
        for role in ("base", "post")
    )


def scores(soft: dict[str, float], probe_twins: bool = True, last_step: int = 80) -> pd.DataFrame:
    """One run's world_numeric scores: base models tied at 0 but for the soft prompt's last step."""
    return pd.DataFrame(
        {"model": model, "role": role, "task": "world_numeric", "method": method, "step": step, "strict": strict}
        for model in KNOWLEDGE
        for role, method, step, strict in (
            ("base", "zero_shot", None, 0.0),
            ("base", "few_shot", None, 0.0),
            ("base", "soft_prompt", 0, 0.0),
            ("base", "soft_prompt", last_step, soft[model]),
            ("post", "zero_shot", None, TWINS[model] if probe_twins else 1 - TWINS[model]),
        )
    )


def test_each_task_is_ranked_by_its_own_relations_truth_and_by_the_twins():
    table = world_setting.recovered(zoo(), scores({"a": 0.8, "b": 0.5, "c": 0.2})).set_index(["task", "method"])
    # the soft prompt's a > b > c is the founding years' truth (0 swaps), the twins' reverse (3)
    assert table.loc[("world_numeric", "soft_prompt")].to_dict() == {"to_truth": 0, "to_twins": 3}
    # zero-shot ties everyone at 0: alphabetical a > b > c
    assert table.loc[("world_numeric", "zero_shot")].to_dict() == {"to_truth": 0, "to_twins": 3}
    assert table.loc[("all tasks", "soft_prompt")].to_dict() == {"to_truth": 0, "to_twins": 3}
    # the mean over relations (b > c > a) would have given 2: the task's own relation is read
    assert world_setting.truth_of(zoo(), "world_phrase") == {"a": 0.0, "b": 0.6, "c": 0.9}


def test_the_soft_prompt_is_read_at_the_runs_last_snapshot():
    table = world_setting.recovered(zoo(), scores({"a": 0.8, "b": 0.5, "c": 0.2}, last_step=40))
    assert table.set_index(["task", "method"]).loc[("world_numeric", "soft_prompt")].to_dict() == {
        "to_truth": 0,
        "to_twins": 3,
    }


def test_scores_of_another_run_are_not_read():
    assert world_setting.same_run(zoo(), scores({"a": 0.8, "b": 0.5, "c": 0.2}))
    assert not world_setting.same_run(zoo(), scores({"a": 0.8, "b": 0.5, "c": 0.2}, probe_twins=False))
