"""The resampling behind every interval: one index matrix per task, Holm, unit checks' flatness,
and averages that stay undefined where a task's value is."""

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
    equivalent,
    holm,
    holm_outcomes,
    paired_bootstrap,
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


SETTINGS = AnalysisSettings(steps=(0, 4), bootstrap=400, seed=0)


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
    assert "95% interval of the change within ±0.05" in summary_line(table, "strict")

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

    table = swap_distance_table(summary, per_example, AnalysisSettings(steps=(0, 4), bootstrap=50, seed=0))
    by_task = table.set_index("task")
    assert math.isnan(by_task.loc["t1", "kendall_tau_b"]) and by_task.loc["t2", "kendall_tau_b"] == pytest.approx(1.0)
    assert math.isnan(by_task.loc["all tasks", "kendall_tau_b"])
