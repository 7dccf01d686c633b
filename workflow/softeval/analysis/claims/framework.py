"""What a claim is and how the claims are run: the `Inputs` they read, the `CLAIMS` registry that
`@claim(...)` fills, and `check_claims`, which runs every registered claim the run can test
(docs/extending.md). Kept apart from the claims so that adding one is one module of its own."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd

from softeval.analysis.claims.verdicts import NOT_APPLICABLE, SCOPE_NOTE, Part, fragile_note, holm_refutations
from softeval.analysis.evidence import MetricReader, shared_items
from softeval.analysis.ranking import swap_distances_of_scores
from softeval.analysis.tables import (
    BASELINES,
    SwapDraws,
    base_only_models,
    methods_in,
    ranking_not_applicable,
    scores_of,
    summed_swap_draws,
    swap_draws,
    swap_draws_at,
    twinned_models,
)
from softeval.layout import UnitKey
from softeval.names import BASE, FEW_SHOT, POST, SOFT_PROMPT, ZERO_SHOT
from softeval.registry import Registry
from softeval.settings import AnalysisSettings

LABEL = {ZERO_SHOT: "zero-shot", FEW_SHOT: "few-shot", SOFT_PROMPT: "soft prompt"}

ClaimCheck = Callable[["Inputs"], list[Part]]
# What claims.md prints under a part: the files it read, the interval's kind, a review line.
PartSources = Callable[["Inputs", Part], list[str]]
# (model, task, method, step) of a base model -> (the option each test example chose, options per question)
ChoiceReader = Callable[[str, str, str, int | None], tuple[list[int], int]]


@dataclass
class Inputs:
    """What the claims are computed from."""

    summary: pd.DataFrame
    swap: pd.DataFrame
    read: MetricReader
    closed_tasks: set[str]
    settings: AnalysisSettings
    choices: ChoiceReader | None = None
    # task -> the item (the world's country) each test example asks about, in test order: tasks
    # asking about the same items are resampled by one draw of them (evidence.declare_items); None:
    # each task by its own examples
    items: Mapping[str, Sequence[str]] | None = None
    # the swap-distance bootstrap's draws (tables.swap_draws), as the tables job wrote them; None:
    # computed here from `read` the first time claim 3 needs them
    swap_draws: SwapDraws | None = None
    models: list[str] = field(init=False)
    twinned: list[str] = field(init=False)  # the models with a post-trained twin
    base_only: list[str] = field(init=False)  # the models without one
    tasks: list[str] = field(init=False)
    roles: set[str] = field(init=False)
    methods: list[str] = field(init=False)

    def __post_init__(self) -> None:
        self.models = sorted(set(self.summary["model"]))
        self.twinned = twinned_models(self.summary)
        self.base_only = base_only_models(self.summary)
        self.tasks = sorted(set(self.summary["task"]))
        self.roles = set(self.summary["role"])
        self.methods = methods_in(self.summary)

    def step(self, method: str) -> int | None:
        return self.settings.final_step if method == SOFT_PROMPT else None

    def values(self, role: str, model: str, task: str, method: str, step: int | None, metric: str) -> np.ndarray:
        return self.read(UnitKey(model, role, task, method, step), metric)

    def summed_swap_draws(self, method: str) -> np.ndarray:
        """A method's draws of the swap distance to the post-trained ranking, summed over tasks."""
        if self.swap_draws is None:

            def per_example(role: str, task: str, method: str, step: int | None) -> dict[str, np.ndarray]:
                return {m: self.values(role, m, task, method, step, self.settings.metric) for m in self.twinned}

            self.swap_draws = swap_draws(self.summary, per_example, self.settings)
        return summed_swap_draws(self.swap_draws, method)

    def swap_at(self, method: str, step: int | None) -> tuple[int, np.ndarray]:
        """A method's swap distance to the post-trained ranking at `step`, summed over tasks (ties
        broken alphabetically, as the swap table), and its bootstrap draws (the swap table's own where
        it has the step; else drawn here from the same resamples, so that differences pair)."""
        if step == self.step(method):
            return self._distance(method, step), self.summed_swap_draws(method)

        def per_example(role: str, task: str, method: str, step: int | None) -> dict[str, np.ndarray]:
            return {m: self.values(role, m, task, method, step, self.settings.metric) for m in self.twinned}

        draws = swap_draws_at(self.summary, per_example, self.settings, method, step)
        return self._distance(method, step), np.sum([draws[t] for t in sorted(draws)], axis=0)

    def _distance(self, method: str, step: int | None) -> int:
        reference, ref_step = self.settings.reference_method, self.step(self.settings.reference_method)
        base, post = self.unit_means(BASE, method, step), self.unit_means(POST, reference, ref_step)
        return int(sum(swap_distances_of_scores(b[None, :], p[None, :])[0] for b, p in zip(base, post, strict=True)))

    def unit_means(self, role: str, method: str, step: int | None) -> np.ndarray:
        """(tasks x twinned models) mean scores of one role and method, tasks and models in name
        order: the summary's means, which the swap table ranks."""
        metric = self.settings.metric
        return np.array(
            [[scores_of(self.summary, role, method, step, t, metric)[m] for m in self.twinned] for t in self.tasks]
        )

    def baselines(self) -> list[str]:
        return [m for m in BASELINES if m in self.methods]

    def without_twin(self, claim: int) -> list[Part]:
        """The part that names the models a post-trained comparison leaves out (none: no part)."""
        if not self.base_only or not self.twinned:
            return []
        return [
            Part(
                claim,
                "models without a post-trained twin",
                NOT_APPLICABLE,
                f"no post-trained twin: {', '.join(self.base_only)}",
                caveat=SCOPE_NOTE,
            )
        ]


@dataclass(frozen=True)
class Need:
    """Something a claim needs the run to have; without it the claim is not applicable."""

    met: Callable[[Inputs], bool]
    reason: str  # why the claim is not applicable, in the claims table


NEEDS: dict[str, Need] = {
    SOFT_PROMPT: Need(lambda inputs: SOFT_PROMPT in inputs.methods, "no soft-prompt units in this run"),
    "baselines": Need(lambda inputs: bool(inputs.baselines()), "no zero-shot or few-shot units to compare with"),
}


@dataclass(frozen=True)
class Claim:
    """One claim of the paper: its statement, what the run needs for it, its check (one Part per
    part) and, optionally, what claims.md says under each part (`sources`; none: nothing)."""

    number: int
    statement: str
    needs: tuple[str, ...]
    check: Callable[[Inputs], list[Part]]
    sources: PartSources | None = None

    @property
    def title(self) -> str:
        return self.statement.split(":")[0]


CLAIMS: Registry[Claim] = Registry("claim", "softeval.analysis.claims.CLAIMS")


def claim(
    number: int, statement: str, needs: tuple[str, ...] = (SOFT_PROMPT,), sources: PartSources | None = None
) -> Callable[[ClaimCheck], ClaimCheck]:
    """Decorator on a check function: registers it as claim `number` (numbers are the paper's)."""
    unknown = [need for need in needs if need not in NEEDS]
    if unknown:
        raise ValueError(f"claim {number}: unknown need {unknown[0]!r}; one of {', '.join(NEEDS)}")

    def add(check: ClaimCheck) -> ClaimCheck:
        CLAIMS.add(str(number), Claim(number, statement, needs, check, sources))
        return check

    return add


def check_claims(inputs: Inputs) -> pd.DataFrame:
    """One row per part of each claim: verdict, estimate, interval and the evidence in words; a
    part's "refuted" stands only where Holm's correction over its claim's tested parts keeps it."""
    parts: list[Part] = []
    with shared_items(inputs.items or {}):
        for item in CLAIMS.values():
            missing = next((NEEDS[need] for need in item.needs if not NEEDS[need].met(inputs)), None)
            if missing:
                parts.append(Part(item.number, "all", NOT_APPLICABLE, missing.reason))
            else:
                parts += holm_refutations(item.check(inputs))
    parts = [replace(p, evidence=p.evidence + fragile_note(p)) for p in parts]
    table = pd.DataFrame([p.row() for p in parts])
    # what claims.md prints under each part (not a column of claims.csv): its inputs, interval, review line
    table.attrs["sources"] = {(p.claim, p.part): part_sources(inputs, p) for p in parts}
    table.attrs["settings"] = inputs.settings
    return table


def part_sources(inputs: Inputs, part: Part) -> list[str]:
    """What claims.md says under a part, from its claim's `sources` (a part without an interval
    or a test, as a not-applicable one: nothing)."""
    if part.interval is None and part.test is None:
        return []
    item = CLAIMS.get(str(part.claim)) if str(part.claim) in CLAIMS else None
    return [] if item is None or item.sources is None else item.sources(inputs, part)


# ---- shared by the ranking claims -------------------------------------------------------------


def ranking_not_applicable_part(inputs: Inputs, claim: int) -> Part | None:
    """Rankings compare the models with a post-trained twin: not applicable with fewer than two."""
    reason = ranking_not_applicable(inputs.summary)
    return None if reason is None else Part(claim, "all", NOT_APPLICABLE, reason)


def reference_examples(inputs: Inputs, task: str) -> dict[str, np.ndarray]:
    """Per-example scores of the post-trained models under the reference method: the ranking compared with."""
    method = inputs.settings.reference_method
    return {
        m: inputs.values(POST, m, task, method, inputs.step(method), inputs.settings.metric) for m in inputs.twinned
    }
