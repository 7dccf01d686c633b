"""The paper's five claims (arXiv:2606.12117), checked on this run's per-example scores.

Each claim is split into parts; each part has an estimate, a 95% paired bootstrap interval over
test examples (resampled within each unit) and a verdict by one rule:

- **holds**: the direction is the claimed one and the interval excludes the opposite;
- **refuted**: the interval lies wholly on the opposite side;
- **not shown**: the interval straddles the line (the data cannot tell);
- **not applicable**: the run cannot test it (one model: no ranking; no post-trained twins).

A claim holds when every applicable part holds, is refuted when a part is refuted, and is not
shown otherwise. Computed, never written by hand: `softeval claims` from the score files.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import combinations
from pathlib import Path

import numpy as np
import pandas as pd

from softeval.analysis.evidence import (
    COLLAPSE_ENTROPY,
    FORMAT_SATURATED,
    KNOWLEDGE_FLAT,
    SIGNIFICANCE,
    Interval,
    MetricReader,
    absolute_gap_difference,
    choice_spread,
    paired_bootstrap,
    paired_counts,
)
from softeval.analysis.publish import write_table
from softeval.analysis.ranking import bootstrap_swap_distances, rank_by_score
from softeval.analysis.tables import ALL_TASKS, BASELINES, methods_in, scores_of, unit_rows
from softeval.io import atomic_write_text
from softeval.settings import AnalysisSettings

HOLDS, NOT_SHOWN, REFUTED, NOT_APPLICABLE = "holds", "not shown", "refuted", "not applicable"
VERDICTS = (HOLDS, NOT_SHOWN, REFUTED, NOT_APPLICABLE)
STATEMENTS = {
    1: "Format without knowledge: under soft-prompt tuning, format accuracy climbs to 90-100% while "
    "knowledge accuracy stays flat; closed tasks saturate first (the paper: about step 40), open tasks later "
    "(about step 80)",
    2: "Soft prompting beats zero-shot and few-shot on base models, and on post-trained models too",
    3: "Soft-prompted base rankings predict post-trained rankings: smaller swap distance to the post-trained "
    "ranking than zero-shot and few-shot",
    4: "Agreement under zero- and few-shot is largely an artifact of score compression: compressed scores leave "
    "the ranking to tie-breaks; soft prompting lifts scores so that rankings are decided by scores",
    5: "The score gap between base and post-trained models is smallest under soft prompting",
}
LABEL = {"zero_shot": "zero-shot", "few_shot": "few-shot", "soft_prompt": "soft prompt"}

# (model, task, method, step) of a base model -> (the option each test example chose, options per question)
ChoiceReader = Callable[[str, str, str, int | None], tuple[list[int], int]]


def greater(interval: Interval) -> str:
    """Verdict on 'the quantity is above zero'."""
    return HOLDS if interval.low > 0 else REFUTED if interval.high < 0 else NOT_SHOWN


def less(interval: Interval) -> str:
    """Verdict on 'the quantity is below zero'."""
    return HOLDS if interval.high < 0 else REFUTED if interval.low > 0 else NOT_SHOWN


def within(interval: Interval, margin: float) -> str:
    """Verdict on 'the quantity is within ±margin' (an equivalence test: the whole interval inside)."""
    if -margin <= interval.low and interval.high <= margin:
        return HOLDS
    return REFUTED if interval.low > margin or interval.high < -margin else NOT_SHOWN


def combine(verdicts: list[str]) -> str:
    """A claim's verdict from its parts'."""
    tested = [v for v in verdicts if v != NOT_APPLICABLE]
    if not tested:
        return NOT_APPLICABLE
    if REFUTED in tested:
        return REFUTED
    return HOLDS if all(v == HOLDS for v in tested) else NOT_SHOWN


@dataclass
class Part:
    claim: int
    part: str
    verdict: str
    evidence: str
    interval: Interval | None = None
    caveat: str = ""

    def row(self) -> dict:
        iv = self.interval
        return {
            "claim": self.claim,
            "part": self.part,
            "verdict": self.verdict + (f" ({self.caveat})" if self.caveat else ""),
            "estimate": np.nan if iv is None else iv.estimate,
            "ci_low": np.nan if iv is None else iv.low,
            "ci_high": np.nan if iv is None else iv.high,
            "evidence": self.evidence,
        }


@dataclass
class Inputs:
    """What the claims are computed from."""

    summary: pd.DataFrame
    swap: pd.DataFrame
    read: MetricReader
    closed_tasks: set[str]
    settings: AnalysisSettings
    choices: ChoiceReader | None = None
    models: list[str] = field(init=False)
    tasks: list[str] = field(init=False)
    roles: set[str] = field(init=False)
    methods: list[str] = field(init=False)

    def __post_init__(self) -> None:
        self.models = sorted(set(self.summary["model"]))
        self.tasks = sorted(set(self.summary["task"]))
        self.roles = set(self.summary["role"])
        self.methods = methods_in(self.summary)

    def step(self, method: str) -> int | None:
        return self.settings.final_step if method == "soft_prompt" else None

    def values(self, role: str, model: str, task: str, method: str, step: int | None, metric: str) -> np.ndarray:
        return self.read((role, model, task, method, step), metric)

    def baselines(self) -> list[str]:
        return [m for m in BASELINES if m in self.methods]


def check_claims(inputs: Inputs) -> pd.DataFrame:
    """One row per part of each claim: verdict, estimate, interval and the evidence in words."""
    parts: list[Part] = []
    if "soft_prompt" not in inputs.methods:
        for claim in STATEMENTS:
            parts.append(Part(claim, "all", NOT_APPLICABLE, "no soft-prompt units in this run"))
    else:
        parts += claim_format_without_knowledge(inputs)
        if inputs.baselines():
            parts += claim_beats_baselines(inputs)
            parts += claim_predicts_rankings(inputs)
            parts += claim_score_compression(inputs)
            parts += claim_smallest_gap(inputs)
        else:
            for claim in (2, 3, 4, 5):
                parts.append(Part(claim, "all", NOT_APPLICABLE, "no zero-shot or few-shot units to compare with"))
    return pd.DataFrame([p.row() for p in parts])


def claim_verdicts(parts: pd.DataFrame) -> dict[int, str]:
    """Each claim's verdict from its parts' (caveats dropped)."""
    return {
        int(claim): combine([v.split(" (")[0] for v in group["verdict"]])
        for claim, group in parts.groupby("claim", sort=True)
    }


# ---- 1: format without knowledge --------------------------------------------------------------


def claim_format_without_knowledge(inputs: Inputs) -> list[Part]:
    settings, parts = inputs.settings, []
    first, final = settings.first_step, settings.final_step
    soft = inputs.summary[(inputs.summary["role"] == "base") & (inputs.summary["method"] == "soft_prompt")]
    steps = sorted({int(s) for s in soft["step"].dropna()})
    saturation: dict[str, int | None] = {}
    for kind in ("closed", "open"):
        tasks = [t for t in inputs.tasks if (t in inputs.closed_tasks) == (kind == "closed")]
        if not tasks:
            parts.append(Part(1, f"{kind} tasks", NOT_APPLICABLE, f"no {kind} tasks in this run"))
            continue
        if first == final:
            parts.append(Part(1, f"{kind} tasks", NOT_APPLICABLE, "one soft-prompt snapshot: no change to measure"))
            continue
        curve = []
        for step in steps:
            rows = unit_rows(inputs.summary, "base", "soft_prompt", step)
            rows = rows[rows["task"].isin(tasks)]
            curve.append((step, float(rows["format"].mean()), float(rows["knowledge"].mean())))
        saturation[kind] = next((s for s, fmt, _ in curve if fmt >= FORMAT_SATURATED), None)
        units = [(m, t) for t in tasks for m in inputs.models]

        def pairs(metric: str, units: list = units) -> list:
            return [
                (
                    inputs.values("base", m, t, "soft_prompt", final, metric),
                    inputs.values("base", m, t, "soft_prompt", first, metric),
                )
                for m, t in units
            ]

        fmt_change = paired_bootstrap(pairs("format"), None, settings.bootstrap, settings.seed)
        # The level the paper names (90-100%), with its interval: the mean of the final format
        # minus the threshold; a prompt that starts in format has nothing to climb, and still counts.
        fmt_level = paired_bootstrap(
            [(final_fmt, np.full_like(final_fmt, FORMAT_SATURATED)) for final_fmt, _ in pairs("format")],
            None,
            settings.bootstrap,
            settings.seed,
        )
        where = "never" if saturation[kind] is None else f"at step {saturation[kind]}"
        along = "; ".join(f"step {s}: format {f:.3f}, knowledge {k:.3f}" for s, f, k in curve)
        parts.append(
            Part(
                1,
                f"{kind} tasks: format reaches >= {FORMAT_SATURATED}",
                greater(fmt_level),
                f"{len(tasks)} {kind} task(s) x {len(inputs.models)} base models; {along}; format first >= "
                f"{FORMAT_SATURATED} {where}; final format minus {FORMAT_SATURATED} {fmt_level}; change from step "
                f"{first} to {final} {fmt_change}",
                fmt_level,
            )
        )
        know_change = paired_bootstrap(pairs("knowledge"), None, settings.bootstrap, settings.seed)
        know_verdict, caveat = within(know_change, KNOWLEDGE_FLAT), ""
        evidence = f"knowledge change from step {first} to {final} {know_change} (flat: within ±{KNOWLEDGE_FLAT})"
        if kind == "closed" and inputs.choices is not None:
            collapsed = []
            for m, t in units:
                spread = choice_spread(*inputs.choices(m, t, "soft_prompt", final))
                if spread.entropy < COLLAPSE_ENTROPY:
                    before = choice_spread(*inputs.choices(m, t, "soft_prompt", first))
                    origin = (
                        f"already at step {first}: the model's bias, not the prompt's"
                        if before.entropy < COLLAPSE_ENTROPY
                        else f"entropy {before.entropy:.2f} at step {first}"
                    )
                    share = f"{spread.top_letter} {spread.top_share:.0%}"
                    collapsed.append(f"{m}/{t} ({share}, entropy {spread.entropy:.2f}; {origin})")
            evidence += (
                f"; choices collapsed onto one option (normalised entropy < {COLLAPSE_ENTROPY}) in "
                f"{len(collapsed)} of {len(units)} units" + (": " + ", ".join(collapsed) if collapsed else "")
            )
            if collapsed and know_verdict == HOLDS:
                know_verdict, caveat = NOT_SHOWN, "flat only because choices collapsed"
        parts.append(Part(1, f"{kind} tasks: knowledge flat", know_verdict, evidence, know_change, caveat))
    if "closed" in saturation and "open" in saturation:
        closed_at, open_at = saturation["closed"], saturation["open"]
        # First crossings of a threshold at a few snapshots carry no interval: the order can be
        # shown, never refuted, by them.
        in_order = closed_at is not None and (open_at is None or closed_at <= open_at)
        parts.append(
            Part(
                1,
                "closed tasks saturate no later than open tasks",
                HOLDS if in_order else NOT_SHOWN,
                f"format first >= {FORMAT_SATURATED} at step {_never(closed_at)} on closed tasks, {_never(open_at)} "
                "on open tasks "
                f"(snapshots {', '.join(map(str, steps))})",
            )
        )
    return parts


def _never(step: int | None) -> str:
    return "never" if step is None else str(step)


# ---- 2: soft prompting beats the baselines ----------------------------------------------------


def claim_beats_baselines(inputs: Inputs) -> list[Part]:
    settings, parts = inputs.settings, []
    for role in ("base", "post"):
        who = "base" if role == "base" else "post-trained"
        if role not in inputs.roles:
            parts.append(Part(2, f"{who} models", NOT_APPLICABLE, f"no {who} models in this run"))
            continue
        for baseline in inputs.baselines():
            units = [(m, t) for t in inputs.tasks for m in inputs.models]
            strict = [
                (
                    inputs.values(role, m, t, "soft_prompt", settings.final_step, settings.metric),
                    inputs.values(role, m, t, baseline, None, settings.metric),
                )
                for m, t in units
            ]
            gain = paired_bootstrap(strict, None, settings.bootstrap, settings.seed)
            outcomes = [paired_counts(a, b).outcome for a, b in strict]
            knowledge = paired_bootstrap(
                [
                    (
                        inputs.values(role, m, t, "soft_prompt", settings.final_step, "knowledge"),
                        inputs.values(role, m, t, baseline, None, "knowledge"),
                    )
                    for m, t in units
                ],
                None,
                settings.bootstrap,
                settings.seed,
            )
            verdict = greater(gain)
            caveat = "knowledge lost" if verdict == HOLDS and less(knowledge) == HOLDS else ""
            parts.append(
                Part(
                    2,
                    f"{who} models vs {LABEL[baseline]}",
                    verdict,
                    f"{settings.metric} soft prompt minus {LABEL[baseline]} {gain} over {len(units)} units; "
                    f"per unit (exact McNemar p < {SIGNIFICANCE}): soft prompt better in "
                    f"{outcomes.count('first better')}, {LABEL[baseline]} better in "
                    f"{outcomes.count('second better')}, within noise in {outcomes.count('within noise')}; "
                    f"knowledge soft prompt minus {LABEL[baseline]} {knowledge}",
                    gain,
                    caveat,
                )
            )
    return parts


# ---- 3: rankings ------------------------------------------------------------------------------


def _ranking_not_applicable(inputs: Inputs, claim: int) -> Part | None:
    if len(inputs.models) < 2:
        return Part(claim, "all", NOT_APPLICABLE, "one model: no ranking to compare")
    if "post" not in inputs.roles:
        return Part(claim, "all", NOT_APPLICABLE, "no post-trained models: no reference ranking")
    return None


def swap_draws(inputs: Inputs, method: str) -> np.ndarray:
    """Bootstrap draws of the swap distance summed over tasks (the same resamples as the swap table:
    same seed, paired across methods and models)."""
    settings, total = inputs.settings, 0
    for task in inputs.tasks:
        reference = scores_of(
            inputs.summary,
            "post",
            settings.reference_method,
            inputs.step(settings.reference_method),
            task,
            settings.metric,
        )
        per_example = {
            m: inputs.values("base", m, task, method, inputs.step(method), settings.metric) for m in inputs.models
        }
        total = total + bootstrap_swap_distances(
            per_example, rank_by_score(reference), settings.bootstrap, settings.seed
        )
    return np.asarray(total)


def claim_predicts_rankings(inputs: Inputs) -> list[Part]:
    missing = _ranking_not_applicable(inputs, 3)
    if missing:
        return [missing]
    totals = inputs.swap[inputs.swap["task"] == ALL_TASKS].set_index("method")
    sp_draws, parts = swap_draws(inputs, "soft_prompt"), []
    sp = totals.loc["soft_prompt"]
    for baseline in inputs.baselines():
        b = totals.loc[baseline]
        diff_draws = sp_draws - swap_draws(inputs, baseline)
        diff = Interval(
            float(sp["distance"] - b["distance"]),
            float(np.percentile(diff_draws, 2.5)),
            float(np.percentile(diff_draws, 97.5)),
        )
        robust = "smaller at every tie-break" if sp["distance_max"] < b["distance_min"] else "the tie ranges overlap"
        evidence = (
            f"swap distance to the post-trained ranking summed over {len(inputs.tasks)} task(s): soft prompt "
            f"{int(sp['distance'])} (95% interval {sp['ci_low']:.0f}-{sp['ci_high']:.0f}, tie range "
            f"{int(sp['distance_min'])}-{int(sp['distance_max'])}), {LABEL[baseline]} {int(b['distance'])} "
            f"({b['ci_low']:.0f}-{b['ci_high']:.0f}, tie range {int(b['distance_min'])}-{int(b['distance_max'])}); "
            f"difference {diff} (paired bootstrap); {robust}"
        )
        if "truth_distance" in totals.columns:
            evidence += (
                f"; to the zoo's true knowledge ranking: soft prompt {int(sp['truth_distance'])}, "
                f"{LABEL[baseline]} {int(b['truth_distance'])}"
            )
        parts.append(Part(3, f"vs {LABEL[baseline]}", less(diff), evidence, diff))
    return parts


# ---- 4: score compression ---------------------------------------------------------------------


def unresolved_pairs(inputs: Inputs, method: str) -> tuple[int, int]:
    """Base-model pairs (per task) whose scores are tied or whose paired 95% interval of the
    difference contains zero: pairs the scores do not order."""
    settings, unresolved, total = inputs.settings, 0, 0
    for task in inputs.tasks:
        values = {
            m: inputs.values("base", m, task, method, inputs.step(method), settings.metric) for m in inputs.models
        }
        for a, b in combinations(inputs.models, 2):
            iv = paired_bootstrap([(values[a], values[b])], None, settings.bootstrap, settings.seed)
            unresolved += int(iv.estimate == 0 or iv.low <= 0 <= iv.high)
            total += 1
    return unresolved, total


def claim_score_compression(inputs: Inputs) -> list[Part]:
    missing = _ranking_not_applicable(inputs, 4)
    if missing:
        return [missing]
    totals = inputs.swap[inputs.swap["task"] == ALL_TASKS].set_index("method")
    base = inputs.summary[inputs.summary["role"] == "base"]

    def describe(method: str) -> tuple[float, str]:
        unresolved, total = unresolved_pairs(inputs, method)
        row = totals.loc[method]
        rows = unit_rows(base, "base", method, inputs.step(method))
        share = unresolved / total
        text = (
            f"{LABEL[method]}: mean {inputs.settings.metric} {rows[inputs.settings.metric].mean():.3f}, "
            f"{unresolved} of {total} base-model pairs tied or within noise ({share:.0%}), swap distance "
            f"{int(row['distance'])} alphabetical, {int(row['distance_min'])}-{int(row['distance_max'])} over "
            f"all tie-breaks (width {int(row['distance_max'] - row['distance_min'])})"
        )
        return share, text

    sp_share, sp_text = describe("soft_prompt")
    sp_worst = totals.loc["soft_prompt", "distance_max"]
    parts = []
    for baseline in inputs.baselines():
        share, text = describe(baseline)
        worst = totals.loc[baseline, "distance_max"]
        survives = worst <= sp_worst
        if share <= sp_share:
            verdict = REFUTED
            why = "the baseline's scores are no more compressed than the soft prompt's"
        elif survives:
            verdict = NOT_SHOWN
            why = "the baseline's scores are more compressed, but its agreement survives its worst tie-break"
        else:
            verdict = HOLDS
            why = "the baseline's scores are more compressed and its agreement does not survive its worst tie-break"
        parts.append(
            Part(
                4,
                f"{LABEL[baseline]} vs soft prompt",
                verdict,
                f"{text}; {sp_text}; worst tie-break {int(worst)} vs soft prompt's {int(sp_worst)}: {why}",
            )
        )
    return parts


# ---- 5: score gap -----------------------------------------------------------------------------


def claim_smallest_gap(inputs: Inputs) -> list[Part]:
    if "post" not in inputs.roles:
        return [Part(5, "all", NOT_APPLICABLE, "no post-trained models: no score gap")]
    settings, parts = inputs.settings, []
    units = [(m, t) for t in inputs.tasks for m in inputs.models]

    def arrays(method: str) -> list[tuple[np.ndarray, np.ndarray]]:
        step = inputs.step(method)
        return [
            (
                inputs.values("base", m, t, method, step, settings.metric),
                inputs.values("post", m, t, method, step, settings.metric),
            )
            for m, t in units
        ]

    def differing(pairs: list) -> int:
        return sum(paired_counts(b, p).outcome != "within noise" for b, p in pairs)

    sp = arrays("soft_prompt")
    sp_gap = float(np.mean([abs(p.mean() - b.mean()) for b, p in sp]))
    for baseline in inputs.baselines():
        other = arrays(baseline)
        diff = absolute_gap_difference(
            [(b1, p1, b2, p2) for (b1, p1), (b2, p2) in zip(sp, other, strict=True)],
            settings.bootstrap,
            settings.seed,
        )
        gap = float(np.mean([abs(p.mean() - b.mean()) for b, p in other]))
        parts.append(
            Part(
                5,
                f"vs {LABEL[baseline]}",
                less(diff),
                f"mean |post - base| {settings.metric} over {len(units)} units: soft prompt {sp_gap:.3f}, "
                f"{LABEL[baseline]} {gap:.3f}; difference {diff} (paired bootstrap); base and post-trained twin "
                f"differ significantly (exact McNemar p < {SIGNIFICANCE}) in {differing(sp)} units under the soft "
                f"prompt, {differing(other)} under {LABEL[baseline]}",
                diff,
            )
        )
    return parts


# ---- writing ----------------------------------------------------------------------------------


def truth_note(swap: pd.DataFrame) -> str | None:
    """For the embedded zoo: the base rankings' distance to the true knowledge ranking."""
    if "truth_distance" not in swap.columns:
        return None
    totals = swap[swap["task"] == ALL_TASKS].set_index("method")["truth_distance"]
    per_task = swap[swap["task"] != ALL_TASKS]
    return (
        "Swap distance of the base ranking to the true knowledge ranking (the zoo's cloze probe), summed "
        "over tasks: "
        + ", ".join(f"{LABEL.get(m, m)} {int(v)}" for m, v in totals.items())
        + ". Per task: "
        + "; ".join(
            f"{task}: " + ", ".join(f"{LABEL.get(r.method, r.method)} {int(r.truth_distance)}" for r in g.itertuples())
            for task, g in per_task.groupby("task")
        )
        + "."
    )


def write_claims(parts: pd.DataFrame, stem: Path, pilot: str = "", swap: pd.DataFrame | None = None) -> None:
    """claims.{csv,tex}: one row per part; claims.md: each claim, its verdict and its evidence in prose."""
    write_table(
        parts,
        stem,
        "The paper's claims on this run, part by part: estimate and 95% paired bootstrap interval over test "
        "examples; holds = direction right and interval excluding the opposite, not shown = interval straddling "
        "it, refuted = interval wholly on the opposite side" + pilot,
    )
    verdicts = claim_verdicts(parts)
    lines = ["# The paper's claims, checked on this run", ""]
    if pilot:
        lines += [pilot.strip(), ""]
    lines += [
        "Each part: an estimate with its 95% paired bootstrap interval over test examples (resampled within "
        "each model x task unit). **holds**: the direction is the claimed one and the interval excludes the "
        "opposite; **not shown**: the interval straddles it; **refuted**: the interval lies on the opposite "
        "side; **not applicable**: this run cannot test it. A claim holds when all its parts hold.",
        "",
    ]
    for claim, statement in STATEMENTS.items():
        lines += [f"## {claim}. {statement.split(':')[0]} — {verdicts.get(claim, NOT_APPLICABLE)}", ""]
        lines += [f"*The paper:* {statement}.", ""]
        for row in parts[parts["claim"] == claim].itertuples():
            lines.append(f"- **{row.part}** — {row.verdict}. {row.evidence}.")
        lines.append("")
    note = None if swap is None else truth_note(swap)
    if note:
        lines += ["## Ground truth", "", note, ""]
    lines += [
        "Computed by `softeval claims` from results/scores/<model>/<role>/<task>/<method>.jsonl (per-example "
        "verdicts; `softeval review` shows them) and results/loglik (the options chosen on closed tasks).",
        "",
    ]
    atomic_write_text(stem.with_suffix(".md"), "\n".join(lines))
