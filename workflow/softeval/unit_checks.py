"""Per base model and task: what the soft prompt did to format, knowledge and the strict score.

The claims table averages over models and tasks; a reviewer also wants each unit, and wants
to see whether a unit's difference is a real one or a few test examples. So every
comparison with a baseline comes with its paired evidence: the examples only the soft
prompt gets right, the examples only the baseline gets right, and the exact McNemar p-value
of that split (two-sided binomial test on the discordant pairs).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pandas as pd
from scipy.stats import binomtest

from softeval.analysis import Settings
from softeval.claims import FORMAT_SATURATED, KNOWLEDGE_FLAT
from softeval.schema import InputError

# (model, task, method, step) -> one score row per test example, in test order
ScoreReader = Callable[[str, str, str, int | None], list[dict]]
# (model, task, method, step) -> where that unit's score rows come from, for error messages
ScoreLocator = Callable[[str, str, str, int | None], str]


def _unit_label(model: str, task: str, method: str, step: int | None) -> str:
    return f"{model}/{task} {method}" + ("" if step is None else f" step {step}")


@dataclass(frozen=True)
class Paired:
    """How two methods split the test examples they disagree on."""

    only_first: int
    only_second: int

    @property
    def p_value(self) -> float:
        """Exact McNemar: two-sided binomial test of the discordant pairs against 1/2."""
        n = self.only_first + self.only_second
        return 1.0 if n == 0 else float(binomtest(self.only_first, n, 0.5).pvalue)


def paired(first: list[dict], second: list[dict], metric: str) -> Paired:
    if [row["id"] for row in first] != [row["id"] for row in second]:
        raise ValueError("paired comparison of different test examples")
    pairs = [(bool(x[metric]), bool(y[metric])) for x, y in zip(first, second, strict=True)]
    return Paired(sum(x and not y for x, y in pairs), sum(y and not x for x, y in pairs))


def _mean(rows: list[dict], metric: str) -> float:
    return sum(float(row[metric]) for row in rows) / len(rows)


def unit_checks(
    models: list[str],
    tasks: list[str],
    baselines: list[str],
    read: ScoreReader,
    settings: Settings,
    locate: ScoreLocator = _unit_label,
) -> pd.DataFrame:
    """One row per base model x task: format at the final step, knowledge from the first to
    the final step (flatness is checked on closed tasks, whose knowledge is option
    likelihood), and the strict score against each baseline with its paired evidence.

    `locate` names the files `read` reads, so a mismatch names the two files to look at."""
    first, final, metric = settings.first_step, settings.final_step, settings.metric
    rows = []
    for task in tasks:
        for model in models:
            start, end = read(model, task, "soft_prompt", first), read(model, task, "soft_prompt", final)
            closed = any(row.get("knowledge_from") == "loglik" for row in end)
            fmt, score = _mean(end, "format"), _mean(end, metric)
            known_start, known_end = _mean(start, "knowledge"), _mean(end, "knowledge")
            change = known_end - known_start
            row: dict = {
                "model": model,
                "task": task,
                "format": fmt,
                "format_ok": fmt >= FORMAT_SATURATED,
                f"knowledge_step{first}": known_start,
                f"knowledge_step{final}": known_end,
                "knowledge_change": change,
                "knowledge_flat_ok": abs(change) <= KNOWLEDGE_FLAT + 1e-9 if closed else pd.NA,
                f"{metric}_soft_prompt": score,
            }
            beats_all = True
            for baseline in baselines:
                other = read(model, task, baseline, None)
                try:
                    split = paired(end, other, metric)
                except ValueError:
                    raise InputError(
                        f"{locate(model, task, baseline, None)} and {locate(model, task, 'soft_prompt', final)} "
                        "score different test examples; delete the older file and rerun to recompute it"
                    ) from None
                baseline_score = _mean(other, metric)
                row[f"{metric}_{baseline}"] = baseline_score
                row[f"only_soft_prompt_vs_{baseline}"] = split.only_first
                row[f"only_{baseline}"] = split.only_second
                row[f"p_vs_{baseline}"] = split.p_value
                beats_all &= score >= baseline_score - 1e-9
            row[f"{metric}_ok"] = beats_all
            rows.append(row)
    return pd.DataFrame(rows)


def summary_line(table: pd.DataFrame, metric: str) -> str:
    """How many units pass each check, for the table's caption."""
    if table.empty:
        return "no soft-prompt units in this run"
    closed = table["knowledge_flat_ok"].dropna()
    return (
        f"format >= {FORMAT_SATURATED} in {int(table['format_ok'].sum())} of {len(table)} units; "
        f"closed-task knowledge within {KNOWLEDGE_FLAT} of the first step in {int(closed.astype(bool).sum())} "
        f"of {len(closed)}; soft-prompt {metric} >= every baseline in {int(table[f'{metric}_ok'].sum())} "
        f"of {len(table)}"
    )
