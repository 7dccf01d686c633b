"""Ranking math: how far one ranking of models is from another.

The paper's measure is the bubble-sort swap distance (Kendall tau distance): the number of
adjacent swaps that turn one ranking into the other, i.e. the number of discordant pairs.
Ranking scores with ties needs a tie policy; the paper breaks ties alphabetically by model
name, which is arbitrary when scores are compressed, so the minimum and maximum distance
over all tie-breaks are reported beside it. All functions are pure.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pulp
from scipy import stats


def rank_by_score(scores: Mapping[str, float]) -> list[str]:
    """Best first; ties broken alphabetically by model name (the paper's policy)."""
    return sorted(scores, key=lambda model: (-scores[model], model))


def swap_distance(a: Sequence[str], b: Sequence[str]) -> int:
    """Number of pairs ordered differently by rankings a and b (= adjacent swaps a -> b)."""
    if sorted(a) != sorted(b) or len(set(a)) != len(a):
        raise ValueError(f"rankings must order the same distinct models: {list(a)} vs {list(b)}")
    position = {model: i for i, model in enumerate(b)}
    return sum(position[x] > position[y] for x, y in itertools.combinations(a, 2))


def normalized_swap_distance(a: Sequence[str], b: Sequence[str]) -> float:
    """Swap distance divided by its maximum n(n-1)/2 (0 = same order, 1 = reversed)."""
    pairs = len(a) * (len(a) - 1) // 2
    return swap_distance(a, b) / pairs if pairs else 0.0


@dataclass(frozen=True)
class TieDistances:
    """Swap distance under the alphabetical tie policy, and its range over all tie-breaks."""

    alphabetical: int
    minimum: int
    maximum: int


def _sign(x: float) -> int:
    return (x > 0) - (x < 0)


def swap_distance_with_ties(a: Mapping[str, float], b: Mapping[str, float]) -> TieDistances:
    """Distance between the rankings two score tables induce, over every way to break ties.

    A pair ordered strictly and oppositely by both tables is discordant whatever the
    tie-breaks; a pair tied in either table can be made concordant or discordant, and all
    such pairs can be made so at once (order tied blocks by the other table's order).
    """
    if set(a) != set(b):
        raise ValueError(f"score tables rank different models: {sorted(a)} vs {sorted(b)}")
    fixed_discordant = tied = 0
    for x, y in itertools.combinations(sorted(a), 2):
        sa, sb = _sign(a[x] - a[y]), _sign(b[x] - b[y])
        if sa == 0 or sb == 0:
            tied += 1
        elif sa != sb:
            fixed_discordant += 1
    alphabetical = swap_distance(rank_by_score(a), rank_by_score(b))
    return TieDistances(alphabetical, fixed_discordant, fixed_discordant + tied)


def kendall_tau_b(a: Mapping[str, float], b: Mapping[str, float]) -> float:
    """Kendall's tau-b between two score tables (ties handled by the b variant); nan if constant."""
    models = sorted(a)
    x, y = [a[m] for m in models], [b[m] for m in models]
    if len(set(x)) < 2 or len(set(y)) < 2:
        return float("nan")
    return float(stats.kendalltau(x, y, variant="b").statistic)


def spearman_rho(a: Mapping[str, float], b: Mapping[str, float]) -> float:
    """Spearman's rho; nan if either table is constant (all tied: no order to correlate)."""
    models = sorted(a)
    x, y = [a[m] for m in models], [b[m] for m in models]
    if len(set(x)) < 2 or len(set(y)) < 2:
        return float("nan")
    return float(stats.spearmanr(x, y).statistic)


def pairwise_accuracy(predicted: Mapping[str, float], reference: Mapping[str, float]) -> float:
    """Share of the pairs the reference orders strictly that the prediction orders the same
    way; a pair the prediction ties counts one half. nan if the reference ties every pair."""
    credit = total = 0.0
    for x, y in itertools.combinations(sorted(reference), 2):
        want = _sign(reference[x] - reference[y])
        if want == 0:
            continue
        total += 1
        got = _sign(predicted[x] - predicted[y])
        credit += 1.0 if got == want else 0.5 if got == 0 else 0.0
    return credit / total if total else math.nan


def swap_distances_of_scores(first: np.ndarray, second: np.ndarray) -> np.ndarray:
    """Swap distance between the rankings by score of each row of two (rows x models) score
    matrices, models in name order, ties broken alphabetically: as swap_distance(rank_by_score(.))
    row by row, without sorting. Model i (alphabetically before j) is ranked above j exactly
    when its score is at least j's, so a pair is discordant when the two tables disagree on that."""
    first, second = np.atleast_2d(first), np.atleast_2d(second)
    upper = np.triu(np.ones((first.shape[1],) * 2, dtype=bool), k=1)
    above_first = first[:, :, None] >= first[:, None, :]
    above_second = second[:, :, None] >= second[:, None, :]
    return ((above_first != above_second) & upper).sum(axis=(1, 2))


def bootstrap_swap_distances(
    per_example: Mapping[str, np.ndarray], reference: Mapping[str, np.ndarray], index: np.ndarray
) -> np.ndarray:
    """Swap distance between the ranking by mean score of `per_example` and the ranking of
    `reference` (per-example scores of the same models on the same test examples), over the
    bootstrap resamples `index` (resamples x examples, evidence.task_resamples): both sides
    resampled alike, as both would change on another test set."""
    models = sorted(per_example)
    if sorted(reference) != models:
        raise ValueError(f"score tables rank different models: {models} vs {sorted(reference)}")

    for m in models:
        if len(per_example[m]) != index.shape[1] or len(reference[m]) != index.shape[1]:
            raise ValueError(f"model {m}: not the {index.shape[1]} test examples the resamples index")

    def means(table: Mapping[str, np.ndarray]) -> np.ndarray:  # resamples x models, one model at a time
        return np.stack([np.asarray(table[m], dtype=float)[index].mean(axis=1) for m in models], axis=1)

    return swap_distances_of_scores(means(per_example), means(reference))


def kemeny_consensus(rankings: Sequence[Sequence[str]]) -> tuple[list[str], int]:
    """The ranking with the least total swap distance to all `rankings`, solved exactly.

    Integer program: a binary x[i, j] per ordered pair (i before j), x[i, j] + x[j, i] = 1,
    transitivity x[i, j] + x[j, k] + x[k, i] <= 2, minimise the disagreements. Ties in the
    optimum go to the solver; the returned distance is exact.
    """
    if not rankings:
        raise ValueError("kemeny_consensus needs at least one ranking")
    models = sorted(rankings[0])
    for ranking in rankings:
        swap_distance(ranking, models)  # same models, no repeats
    if len(models) < 2:
        return list(models), 0
    before = {(i, j): 0 for i in models for j in models if i != j}
    for ranking in rankings:
        for i, j in itertools.combinations(ranking, 2):
            before[(i, j)] += 1
    problem = pulp.LpProblem("kemeny", pulp.LpMinimize)
    index = {m: k for k, m in enumerate(models)}
    x = {(i, j): problem.add_variable(f"x_{index[i]}_{index[j]}", cat="Binary") for (i, j) in before}
    # Putting i before j disagrees with every ranking that puts j before i.
    problem += pulp.lpSum(x[(i, j)] * before[(j, i)] for (i, j) in x)
    for i, j in itertools.combinations(models, 2):
        problem += x[(i, j)] + x[(j, i)] == 1
    for i, j, k in itertools.permutations(models, 3):
        problem += x[(i, j)] + x[(j, k)] + x[(k, i)] <= 2
    problem.solve(pulp.PULP_CBC_CMD(msg=False))
    if pulp.LpStatus[problem.status] != "Optimal":
        raise RuntimeError(f"Kemeny integer program not solved: {pulp.LpStatus[problem.status]}")
    wins = {i: sum(round(x[(i, j)].value()) for j in models if j != i) for i in models}
    consensus = sorted(models, key=lambda m: (-wins[m], m))
    return consensus, sum(swap_distance(consensus, ranking) for ranking in rankings)
