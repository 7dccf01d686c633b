"""The resampling behind every interval: one index matrix per task (drawn by country where tasks
share countries), Holm, unit checks' flatness, and averages that stay undefined where a task's value is."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from softeval.analysis.evidence import (
    Interval,
    Paired,
    absolute_gap_difference,
    bias_shifted_interval,
    declared_items,
    equivalent,
    exact_upper,
    holm,
    holm_outcomes,
    items_of,
    paired_bootstrap,
    percentile_interval,
    shared_items,
    task_resamples,
)
from softeval.analysis.tables import swap_distance_table
from softeval.analysis.unit_checks import summary_line, unit_checks
from softeval.settings import AnalysisSettings


def test_units_of_one_task_share_their_resamples():
    """The issue's counter-example: seven identical units (seven models answering alike) are one
    unit's evidence, not seven independent ones: the interval is one model's, not narrower."""
    rng = np.random.default_rng(3)
    first = (rng.random(100) < 0.55).astype(float)
    second = (rng.random(100) < 0.50).astype(float)
    one = paired_bootstrap([(first, second)], None, 1000, 0, ["t"])
    seven = paired_bootstrap([(first, second)] * 7, None, 1000, 0, ["t"] * 7)
    assert (seven.low, seven.high) == pytest.approx((one.low, one.high))
    assert one.high - one.low > 0.1
    apart = paired_bootstrap([(first, second)] * 7, None, 1000, 0)  # as if every unit were its own task
    assert apart.high - apart.low < 0.6 * (one.high - one.low)  # what the old code claimed: far too narrow


def test_each_task_has_its_own_resamples_and_keeps_them():
    a, b = task_resamples("gsm8k", 50, 20, 0), task_resamples("triviaqa", 50, 20, 0)
    assert a.shape == (20, 50) and not np.array_equal(a, b)  # equal sizes, different draws
    assert np.array_equal(a, task_resamples("gsm8k", 50, 20, 0))  # the same in every table and claim
    assert not np.array_equal(a, task_resamples("gsm8k", 50, 20, 1))
    assert not a.flags.writeable
    with pytest.raises(ValueError, match="different numbers of test examples"):
        paired_bootstrap([(np.ones(5), np.ones(5)), (np.ones(6), np.ones(6))], None, 10, 0, ["t", "t"])
    with pytest.raises(ValueError, match="2 task names for 1 units"):
        paired_bootstrap([(np.ones(5), np.ones(5))], None, 10, 0, ["t", "u"])


def test_gap_difference_shares_the_task_index():
    rng = np.random.default_rng(1)
    quad = tuple((rng.random(80) < p).astype(float) for p in (0.3, 0.6, 0.2, 0.7))
    one = absolute_gap_difference([quad], 500, 0, ["t"])
    three = absolute_gap_difference([quad] * 3, 500, 0, ["t"] * 3)
    assert (three.estimate, three.low, three.high) == pytest.approx((one.estimate, one.low, one.high))


def test_holm_by_hand():
    assert holm([0.01, 0.04, 0.03, 0.005]) == [True, False, False, True]  # 0.03 > 0.05 / 2 stops it
    assert holm([0.012, 0.013]) == [True, True]  # 0.012 <= 0.025, 0.013 <= 0.05
    assert holm([0.02, 0.03, 0.04]) == [False, False, False]  # 0.02 > 0.05 / 3
    assert holm([]) == []
    tests = [Paired(20, 0), Paired(0, 9), Paired(6, 0), Paired(5, 0)]  # p = 2e-6, 0.0039, 0.031, 0.0625
    # 0.031 is significant alone, not as the third of four (0.05 / 2 = 0.025)
    assert holm_outcomes(tests) == ["first better", "second better", "within noise", "within noise"]


def test_equivalence_and_the_shifted_interval():
    assert equivalent(Interval(0.0, -0.05, 0.05), 0.05) and not equivalent(Interval(0.0, -0.06, 0.02), 0.05)
    draws = np.array([2.0, 3.0, 3.0, 4.0, 5.0])  # mean 3.4 against an estimate of 2: shifted down by 1.4
    iv = bias_shifted_interval(2.0, draws)
    assert iv.low == pytest.approx(np.percentile(draws, 2.5) - 1.4)
    assert iv.high == pytest.approx(np.percentile(draws, 97.5) - 1.4)


SETTINGS = AnalysisSettings(closed_tasks=(), steps=(0, 4), bootstrap=400, seed=0)


def test_a_large_change_that_is_not_significant_is_not_flat():
    """The issue's counter-example: knowledge +0.133 with McNemar p = 0.077 read as 'flat'."""

    def read(model, task, method, step):
        known = [1] * 10 + [0] * 20 if step == 0 else [1] * 14 + [0] * 16  # +4 of 30: +0.133
        return [
            {"id": i, "strict": 1, "format": 1, "knowledge": k, "knowledge_from": "loglik"} for i, k in enumerate(known)
        ]

    table = unit_checks(["m"], ["t"], [], read, SETTINGS)
    row = table.iloc[0]
    assert row["knowledge_change"] == pytest.approx(4 / 30) and row["p_knowledge_change"] == pytest.approx(0.125)
    assert row["knowledge_flat_ok"] is False or not bool(row["knowledge_flat_ok"])
    assert row["knowledge_change_high"] > 0.05
    assert "90% interval of the change within ±0.05" in summary_line(table, "strict")

    def steady(model, task, method, step):
        return [
            {"id": i, "strict": 1, "format": 1, "knowledge": int(i % 2 == 0), "knowledge_from": "loglik"}
            for i in range(400)
        ]

    assert bool(unit_checks(["m"], ["t"], [], steady, SETTINGS).iloc[0]["knowledge_flat_ok"])


def test_the_caption_counts_holm_survivors():
    def read(model, task, method, step):
        strict = [0] * 12 + [1] * 18 if method == "soft_prompt" else [1] * 30  # baseline right on 12 more: p < 0.001
        if model == "n":
            strict = [1] * 24 + [0] * 6 if method == "soft_prompt" else [1] * 30  # 6 more: p = 0.031
        return [{"id": i, "strict": s, "format": 1, "knowledge": 1} for i, s in enumerate(strict)]

    table = unit_checks(["m", "n"], ["t"], ["zero_shot"], read, SETTINGS)
    assert list(table["vs_zero_shot"]) == ["baseline better", "baseline better"]
    line = summary_line(table, "strict")
    assert "descriptive: uncorrected" in line and "2 with the baseline significantly better, 2 of them" in line


def test_tau_average_is_undefined_where_a_task_is():
    """A constant table has no order: its tau is nan, and so is the average over tasks (not the
    other tasks' 1.000)."""
    rows, arrays = [], {}
    for task, scores in (("t1", {"a": 0.5, "b": 0.5, "c": 0.5}), ("t2", {"a": 0.9, "b": 0.5, "c": 0.1})):
        for model, score in scores.items():
            for role, method in (("base", "zero_shot"), ("post", "zero_shot")):
                values = np.array([1.0] * int(score * 10) + [0.0] * (10 - int(score * 10)))
                arrays[(role, task, method, model)] = values
                rows.append(
                    {"model": model, "role": role, "task": task, "method": method, "step": None, "strict": score}
                )
    summary = pd.DataFrame(rows)

    def per_example(role, task, method, step):
        return {m: arrays[(role, task, method, m)] for m in "abc"}

    table = swap_distance_table(
        summary, per_example, AnalysisSettings(closed_tasks=(), steps=(0, 4), bootstrap=50, seed=0)
    )
    by_task = table.set_index("task")
    assert math.isnan(by_task.loc["t1", "kendall_tau_b"]) and by_task.loc["t2", "kendall_tau_b"] == pytest.approx(1.0)
    assert math.isnan(by_task.loc["all tasks", "kendall_tau_b"])


# ---- resampling by item: one draw of countries shared by every task asking about them ------------


def test_tasks_asking_about_the_same_countries_draw_the_same_countries():
    countries = [f"c{i}" for i in range(60)]
    reordered = countries[::-1]  # another task may ask in another order: the same countries are drawn
    with shared_items({"numeric": countries, "phrase": countries, "choice": reordered}):
        numeric, phrase, choice = (task_resamples(t, 60, 50, 0) for t in ("numeric", "phrase", "choice"))
        assert np.array_equal(numeric, phrase)
        names = np.array(countries)
        assert all(
            sorted(names[numeric[r]]) == sorted(np.array(reordered)[choice[r]]) for r in range(50)
        )  # row by row, the same multiset of countries
        assert not np.array_equal(numeric, task_resamples("gsm8k", 60, 50, 0))  # undeclared: its own draw
    assert declared_items() == {}  # the block's declarations are gone after it


def test_a_task_of_its_own_items_is_resampled_as_before():
    """Declared items that no other task asks about (a real benchmark: each example its own item)
    give the same index as no declaration: today's per-task draw, byte for byte."""
    plain = task_resamples("gsm8k", 40, 30, 3).copy()
    with shared_items({"gsm8k": items_of([{"id": f"g{i}"} for i in range(40)])}):
        assert np.array_equal(task_resamples("gsm8k", 40, 30, 3), plain)


def test_partly_shared_and_repeated_items():
    """A task asking about some of the countries takes the drawn ones it asks about (topped up from
    its own seed); a task asking twice about each country takes both questions of a drawn one."""
    countries = [f"c{i}" for i in range(60)]
    with shared_items({"all": countries, "half": countries[:30], "twice": countries[:30] * 2}):
        half, twice = task_resamples("half", 30, 40, 0), task_resamples("twice", 60, 40, 0)
        assert half.shape == (40, 30) and half.max() < 30
        drawn = task_resamples("all", 60, 40, 0)
        for r in range(40):
            first_half = [i for i in drawn[r] if i < 30][:30]  # the shared draws that half asks about
            assert list(half[r][: len(first_half)]) == first_half
            assert all(twice[r][k] % 30 == twice[r][k + 1] % 30 for k in range(0, 60, 2))  # a country's pair
    with (
        shared_items({"bad": countries}),
        pytest.raises(ValueError, match="task bad: 60 items declared for 59 test examples"),
    ):
        task_resamples("bad", 59, 10, 0)


def test_items_are_the_entity_else_the_example():
    assert items_of([{"id": "n-1", "entity": "Zorbia"}, {"id": "x-7"}]) == ["Zorbia", "id:x-7"]


def test_shared_countries_move_the_tasks_together():
    """Two tasks whose per-country differences agree (a model gains on the countries it knows, in
    every task): resampled by country, the mean over both tasks is as uncertain as one task's;
    each task on its own, the interval is narrower by about 1/sqrt(2), which is what the coverage
    at the default's shape measures (0.88 against 0.94)."""
    rng = np.random.default_rng(2)
    gain = (rng.random(60) < 0.5).astype(float)
    pairs = [(gain, np.zeros(60)), (gain, np.zeros(60))]
    apart = paired_bootstrap(pairs, None, 2000, 0, ["t1", "t2"])
    with shared_items({"t1": [f"c{i}" for i in range(60)], "t2": [f"c{i}" for i in range(60)]}):
        together = paired_bootstrap(pairs, None, 2000, 0, ["t1", "t2"])
    one = paired_bootstrap(pairs[:1], None, 2000, 0, ["t1"])
    assert together.high - together.low == pytest.approx(one.high - one.low, rel=0.1)
    assert apart.high - apart.low < 0.8 * (together.high - together.low)


def test_an_interval_keeps_its_draws_for_other_levels():
    draws = np.arange(1000, dtype=float)
    iv = percentile_interval(500.0, draws)
    assert iv.bounds(0.95) == pytest.approx((iv.low, iv.high))
    assert iv.bounds(0.90) == pytest.approx((np.percentile(draws, 5), np.percentile(draws, 95)))
    bare = Interval(0.0, -0.04, 0.06)
    assert bare.bounds(0.90) == (-0.04, 0.06) and not equivalent(bare, 0.05)  # no draws: 95%, conservative
    with pytest.raises(ValueError, match="no 99% bounds"):
        bare.bounds(0.99)
    assert exact_upper(0, 60) == pytest.approx(0.0596, abs=1e-4) and exact_upper(60, 60) == 1.0
