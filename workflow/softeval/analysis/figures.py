"""Figures for the paper's claims (matplotlib, PNG + PDF), drawn from the tidy tables."""

from __future__ import annotations

from pathlib import Path

import matplotlib

from softeval.names import BASE, FEW_SHOT, ROLES, SOFT_PROMPT, ZERO_SHOT

matplotlib.use("Agg")  # files only, no display
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from softeval.analysis.tables import ALL_TASKS, methods_in
from softeval.io import atomic_file

LABELS = {ZERO_SHOT: "zero-shot", FEW_SHOT: "few-shot", SOFT_PROMPT: "soft prompt"}


def save(fig: plt.Figure, stem: Path) -> None:
    for kind in ("png", "pdf"):
        with atomic_file(stem.with_suffix(f".{kind}")) as tmp:
            metadata = {"CreationDate": None} if kind == "pdf" else None
            fig.savefig(tmp, format=kind, dpi=150, bbox_inches="tight", metadata=metadata)
    plt.close(fig)


def not_applicable(table: pd.DataFrame, value: str, title: str, stem: Path) -> bool:
    """Where no row of `table` has a `value` (a comparison that needs post-trained twins the run
    lacks), draw the reason from its note instead of empty axes; True when it did."""
    if table[value].notna().any():
        return False
    note = next(iter(table["note"].dropna()), "not applicable") if "note" in table else "not applicable"
    fig, ax = plt.subplots(figsize=(6, 2))
    ax.axis("off")
    ax.set_title(title, fontsize=10)
    ax.text(0.5, 0.5, note, ha="center", va="center", wrap=True, fontsize=9)
    save(fig, stem)
    return True


def tuning_curve(summary: pd.DataFrame, closed_tasks: set[str], stem: Path) -> None:
    """Claim 1: base models' format and knowledge accuracy against the tuning step, closed and open
    tasks in separate panels (mean over base models and tasks). No bands: an average of the units'
    interval bounds is no interval of the mean; the mean's own intervals are in knowledge_format.csv
    and the claims' (claims.md)."""
    sp = summary[(summary["role"] == BASE) & (summary["method"] == SOFT_PROMPT)]
    kinds = [
        (kind, tasks)
        for kind, tasks in (
            ("closed tasks", sorted(set(sp["task"]) & closed_tasks)),
            ("open tasks", sorted(set(sp["task"]) - closed_tasks)),
        )
        if tasks
    ]
    fig, axes = plt.subplots(1, max(len(kinds), 1), figsize=(4.2 * max(len(kinds), 1), 3.2), sharey=True, squeeze=False)
    for ax, (kind, tasks) in zip(axes[0], kinds, strict=False):
        rows = sp[sp["task"].isin(tasks)]
        for metric, marker in (("format", "o"), ("knowledge", "s")):
            curve = rows.groupby("step")[metric].mean()
            ax.plot(curve.index, curve, marker=marker, label=metric)
        ax.axhline(0.9, color="grey", linewidth=0.8, linestyle=":")
        ax.set_title(f"{kind} ({', '.join(tasks)})", fontsize=9)
        ax.set_xlabel("tuning step")
        ax.set_ylim(-0.02, 1.02)
    axes[0][0].set_ylabel("accuracy (mean over base models)")
    axes[0][0].legend(loc="best")
    save(fig, stem)


def method_scores(summary: pd.DataFrame, final_step: int, stem: Path) -> None:
    """Claim 2: strict score per method, base vs post-trained, mean over models and tasks (the
    post-trained bars over the models with a twin; none without one)."""
    methods = methods_in(summary)
    fig, ax = plt.subplots(figsize=(5, 3))
    width = 0.38
    for k, role in enumerate(r for r in ROLES if r in set(summary["role"])):
        means = []
        for method in methods:
            rows = summary[(summary["role"] == role) & (summary["method"] == method)]
            rows = rows[rows["step"] == final_step] if method == SOFT_PROMPT else rows[rows["step"].isna()]
            means.append(rows["strict"].mean())
        ax.bar(np.arange(len(methods)) + (k - 0.5) * width, means, width, label=role)
    ax.set_xticks(np.arange(len(methods)), [LABELS[m] for m in methods])
    ax.set_ylabel("strict score (mean)")
    ax.set_ylim(0, 1)
    ax.legend()
    save(fig, stem)


def swap_distances(swap: pd.DataFrame, stem: Path) -> None:
    """Claims 3 and 4: swap distance to the post-trained ranking per method, per task and summed
    over tasks: bars at the alphabetical tie-break, black whiskers the 95% bootstrap interval,
    grey bands the range over all tie-breaks (wide bands: compressed scores). Without two models
    with a post-trained twin: the table's reason."""
    if not_applicable(swap, "distance", "swap distance to post-trained", stem):
        return
    tasks = [t for t in dict.fromkeys(swap["task"]) if t != ALL_TASKS]
    methods = list(dict.fromkeys(swap["method"]))
    groups = [tasks, [ALL_TASKS]] if ALL_TASKS in set(swap["task"]) else [tasks]
    fig, axes = plt.subplots(
        1,
        len(groups),
        figsize=(1.4 * len(tasks) + 3.5, 3),
        squeeze=False,
        gridspec_kw={"width_ratios": [max(len(g), 1) for g in groups]},
    )
    width = 0.8 / len(methods)
    for ax, group in zip(axes[0], groups, strict=True):
        for k, method in enumerate(methods):
            rows = swap[(swap["method"] == method) & (swap["task"].isin(group))].set_index("task").loc[group]
            x = np.arange(len(group)) + (k - (len(methods) - 1) / 2) * width
            low = np.clip(rows["distance"] - rows["ci_low"], 0, None)
            high = np.clip(rows["ci_high"] - rows["distance"], 0, None)
            ax.bar(x, rows["distance"], width, label=LABELS.get(method, method), alpha=0.85)
            ax.errorbar(x, rows["distance"], yerr=[low, high], fmt="none", ecolor="black", capsize=3, linewidth=1)
            ax.vlines(x, rows["distance_min"], rows["distance_max"], colors="grey", linewidth=7, alpha=0.45)
        ax.set_xticks(np.arange(len(group)), group)
    axes[0][0].set_ylabel("swap distance to post-trained")
    axes[0][0].legend(fontsize=8)
    save(fig, stem)


def score_gaps(gap: pd.DataFrame, stem: Path) -> None:
    """Claim 5: post-trained minus base strict score per method, per task and over all tasks
    (mean over models; the smaller the bar, the closer base models come to their twins). Without a
    model with a post-trained twin: the table's reason."""
    if not_applicable(gap, "gap_abs", "score gap", stem):
        return
    rows = gap
    tasks = list(dict.fromkeys(rows["task"]))  # the tasks, then all tasks together
    methods = list(dict.fromkeys(rows["method"]))
    fig, ax = plt.subplots(figsize=(1.4 * len(tasks) + 2, 3))
    width = 0.8 / len(methods)
    for k, method in enumerate(methods):
        values = rows[rows["method"] == method].set_index("task").loc[tasks, "gap_abs"]
        ax.bar(np.arange(len(tasks)) + (k - (len(methods) - 1) / 2) * width, values, width, label=LABELS[method])
    ax.axhline(0, color="black", linewidth=0.8)
    ax.set_xticks(np.arange(len(tasks)), tasks)
    ax.set_ylabel("|post - base| strict score")
    ax.legend()
    save(fig, stem)
