"""Coverage by simulation of every interval the claims use: stated 95 %, measured on 300 seeded
simulated runs, each a fresh test set drawn from a pool of items with shared difficulty.

Each simulated test set draws `N_ITEMS` items from a pool of `POOL` items; each model answers an
item right with probability sigmoid(ability + easiness + offset), so models' answers correlate
through the items, as real models' do. The truth is the population quantity the interval
states it estimates (the pool's mean difference; for swap distances, the expected distance on a
test set of this size, by Monte Carlo). Measured coverage must lie in [0.92, 0.98]; the one
interval outside that band (a single swap distance) is said so in results/README.md and here.

The last section measures them at the embedded default's shape (default_shape.py reads it from
config/config.yaml: its models, its 60 test questions per task, its 4 tasks asking about the same
countries), in a world of countries whose facts a model knows or not in every task alike: there
only the resampling by country covers (each task resampled on its own: 0.74-0.88). Claim 4's
near-zero share is exact and so conservative (at least 0.93, up to 1.0); a gap the soft prompt all
but closes is overstated at 60 questions (a known limit, measured and said so below).
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
    bootstrap_mean,
    near_zero_share,
    paired_bootstrap,
    percentile_interval,
    shared_items,
    task_resamples,
)
from softeval.analysis.ranking import swap_distances_of_scores
from tests.unit.analysis.default_shape import Countries, default_shape

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
    """Claim 4: share of base units below 0.05, baseline minus soft prompt (truth: the share
    expected on a test set of this size)."""

    def case_for(exact: bool) -> Case:
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
                if not exact:  # the plain percentile bootstrap the claim used before
                    index = task_resamples("t", N_ITEMS, RESAMPLES, run)
                    estimate = statistic(b.mean(axis=1)[None], s.mean(axis=1)[None])[0]
                    draws = statistic(resampled_means(b, index), resampled_means(s, index))
                    return percentile_interval(float(estimate), draws)
                share_b, low_b, high_b = near_zero_share(list(b), 0.05, RESAMPLES, run, ["t"] * 7, "baseline")
                share_s, low_s, high_s = near_zero_share(list(s), 0.05, RESAMPLES, run, ["t"] * 7, "soft")
                return Interval(
                    share_b - share_s,
                    float(np.percentile(low_b - high_s, 2.5)),
                    float(np.percentile(high_b - low_s, 97.5)),
                )

            return float(truth), interval

        return case

    # claim 4's interval: each unit's share from its exact confidence distribution; conservative, as exact
    # intervals are (the plain percentile bootstrap, the claim's before, in the band)
    assert 0.93 <= coverage(case_for(exact=True)) <= 1.0
    assert BAND[0] <= coverage(case_for(exact=False)) <= BAND[1]


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


# ---- at the embedded default's shape: its models, its tasks asking about the same countries ----

SHAPE = default_shape()  # config/config.yaml: 5 models, 4 tasks, 60 test countries each (as of issue 40)


def country_coverage(case: Callable, shared: bool, seed: int = 0) -> float:
    """Coverage over RUNS test sets of the default's shape: each a draw of SHAPE.questions
    countries that every task asks about; `shared`: resampled by country across the tasks
    (`evidence.shared_items`, as a run declares them), else every task by its own examples."""
    rng = np.random.default_rng(seed)
    world = Countries(rng, SHAPE)
    truth, interval_of = case(rng, world)
    hits = 0
    for run in range(RUNS):
        countries = world.draw(rng)
        with shared_items(world.items(countries) if shared else {}):
            iv = interval_of(rng, countries, run)
        hits += iv.low - 1e-12 <= truth <= iv.high + 1e-12
    return hits / RUNS


def units_of(rng: np.random.Generator, chances: dict, countries: np.ndarray, luck: np.ndarray | None = None) -> list:
    """One 0/1 array per unit (task x model), tasks in SHAPE order; `luck` shared between methods."""
    out = []
    for t in SHAPE.tasks:
        u = rng.random((SHAPE.models, len(countries))) if luck is None else luck[t]
        out += list((u < chances[t][:, countries]).astype(float))
    return out


UNIT_TASKS = [t for t in SHAPE.tasks for _ in range(SHAPE.models)]


def country_mean_difference(rng, world):
    """Claims 1, 2 and 5's non-inferiority: soft prompt minus baseline, the gain on the countries a
    model knows (the same countries in every task)."""
    soft = {t: world.chances(t, 1.5, -2.5) for t in SHAPE.tasks}
    base = {t: world.chances(t, 0.0, -2.5) for t in SHAPE.tasks}
    truth = float(np.mean([(soft[t] - base[t]).mean() for t in SHAPE.tasks]))

    def interval(rng, countries, run):
        luck = {t: rng.random((SHAPE.models, len(countries))) for t in SHAPE.tasks}
        pairs = list(zip(units_of(rng, soft, countries, luck), units_of(rng, base, countries, luck), strict=True))
        return paired_bootstrap(pairs, None, RESAMPLES, run, UNIT_TASKS)

    return truth, interval


def test_mean_difference_covers_at_the_default_shape_only_resampled_by_country():
    assert BAND[0] <= country_coverage(country_mean_difference, shared=True) <= BAND[1]  # measured 0.943
    assert country_coverage(country_mean_difference, shared=False) < 0.91  # each task on its own: 0.880


def test_mean_covers_at_the_default_shape_only_resampled_by_country():
    """The tables' and the leaderboard's means over tasks (bootstrap_mean)."""

    def case(rng, world):
        soft = {t: world.chances(t, 1.5, -2.5) for t in SHAPE.tasks}
        truth = float(np.mean([soft[t].mean() for t in SHAPE.tasks]))
        return truth, lambda rng, countries, run: bootstrap_mean(
            units_of(rng, soft, countries), RESAMPLES, run, UNIT_TASKS
        )

    assert BAND[0] <= country_coverage(case, shared=True) <= BAND[1]  # measured 0.943
    assert country_coverage(case, shared=False) < 0.85  # each task on its own: 0.740


def gap_case(levels: tuple) -> Callable:
    """Claim 5: mean |post - base| under the soft prompt minus under a baseline; `levels`: the
    (known, unknown) logits of base and post under the soft prompt, then under the baseline."""

    def case(rng, world):
        chances = [{t: world.chances(t, *level) for t in SHAPE.tasks} for level in levels]
        truth = float(
            np.mean(
                [
                    np.abs(chances[1][t].mean(1) - chances[0][t].mean(1))
                    - np.abs(chances[3][t].mean(1) - chances[2][t].mean(1))
                    for t in SHAPE.tasks
                ]
            )
        )

        def interval(rng, countries, run):
            arrays = [units_of(rng, c, countries) for c in chances]
            return absolute_gap_difference(list(zip(*arrays, strict=True)), RESAMPLES, run, UNIT_TASKS)

        return truth, interval

    return case


def test_gap_difference_covers_at_the_default_shape():
    """Gaps away from 0 (soft prompt 0.2 below the twins, the baseline 0.5)."""
    case = gap_case(((1.5, -2.5), (2.5, -1.5), (-1.0, -2.5), (2.5, -1.5)))
    assert BAND[0] <= country_coverage(case, shared=True) <= BAND[1]  # measured 0.943 (each task alone: 0.873)


def test_a_gap_closed_to_near_zero_is_overstated():
    """A known limit, not a pass: where the soft prompt all but closes the gap (0.03 from the twins),
    |post - base| of 60 questions is mostly noise (about 0.07 per model whatever the true gap), so
    the gap difference is biased upwards and its interval misses: measured 0.587. It errs against
    claim 5 ("holds" needs the difference below 0), not for it; a closed gap reads as a small one."""
    case = gap_case(((1.5, -2.5), (1.8, -2.3), (-1.0, -2.5), (2.5, -1.5)))
    assert country_coverage(case, shared=True) < 0.8


def test_swap_distance_difference_covers_at_the_default_shape():
    """Claim 3 summed over the tasks (the rankings are per task; the countries shared)."""

    def case(rng, world):
        levels = {"soft": (0.5, -2.0), "base": (-2.0, -2.6), "post": (1.0, -1.5)}
        chances = {(k, t): world.chances(t, *v) for k, v in levels.items() for t in SHAPE.tasks}

        def statistic(means):
            return sum(
                swap_distances_of_scores(means[("soft", t)], means[("post", t)])
                - swap_distances_of_scores(means[("base", t)], means[("post", t)])
                for t in SHAPE.tasks
            )

        def tables(rng, countries):
            return {
                k: (rng.random((SHAPE.models, len(countries))) < c[:, countries]).astype(float)
                for k, c in chances.items()
            }

        truth = np.mean(
            [
                statistic({k: v.mean(axis=1)[None] for k, v in tables(rng, world.draw(rng)).items()})[0]
                for _ in range(1000)
            ]
        )

        def interval(rng, countries, run):
            table = tables(rng, countries)
            estimate = statistic({k: v.mean(axis=1)[None] for k, v in table.items()})[0]
            draws = statistic(
                {
                    (k, t): resampled_means(v, task_resamples(t, len(countries), RESAMPLES, run))
                    for (k, t), v in table.items()
                }
            )
            return bias_shifted_interval(float(estimate), draws)

        return float(truth), interval

    assert BAND[0] <= country_coverage(case, shared=True) <= BAND[1]  # measured 0.937


def test_near_zero_share_difference_covers_at_the_default_shape():
    """Claim 4: share of base units below 0.05, baseline minus soft prompt, each unit's share drawn
    from its exact binomial confidence distribution (evidence.near_zero_share). The truth: the share
    expected on a test set of this size. Exact intervals are conservative: measured 0.94 and 0.98
    (the plain percentile bootstrap: 0.915 and 0.935, and width 0 for a unit at 0 of 60). Whether a
    unit's *true* score is below 0.05 no interval of 60 questions can tell where it is near 0.05."""

    def case(levels):
        def make(rng, world):
            base = {t: world.chances(t, *levels) for t in SHAPE.tasks}
            soft = {t: world.chances(t, 1.5, -2.5) for t in SHAPE.tasks}

            def share_difference(rng, countries):
                b, s = units_of(rng, base, countries), units_of(rng, soft, countries)
                return np.mean([u.mean() < 0.05 for u in b]) - np.mean([u.mean() < 0.05 for u in s])

            truth = np.mean([share_difference(rng, world.draw(rng)) for _ in range(2000)])

            def interval(rng, countries, run):
                b, s = units_of(rng, base, countries), units_of(rng, soft, countries)
                share_b, low_b, high_b = near_zero_share(b, 0.05, RESAMPLES, run, UNIT_TASKS, "baseline")
                share_s, low_s, high_s = near_zero_share(s, 0.05, RESAMPLES, run, UNIT_TASKS, "soft")
                return Interval(
                    share_b - share_s,
                    float(np.percentile(low_b - high_s, 2.5)),
                    float(np.percentile(high_b - low_s, 97.5)),
                )

            return float(truth), interval

        return make

    for levels in ((-2.5, -4.0), (-2.0, -3.5)):
        assert 0.93 <= country_coverage(case(levels), shared=True) <= 1.0
