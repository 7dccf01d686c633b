"""Coverage by simulation of every interval the claims use: stated 95 %, measured on 300 seeded
simulated runs, each a fresh test set drawn from a pool of items with shared difficulty.

Each simulated test set draws `N_ITEMS` items from a pool of `POOL` items; each model answers an
item right with probability sigmoid(ability + easiness + offset), so models' answers correlate
through the items, as real models' do. The truth is the population quantity the interval
states it estimates (the pool's mean difference; for swap distances, the expected distance on a
test set of this size, by Monte Carlo). Measured coverage must lie in [0.92, 0.98]; the one
interval outside that band (a single swap distance) is said so in results/README.md and here.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np
import pytest

from softeval.analysis.claims import FormatCurve, random_tie_break_savings
from softeval.analysis.evidence import (
    Interval,
    absolute_gap_difference,
    bias_shifted_interval,
    paired_bootstrap,
    percentile_interval,
    task_resamples,
)
from softeval.analysis.ranking import swap_distances_of_scores

POOL, N_ITEMS, RUNS, RESAMPLES = 20_000, 200, 300, 400
BAND = (0.92, 0.98)
Case = Callable[
    [np.random.Generator, np.ndarray], tuple[float, Callable[[np.random.Generator, np.ndarray, int], Interval]]
]


def chances(abilities: np.ndarray, offset: float, easiness: np.ndarray) -> np.ndarray:
    """models x pool: probability of a right answer."""
    return 1 / (1 + np.exp(-(abilities[:, None] + easiness[None, :] + offset)))


def answers(rng: np.random.Generator, p: np.ndarray, items: np.ndarray, alike: bool = False) -> np.ndarray:
    """models x items of 0/1; `alike`: the models share their luck item by item (answer alike)."""
    u = rng.random(len(items)) if alike else rng.random((p.shape[0], len(items)))
    return (u < p[:, items]).astype(float)


def coverage(case: Case, seed: int = 0) -> float:
    rng = np.random.default_rng(seed)
    truth, interval_of = case(rng, rng.normal(0, 1.5, POOL))
    hits = 0
    for run in range(RUNS):
        iv = interval_of(rng, rng.integers(0, POOL, N_ITEMS), run)
        hits += iv.low - 1e-12 <= truth <= iv.high + 1e-12
    return hits / RUNS


def resampled_means(table: np.ndarray, index: np.ndarray) -> np.ndarray:
    """resamples x models: each model's mean over each resample of the items."""
    return np.stack([row[index].mean(axis=1) for row in table], axis=1)


def mean_difference(shared: bool) -> Case:
    """Claims 1 and 2: seven models, soft prompt vs baseline, answering alike."""

    def case(rng, easiness):
        abilities = np.linspace(-0.2, 0.2, 7)
        first, second = chances(abilities, 0.3, easiness), chances(abilities, 0.0, easiness)

        def interval(rng, items, run):
            a, b = answers(rng, first, items, alike=True), answers(rng, second, items, alike=True)
            return paired_bootstrap(list(zip(a, b, strict=True)), None, RESAMPLES, run, ["t"] * 7 if shared else None)

        return float((first - second).mean()), interval

    return case


def test_mean_difference_covers_and_per_unit_resampling_did_not():
    assert BAND[0] <= coverage(mean_difference(shared=True)) <= BAND[1]  # measured 0.943
    assert coverage(mean_difference(shared=False)) < 0.7  # the old per-unit resampling: measured 0.52


def test_format_level_covers():
    """Claim 1: mean final format minus 0.9."""

    def case(rng, easiness):
        p = chances(np.linspace(1.5, 2.5, 4), 1.0, easiness)

        def interval(rng, items, run):
            pairs = [(row, np.full_like(row, 0.9)) for row in answers(rng, p, items)]
            return paired_bootstrap(pairs, None, RESAMPLES, run, ["t"] * 4)

        return float(p.mean() - 0.9), interval

    assert BAND[0] <= coverage(case) <= BAND[1]


def test_gap_difference_covers():
    """Claim 5: mean |post - base| under the soft prompt minus under a baseline (gaps away from 0)."""

    def case(rng, easiness):
        abilities = np.linspace(-0.5, 0.5, 4)
        ps = [chances(abilities, offset, easiness) for offset in (0.0, 0.4, -1.0, 0.9)]
        means = [p.mean(axis=1) for p in ps]
        truth = float(np.mean(np.abs(means[1] - means[0]) - np.abs(means[3] - means[2])))

        def interval(rng, items, run):
            arrays = [answers(rng, p, items) for p in ps]
            return absolute_gap_difference(list(zip(*arrays, strict=True)), RESAMPLES, run, ["t"] * 4)

        return truth, interval

    assert BAND[0] <= coverage(case) <= BAND[1]


def swap_case(soft_spacing: float, baseline_spacing: float, baseline_offset: float, single: bool = False) -> Case:
    """Claim 3: seven models; swap distance of the soft prompt's base ranking to the post-trained
    one minus the baseline's (or, `single`, the soft prompt's alone), both rankings resampled."""

    def case(rng, easiness):
        ranks = np.arange(7)[::-1]
        ps = [
            chances(ranks * soft_spacing, 0.0, easiness),
            chances(ranks * baseline_spacing, baseline_offset, easiness),
            chances(ranks * 0.3, 1.0, easiness),
        ]

        def statistic(soft, baseline, post):
            return swap_distances_of_scores(soft, post) - (0 if single else swap_distances_of_scores(baseline, post))

        truth = np.mean(
            [
                statistic(*[answers(rng, p, items).mean(axis=1)[None] for p in ps])[0]
                for items in rng.integers(0, POOL, (2000, N_ITEMS))
            ]
        )

        def interval(rng, items, run):
            tables = [answers(rng, p, items) for p in ps]
            index = task_resamples("t", N_ITEMS, RESAMPLES, run)
            estimate = statistic(*[t.mean(axis=1)[None] for t in tables])[0]
            return bias_shifted_interval(float(estimate), statistic(*[resampled_means(t, index) for t in tables]))

        return float(truth), interval

    return case


@pytest.mark.parametrize(
    ("soft", "baseline", "offset"),
    [(0.3, 0.1, -2.0), (0.1, 0.1, 0.0)],
    ids=["baseline-compressed", "methods-alike"],
)
def test_swap_distance_difference_covers(soft, baseline, offset):
    assert BAND[0] <= coverage(swap_case(soft, baseline, offset)) <= BAND[1]  # measured 0.963, 0.960


def test_a_single_swap_distance_interval_is_only_approximate():
    """The swap table's interval of one method's distance (no verdict uses it): a distance
    cannot fall below 0 and takes few values, and no bootstrap interval we tried (percentile,
    shifted, normal) stays in the band in every regime. Measured: 0.99 for well-separated
    models, 0.91 for close ones; documented as approximate in results/README.md."""
    separated = coverage(swap_case(0.3, 0.1, -2.0, single=True))
    close = coverage(swap_case(0.05, 0.1, -2.0, single=True))
    assert 0.97 <= separated <= 1.0 and 0.85 <= close <= 0.95


def test_near_zero_share_difference_covers():
    """Claim 4: share of base units below 0.05, baseline minus soft prompt."""

    def case(rng, easiness):
        abilities = np.linspace(-0.5, 0.5, 7)
        baseline, soft = chances(abilities, -3.0, easiness), chances(abilities, 0.0, easiness)

        def statistic(b, s):
            return (b < 0.05).mean(axis=1) - (s < 0.05).mean(axis=1)

        truth = np.mean(
            [
                statistic(
                    answers(rng, baseline, items).mean(axis=1)[None], answers(rng, soft, items).mean(axis=1)[None]
                )[0]
                for items in rng.integers(0, POOL, (2000, N_ITEMS))
            ]
        )

        def interval(rng, items, run):
            b, s = answers(rng, baseline, items), answers(rng, soft, items)
            index = task_resamples("t", N_ITEMS, RESAMPLES, run)
            estimate = statistic(b.mean(axis=1)[None], s.mean(axis=1)[None])[0]
            return percentile_interval(float(estimate), statistic(resampled_means(b, index), resampled_means(s, index)))

        return float(truth), interval

    assert BAND[0] <= coverage(case) <= BAND[1]


@pytest.mark.parametrize(
    ("closed", "open_"),
    [((0, 1, 2.5, 3.5, 4), (0, 0.5, 1, 2, 3.5)), ((0, 1, 2, 2.2, 2.3), (0, 1, 2, 2.2, 2.3))],
    ids=["closed-first", "alike"],
)
def test_saturation_shortfall_difference_covers(closed, open_):
    """Claim 1's order: open minus closed shortfall below 0.9 over five snapshots."""
    steps = [0, 10, 20, 40, 80]

    def case(rng, easiness):
        abilities = np.linspace(-0.3, 0.3, 5)
        curves = {
            kind: [chances(abilities, o, easiness) for o in offsets] for kind, offsets in (("c", closed), ("o", open_))
        }

        def shortfall(levels: np.ndarray) -> np.ndarray:
            return FormatCurve(steps, levels, levels).shortfall(levels)

        truth = (
            shortfall(np.array([[p.mean()] for p in curves["o"]]))[0]
            - shortfall(np.array([[p.mean()] for p in curves["c"]]))[0]
        )

        def interval(rng, items, run):
            other = rng.integers(0, POOL, N_ITEMS)  # closed and open tasks: different items
            draws, level = {}, {}
            for kind, its in (("c", items), ("o", other)):
                index = task_resamples(kind, N_ITEMS, RESAMPLES, run)
                tables = [answers(rng, p, its) for p in curves[kind]]
                level[kind] = np.array([[t.mean()] for t in tables])
                draws[kind] = np.stack([resampled_means(t, index).mean(axis=1) for t in tables])
            estimate = shortfall(level["o"])[0] - shortfall(level["c"])[0]
            return percentile_interval(float(estimate), shortfall(draws["o"]) - shortfall(draws["c"]))

        return float(truth), interval

    assert BAND[0] <= coverage(case) <= BAND[1]  # measured 0.953, 0.937


def test_random_tie_breaks_are_uniform():
    """Claim 4's range is a randomisation of this run's scores, not a sampling interval: its draws
    must be the inversions of a uniformly random order of the tied models (3 tied against a strict
    reference: 0, 1, 2, 3 swaps with 1/6, 2/6, 2/6, 1/6) and their mean the exact expectation;
    untied models keep their order."""
    from tests.unit.analysis.test_claims import SETTINGS, _rank_world

    world = _rank_world({"a": 45, "b": 30, "c": 15}, {"a": 0, "b": 0, "c": 0}, {"a": 50, "b": 35, "c": 20}, ("t",))
    inputs = world.inputs()
    inputs.settings = dataclasses.replace(SETTINGS, bootstrap=30_000)
    alphabetical, expected, savings = random_tie_break_savings(inputs, "zero_shot")
    assert alphabetical == 0 and expected == 1.5
    assert np.bincount(savings.astype(int), minlength=4) / len(savings) == pytest.approx(
        [1 / 6, 2 / 6, 2 / 6, 1 / 6], abs=0.01
    )
    assert savings.mean() == pytest.approx(expected, abs=0.02)
    alphabetical, expected, savings = random_tie_break_savings(inputs, "soft_prompt")  # 45 > 30 > 15: no ties
    assert (alphabetical, expected) == (0, 0.0) and not savings.any()
