"""Claims 3 and 5's guards (claims.guards): the twins as paired against twins reassigned at
random (an exact permutation test), and the tuned prompt against the prompt before tuning. The
counter-examples are the calibration's own controls, where both claims held with nothing behind
them; the permutation test's size is simulated at the default's shape and its power stated."""

from __future__ import annotations

import itertools
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from softeval.analysis.calibration import calibrate
from softeval.analysis.claims import HOLDS, NOT_APPLICABLE, NOT_SHOWN, check_claims, claim_verdicts
from softeval.analysis.evidence.reassignment import (
    gap_reassigned,
    reassignments,
    smallest_p,
    swap_distance_reassigned,
)
from softeval.analysis.ranking import rank_by_score, swap_distance
from tests.unit.analysis.default_shape import default_shape
from tests.unit.analysis.test_calibration import expectations, ranked_world, rows_of
from tests.unit.analysis.test_claims import UNITS, World, hits, verdict

OWN = "own twins, not twins reassigned at random"
BEFORE = "vs the prompt before tuning"
FIVE = ("a", "b", "c", "d", "e")


@settings(max_examples=60, deadline=None)
@given(st.integers(2, 6), st.integers(1, 3), st.integers(0, 10_000))
def test_the_expectation_is_the_mean_over_every_reassignment(n, tasks, seed):
    rng = np.random.default_rng(seed)
    base, post = rng.integers(0, 4, (tasks, n)) / 4, rng.integers(0, 4, (tasks, n)) / 4  # ties likely
    ranks = swap_distance_reassigned(base, post, 0)
    gaps = gap_reassigned(base, post, 0)
    assert len(ranks.null) == len(set(map(tuple, reassignments(n, 0)))) == np.prod(range(1, n + 1))
    assert ranks.expected == pytest.approx(ranks.null.mean()) and gaps.expected == pytest.approx(gaps.null.mean())
    # the observed pairing is the swap table's distance (alphabetical tie-breaks) and the table's gap
    names = [f"m{i}" for i in range(n)]
    table = sum(
        swap_distance(rank_by_score(dict(zip(names, b, strict=True))), rank_by_score(dict(zip(names, p, strict=True))))
        for b, p in zip(base, post, strict=True)
    )
    assert ranks.observed == table and gaps.observed == pytest.approx(np.abs(post - base).mean())


def test_a_pairing_that_carries_nothing_is_shown_at_most_at_its_level():
    """Twins and base scores drawn independently (the pairing carries nothing), at the default's
    shape (its models and tasks; config/config.yaml): the guard is shown in at most 2.5% of runs
    (5 models, 120 reassignments, shown when at most 2 do as well: 1.7% without ties; of these
    1,000 runs the ranking guard was shown in 0.5%, the gap guard in 2.1%)."""
    shape = default_shape()
    rng = np.random.default_rng(0)
    runs, shown = 1000, {"ranks": 0, "gaps": 0}
    for run in range(runs):
        base, post = rng.random((len(shape.tasks), shape.models)), rng.random((len(shape.tasks), shape.models))
        shown["ranks"] += swap_distance_reassigned(base, post, run).shown
        shown["gaps"] += gap_reassigned(base, post, run).shown
    assert all(count / runs <= 0.025 for count in shown.values()), shown


def _k_swaps_away(n: int, k: int, tasks: int) -> float:
    """The guard's p when every task's post-trained ranking is the same and the soft-prompted base
    ranking is k adjacent swaps from it on every task."""
    post = np.tile(np.arange(n, 0, -1, dtype=float), (tasks, 1))
    order = [k, *(i for i in range(n) if i != k)]  # the k-th model moved to the top: k swaps
    base = np.tile(np.arange(n, 0, -1, dtype=float)[order], (tasks, 1))
    found = swap_distance_reassigned(base, post, 0)
    assert found.observed == k * tasks
    return found.p_value


def test_the_guards_power_at_the_defaults_shape_and_at_seven_models():
    """What the ranking guard can detect (docs/method.md): with one twin ranking on every task,
    the reassignments that do as well as k swaps a task are the permutations within k swaps
    (Mahonian numbers). 5 models x 4 tasks hold only at 0 swaps (1 swap a task: 5 of 120 do as
    well); 7 models up to 3 swaps a task of 21 (76 of 5,040; 4 swaps: 174)."""
    assert _k_swaps_away(5, 0, 4) == pytest.approx(1 / 120)
    assert _k_swaps_away(5, 1, 4) == pytest.approx(5 / 120)
    assert _k_swaps_away(7, 3, 4) == pytest.approx(76 / 5040)
    assert _k_swaps_away(7, 4, 4) == pytest.approx(174 / 5040)
    assert smallest_p(4) > 0.025 > smallest_p(5)


def test_more_than_eight_models_sample_the_reassignments_with_the_pairing_first():
    perms = reassignments(9, seed=3)
    assert perms.shape == (10_000, 9) and (perms[0] == np.arange(9)).all()
    assert (np.sort(perms, axis=1) == np.arange(9)).all() and (perms == reassignments(9, seed=3)).all()
    base = np.tile(np.arange(9, 0, -1, dtype=float), (2, 1))
    found = swap_distance_reassigned(base, base.copy(), 0)
    assert not found.exact and found.shown and found.p_value == pytest.approx(1 / 10_000)
    assert set(itertools.chain.from_iterable(perms[:50].tolist())) == set(range(9))


def gap_world() -> World:
    """Five twins apart (50 down to 10 of 60) under every method; base models at 5 zero- and
    few-shot and before tuning."""
    world = World(models=FIVE)
    for model, k in zip(FIVE, (50, 40, 30, 20, 10), strict=True):
        for method, step in UNITS:
            world.set("post", model, "open1", method, step, strict=hits(k))
            world.set("base", model, "open1", method, step, strict=hits(5))
    return world


def test_claim_5_does_not_hold_when_the_prompt_brings_every_score_together():
    """The calibration's finding: a soft prompt that lifts every base model to the same middling
    score closes the gap whoever is paired with whom. The gap's comparisons hold; the pairing
    guard does not, so neither does the claim (before the guard, it held)."""
    world = gap_world()
    for model in FIVE:
        world.set("base", model, "open1", "soft_prompt", 8, strict=hits(30))
    parts = check_claims(world.inputs())
    assert verdict(parts, 5, "vs zero-shot") == verdict(parts, 5, "vs few-shot") == HOLDS
    assert verdict(parts, 5, BEFORE) == HOLDS
    row = parts[(parts["claim"] == 5) & (parts["part"] == OWN)].iloc[0]
    # every reassignment gives the same gap: 120 of 120 do as well
    assert row["verdict"] == NOT_SHOWN and "120 of all 120 reassignments" in row["evidence"]
    assert row["estimate"] == pytest.approx(0.0)
    assert claim_verdicts(parts)[5] == NOT_SHOWN


def test_claim_5_holds_when_each_base_model_nears_its_own_twin():
    world = gap_world()
    for model, k in zip(FIVE, (50, 40, 30, 20, 10), strict=True):
        world.set("base", model, "open1", "soft_prompt", 8, strict=hits(k - 3))
    parts = check_claims(world.inputs())
    row = parts[(parts["claim"] == 5) & (parts["part"] == OWN)].iloc[0]
    # own gap 3/60; a random twin: mean over the 25 (model, twin) pairs of |twin - (model - 3)|
    expected = np.mean([abs(t - (m - 3)) for m in (50, 40, 30, 20, 10) for t in (50, 40, 30, 20, 10)]) / 60
    assert row["estimate"] == pytest.approx(3 / 60 - expected) and row["verdict"] == HOLDS
    assert "1 of all 120 reassignments" in row["evidence"]
    assert claim_verdicts(parts)[5] == HOLDS


def rank_world(untuned_like_tuned: bool) -> World:
    """Five twins ranked a > ... > e; zero- and few-shot rank the base models at random-like
    order (4 swaps a task of 10), the tuned prompt as the twins, the prompt before tuning as the
    tuned one or reversed."""
    world = ranked_world(tasks=("open1", "open2"))
    shuffled = dict(zip(FIVE, (30, 50, 10, 40, 20), strict=True))
    for task in world.tasks:
        for model, k in zip(FIVE, (50, 40, 30, 20, 10), strict=True):
            for method in ("zero_shot", "few_shot"):
                world.set("base", model, task, method, None, strict=hits(shuffled[model]))
            world.set("base", model, task, "soft_prompt", 8, strict=hits(k - 2))
            world.set("base", model, task, "soft_prompt", 0, strict=hits(k - 2 if untuned_like_tuned else 60 - k))
    return world


def test_claim_3_needs_the_tuning_not_the_prompts_initialisation():
    """Where zero-shot is no better than a random ranking, the prompt before tuning beats it too
    (the calibration's untuned_prompt control held): the tuning guard stops that."""
    tuned = check_claims(rank_world(untuned_like_tuned=False).inputs())
    assert verdict(tuned, 3, "vs zero-shot") == verdict(tuned, 3, BEFORE) == verdict(tuned, 3, OWN) == HOLDS
    assert claim_verdicts(tuned)[3] == HOLDS
    untuned = check_claims(rank_world(untuned_like_tuned=True).inputs())
    assert verdict(untuned, 3, "vs zero-shot") == HOLDS  # the comparison alone would hold
    row = untuned[(untuned["claim"] == 3) & (untuned["part"] == BEFORE)].iloc[0]
    assert row["verdict"] == NOT_SHOWN and row["estimate"] == 0
    assert claim_verdicts(untuned)[3] == NOT_SHOWN


def test_the_calibration_controls_now_fail_claims_3_and_5():
    """On a run where both claims hold, the controls that undo the tuning or the pairing fail
    both, and the controls that recover the twins keep them."""
    world = rank_world(untuned_like_tuned=False)
    for task in world.tasks:
        for model, k in zip(FIVE, (50, 40, 30, 20, 10), strict=True):
            for role, score in (("post", k), ("base", k - 2)):
                world.set(role, model, task, "soft_prompt", 8, strict=hits(score))
            world.set("post", model, task, "soft_prompt", 0, strict=hits(k))
    verdicts = claim_verdicts(check_claims(world.inputs()))
    assert verdicts[3] == verdicts[5] == HOLDS
    found = expectations(calibrate(world.inputs(), rows_of(world)))
    for control, claim in [("untuned_prompt", 3), ("untuned_prompt", 5), ("shuffled_twins", 3), ("shuffled_twins", 5)]:
        assert found[(control, claim)] == "yes", (control, claim)
    assert found[("twin_ranking", 3)] == found[("twin_scores", 5)] == "yes"


def test_one_snapshot_leaves_the_tuning_guard_not_applicable():
    world = rank_world(untuned_like_tuned=False)
    for key in [k for k in world.arrays if k[3] == "soft_prompt" and k[4] == 0]:
        del world.arrays[key]
    inputs = world.inputs()
    inputs.settings = replace(inputs.settings, steps=(8,))
    parts = check_claims(inputs)
    for claim in (3, 5):
        assert verdict(parts, claim, BEFORE) == NOT_APPLICABLE
        assert claim_verdicts(parts)[claim] == NOT_SHOWN
    assert "add 0" in parts[(parts["claim"] == 3) & (parts["part"] == BEFORE)]["evidence"].iloc[0]
