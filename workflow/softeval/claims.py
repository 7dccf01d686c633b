"""The paper's four claims, checked on this run's numbers: computed, never asserted by hand."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from softeval.analysis import ALL_TASKS, BASELINES, Settings, unit_rows
from softeval.io import atomic_write_text
from softeval.publish import write_table

FORMAT_SATURATED = 0.9
KNOWLEDGE_FLAT = 0.05


def _mean(summary: pd.DataFrame, role: str, method: str, step: int | None, metric: str) -> float:
    return float(unit_rows(summary, role, method, step).loc[:, metric].mean())


def check_claims(summary: pd.DataFrame, swap: pd.DataFrame, settings: Settings) -> pd.DataFrame:
    """One row per claim: what the paper says, the numbers that test it here, holds or not."""
    final, first = settings.final_step, settings.first_step
    rows = []

    fmt0, fmt = (_mean(summary, "base", "soft_prompt", s, "format") for s in (first, final))
    kn0, kn = (_mean(summary, "base", "soft_prompt", s, "knowledge") for s in (first, final))
    holds = fmt >= FORMAT_SATURATED and abs(kn - kn0) <= KNOWLEDGE_FLAT
    rows.append(
        {
            "claim": "a",
            "statement": f"format accuracy saturates (>= {FORMAT_SATURATED}) within {final} steps "
            f"while knowledge accuracy stays flat (within {KNOWLEDGE_FLAT})",
            "evidence": f"base soft-prompt format {fmt0:.3f} at step {first} -> {fmt:.3f} at step {final}; "
            f"knowledge {kn0:.3f} -> {kn:.3f} (change {kn - kn0:+.3f})",
            "holds": holds,
        }
    )

    sp = _mean(summary, "base", "soft_prompt", final, settings.metric)
    baselines = {m: _mean(summary, "base", m, None, settings.metric) for m in BASELINES}
    rows.append(
        {
            "claim": "b",
            "statement": "soft prompting beats zero-shot and few-shot on base models",
            "evidence": f"mean base {settings.metric}: soft prompt {sp:.3f}, "
            + ", ".join(f"{m.replace('_', '-')} {v:.3f}" for m, v in baselines.items()),
            "holds": all(sp > v for v in baselines.values()),
        }
    )

    post_sp = _mean(summary, "post", "soft_prompt", final, settings.metric)
    post_ref = _mean(summary, "post", settings.reference_method, None, settings.metric)
    rows.append(
        {
            "claim": "c",
            "statement": "post-trained models gain from soft prompting too",
            "evidence": f"mean post {settings.metric}: soft prompt {post_sp:.3f} vs "
            f"{settings.reference_method.replace('_', '-')} {post_ref:.3f} (gain {post_sp - post_ref:+.3f})",
            "holds": post_sp > post_ref,
        }
    )

    per_task = swap[swap["task"] != ALL_TASKS].pivot(index="task", columns="method", values="distance")
    totals = swap[swap["task"] == ALL_TASKS].set_index("method")["distance"]
    baselines_here = [m for m in BASELINES if m in per_task]
    wins = per_task["soft_prompt"] <= per_task[baselines_here].min(axis=1)
    every_task = bool(wins.all())
    smaller_sum = all(totals["soft_prompt"] < totals[m] for m in BASELINES if m in totals)
    rows.append(
        {
            "claim": "d",
            "statement": "soft-prompted base rankings predict post-trained rankings better than the baselines",
            "evidence": "swap distance to the post-trained ranking summed over tasks: "
            + ", ".join(f"{m.replace('_', '-')} {int(totals[m])}" for m in totals.index)
            + "; soft prompt <= both baselines on "
            + f"{int(wins.sum())} of {len(per_task)} tasks",
            "holds": every_task and smaller_sum,
        }
    )
    return pd.DataFrame(rows)


def write_claims(claims: pd.DataFrame, stem: Path, truth_note: str | None, pilot: str = "") -> None:
    """claims.{csv,tex} as a table; claims.md as prose a reader can check (a pilot run says so first)."""
    table = claims.assign(holds=claims["holds"].map({True: "holds", False: "does not hold"}))
    write_table(table, stem, "The paper's claims on this run" + pilot)
    lines = ["# The paper's claims, checked on this run", ""]
    if pilot:
        lines += [pilot.strip(), ""]
    for _, row in table.iterrows():
        lines += [f"**({row['claim']}) {row['statement'][0].upper()}{row['statement'][1:]}** — {row['holds']}.", ""]
        lines += [f"{row['evidence']}.", ""]
    if truth_note:
        lines += ["## Ground truth", "", truth_note, ""]
    lines += [
        "Computed by `softeval tables` from results/tables/scores.parquet; every number traces to "
        "results/scores/<model>/<role>/<task>/<method>.jsonl (see `softeval review`).",
        "",
    ]
    atomic_write_text(stem.with_suffix(".md"), "\n".join(lines))
