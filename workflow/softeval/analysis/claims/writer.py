"""Writing the claims: claims.{csv,tex} (one row per part) and claims.md (each claim's verdict,
its parts' evidence, the files and review lines behind them, and how the verdict compares with a
published record), so that a reader can check every verdict from the files it names."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import pandas as pd

from softeval.analysis.claims.framework import CLAIMS, LABEL
from softeval.analysis.claims.verdicts import (
    NOT_APPLICABLE,
    claim_verdicts,
    display_verdict,
    stability,
    unstable,
    verdict_columns,
)
from softeval.analysis.publish import write_table
from softeval.analysis.tables import ALL_TASKS
from softeval.io import atomic_write_text


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


# How claims.md reads its verdicts (results/README.md says the same).
CLAIMS_RULES = (
    "Each part: an estimate with its 95% interval. Means and their differences: paired bootstrap over test "
    "items, one draw of items shared by every model and method, and by every task that asks about the same "
    "items (the world's countries: a model that knows a country knows it in every task), so the items' "
    "common difficulty moves them together. Claim 3: the expected difference of swap distances on a test set "
    "of this size, both rankings resampled alike, corrected for the bootstrap's bias. Claim 4's near-zero "
    "share: each unit's share drawn from its exact binomial (Clopper-Pearson) confidence distribution as "
    "well, so 0 of 60 is not surely below 0.05 (its exact upper bound is 0.060). Claim 4's tie-breaks: the "
    "range over uniformly random tie-breaks of this run's scores. Per-unit McNemar counts are Holm-corrected "
    "over the units of a comparison. **holds**: the direction is the claimed one and the interval excludes "
    'the opposite ("flat": the 90% interval within ±0.05, the two one-sided tests at 5%; "not below": the '
    "lower end above -0.05); **refuted**: the interval lies on the opposite side at the level Holm's "
    "correction over the claim's tested parts leaves (one part: the 95% interval; k parts: the strongest at "
    "2.5% / k one-sided, step-down), so a claim of many parts is refuted by chance no more often than one of "
    "one part; **not shown**: otherwise, and where this run cannot test a part it needs (format at the level "
    "before tuning: no climb to see); **not applicable**: this run cannot test the claim at all. "
    "A claim holds when every part holds (a part that cannot be tested is never dropped: the claim is then "
    "not shown), and is refuted when a part is; a scope note (models without a post-trained twin) is no "
    "part. Claim 5's gap must close with soft-prompt scores not below the baseline's (non-inferiority, "
    "base and post-trained models)."
)


def write_claims(
    parts: pd.DataFrame,
    stem: Path,
    pilot: str = "",
    swap: pd.DataFrame | None = None,
    published: tuple[str, Mapping[int, Mapping[str, str]]] | None = None,
) -> None:
    """claims.{csv,tex}: one row per part; claims.md: each claim, its verdict and its evidence in prose.

    published: (where, claim -> {published run: its verdict}), quoted under each claim: a verdict is
    a result only together with how stable it is over seeds.
    """
    parts = verdict_columns(parts)
    write_table(
        parts,
        stem,
        "The paper's claims on this run, part by part: estimate and 95% interval (paired bootstrap over test "
        "items, one draw of items shared by every model and method and by every task asking about the same "
        "items; claim 4's near-zero share: each unit's share also drawn from its exact binomial confidence "
        "distribution; claim 4's tie-breaks: range over random tie-breaks); holds = direction right and "
        "interval excluding the opposite (flat: the 90% interval within the margin; not below: lower end above "
        "minus the margin), not shown = otherwise, or a part this run cannot test, refuted = interval wholly on "
        "the opposite side at the level Holm's correction over the claim's tested parts leaves" + pilot,
    )
    verdicts = claim_verdicts(parts)
    sources = parts.attrs.get("sources", {})
    lines = ["# The paper's claims, checked on this run", ""]
    if pilot:
        lines += [pilot.strip(), ""]
    lines += [
        CLAIMS_RULES,
        "",
    ]
    for item in CLAIMS.values():
        number = item.number
        lines += [f"## {number}. {item.title} — {verdicts.get(number, NOT_APPLICABLE)}", ""]
        lines += [f"*The paper:* {item.statement}.", ""]
        if published and number in published[1]:
            runs = published[1][number]
            lines += [f"*Published ({published[0]}):* {stability(runs, 'published runs')}.", ""]
            if why := unstable(runs):
                lines += [f"*{why[0].upper()}{why[1:]}.*", ""]
            verdict = verdicts.get(number, NOT_APPLICABLE)
            if verdict not in set(runs.values()):
                lines += [
                    f"*Outside the published record:* this run's verdict ({verdict}) is not among the published "
                    f"runs' verdicts for claim {number}; `softeval verify` reports it as a difference.",
                    "",
                ]
        for row in parts[parts["claim"] == number].itertuples():
            lines.append(f"- **{row.part}** — {display_verdict(row.verdict, row.caveat)}. {row.evidence}.")
            lines += [f"  - {line}" for line in sources.get((number, row.part), [])]
        lines.append("")
    note = None if swap is None else truth_note(swap)
    if note:
        lines += ["## Ground truth", "", note, ""]
    lines += [
        "Computed by `softeval claims` from results/scores/<model>/<role>/<task>/<method>.jsonl, a soft prompt's "
        "at soft_prompt/step<N>.jsonl (per-example verdicts; `softeval review` shows them; each part above names "
        "its files and steps) and results/loglik (the options chosen on closed tasks). `softeval claims-explain N "
        "--results results` recomputes claim N's estimates from those files with pandas alone.",
        "",
    ]
    atomic_write_text(stem.with_suffix(".md"), "\n".join(lines))
