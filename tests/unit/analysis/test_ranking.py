"""Ranking math, with property tests against brute force."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from softeval.analysis.evidence import task_resamples
from softeval.analysis.ranking import (
    bootstrap_swap_distances,
    kemeny_consensus,
    kendall_tau_b,
    normalized_swap_distance,
    pairwise_accuracy,
    rank_by_score,
    spearman_rho,
    swap_distance,
    swap_distance_with_ties,
    swap_distances_of_scores,
)

NAMES = list("abcdefg")


@st.composite
def two_rankings(draw, max_size=7):
    n = draw(st.integers(1, max_size))
    models = NAMES[:n]
    return draw(st.permutations(models)), draw(st.permutations(models))


@st.composite
def two_score_tables(draw, max_size=6):
    """Scores from a small set of values, so ties are common."""
    n = draw(st.integers(1, max_size))
    values = st.sampled_from([0.0, 0.25, 0.5, 0.75, 1.0])
    return (
        {m: draw(values) for m in NAMES[:n]},
        {m: draw(values) for m in NAMES[:n]},
    )


def bubble_sort_swaps(a, b):
    """Sort a into b's order by adjacent swaps, counting them."""
    position = {m: i for i, m in enumerate(b)}
    items, swaps = list(a), 0
    for end in range(len(items) - 1, 0, -1):
        for i in range(end):
            if position[items[i]] > position[items[i + 1]]:
                items[i], items[i + 1] = items[i + 1], items[i]
                swaps += 1
    assert items == list(b)
    return swaps


def discordant_pairs(a, b):
    pa, pb = {m: i for i, m in enumerate(a)}, {m: i for i, m in enumerate(b)}
    return sum((pa[x] - pa[y]) * (pb[x] - pb[y]) < 0 for x, y in itertools.combinations(a, 2))


@given(two_rankings())
def test_swap_distance_is_the_bubble_sort_count_and_the_discordant_pairs(pair):
    a, b = pair
    d = swap_distance(a, b)
    assert d == bubble_sort_swaps(a, b) == discordant_pairs(a, b)
    assert d == swap_distance(b, a)  # symmetric
    assert (d == 0) == (list(a) == list(b))
    assert 0.0 <= normalized_swap_distance(a, b) <= 1.0


def test_swap_distance_examples_and_bad_input():
    assert swap_distance("abcd", "dcba") == 6 and normalized_swap_distance("abcd", "dcba") == 1.0
    assert swap_distance("abcd", "bacd") == 1
    with pytest.raises(ValueError, match="same distinct models"):
        swap_distance("abc", "abd")


def all_tie_breaks(scores):
    """Every ranking consistent with the scores (any order inside a tied group)."""
    groups = [sorted(m for m in scores if scores[m] == v) for v in sorted(set(scores.values()), reverse=True)]
    for parts in itertools.product(*(itertools.permutations(g) for g in groups)):
        yield [m for part in parts for m in part]


@settings(max_examples=150, deadline=None)
@given(two_score_tables(max_size=5))
def test_tie_range_is_the_brute_force_range_and_contains_the_alphabetical_policy(tables):
    a, b = tables
    result = swap_distance_with_ties(a, b)
    brute = [swap_distance(x, y) for x in all_tie_breaks(a) for y in all_tie_breaks(b)]
    assert (result.minimum, result.maximum) == (min(brute), max(brute))
    assert result.minimum <= result.alphabetical <= result.maximum
    assert result.alphabetical == swap_distance(rank_by_score(a), rank_by_score(b))


def test_alphabetical_tie_policy():
    assert rank_by_score({"zeta": 0.5, "alpha": 0.5, "mid": 0.9}) == ["mid", "alpha", "zeta"]


def test_correlations_and_pairwise_accuracy():
    ref = {"a": 0.9, "b": 0.5, "c": 0.1}
    assert kendall_tau_b(ref, ref) == pytest.approx(1.0) and spearman_rho(ref, ref) == pytest.approx(1.0)
    flipped = {"a": 0.1, "b": 0.5, "c": 0.9}
    assert kendall_tau_b(flipped, ref) == pytest.approx(-1.0)
    assert pairwise_accuracy(ref, ref) == 1.0 and pairwise_accuracy(flipped, ref) == 0.0
    assert pairwise_accuracy({"a": 0.5, "b": 0.5, "c": 0.1}, ref) == pytest.approx((0.5 + 1 + 1) / 3)
    assert math.isnan(pairwise_accuracy(ref, {"a": 1.0, "b": 1.0, "c": 1.0}))


def test_bootstrap_resamples_both_rankings_alike():
    rng = np.random.default_rng(0)
    per_example = {m: (rng.random(200) < p).astype(float) for m, p in [("a", 0.9), ("b", 0.5), ("c", 0.1)]}
    reversed_ = {m: per_example[n] for m, n in zip("abc", "cba", strict=True)}
    index = task_resamples("t", 200, 200, 1)
    first = bootstrap_swap_distances(per_example, per_example, index)
    assert first.shape == (200,) and (first == 0).all()  # a ranking against itself, resampled alike: 0
    assert np.array_equal(first, bootstrap_swap_distances(per_example, per_example, task_resamples("t", 200, 200, 1)))
    assert (bootstrap_swap_distances(per_example, reversed_, index) == 3).all()
    # each resample equals the distance computed from that resample's means by the scalar functions
    noisy = {m: (rng.random(200) < 0.5).astype(float) for m in "abc"}
    draws = bootstrap_swap_distances(noisy, per_example, index)
    for k in range(20):
        base = {m: noisy[m][index[k]].mean() for m in "abc"}
        ref = {m: per_example[m][index[k]].mean() for m in "abc"}
        assert draws[k] == swap_distance(rank_by_score(base), rank_by_score(ref))
    with pytest.raises(ValueError, match="different models"):
        bootstrap_swap_distances(noisy, {"a": noisy["a"]}, index)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(st.integers(0, 3), min_size=5, max_size=5), min_size=2, max_size=2))
def test_vectorised_swap_distance_equals_the_ranking_definition(tables):
    """Small integer scores: ties everywhere, the alphabetical tie-break is what is tested."""
    a, b = (dict(zip(NAMES[:5], map(float, t), strict=True)) for t in tables)
    expected = swap_distance(rank_by_score(a), rank_by_score(b))
    got = swap_distances_of_scores(np.array([list(a.values())]), np.array([list(b.values())]))
    assert got.tolist() == [expected]


def brute_force_kemeny(rankings):
    models = sorted(rankings[0])
    return min(sum(swap_distance(list(p), r) for r in rankings) for p in itertools.permutations(models))


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 6).flatmap(lambda n: st.lists(st.permutations(NAMES[:n]), min_size=1, max_size=5)))
def test_kemeny_is_optimal_and_no_worse_than_any_input(rankings):
    consensus, total = kemeny_consensus(rankings)
    assert sorted(consensus) == sorted(rankings[0])
    assert total == sum(swap_distance(consensus, r) for r in rankings)
    assert total == brute_force_kemeny(rankings)
    assert all(total <= sum(swap_distance(candidate, r) for r in rankings) for candidate in rankings)


def test_kemeny_of_identical_rankings_is_that_ranking():
    assert kemeny_consensus([list("cab")] * 3) == (list("cab"), 0)
