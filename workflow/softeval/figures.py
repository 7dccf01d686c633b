"""Figures for the paper's claims (matplotlib, PNG + PDF), drawn from the tidy tables."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only, no display
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from softeval.analysis import ALL_TASKS, methods_in

LABELS = {"zero_shot": "zero-shot", "few_shot": "few-shot", "soft_prompt": "soft prompt"}


def save(fig: plt.Figure, stem: Path) -> None:
    stem.parent.mkdir(parents=True, exist_ok=True)
    for suffix in (".png", ".pdf"):
        tmp = stem.with_name(f".{stem.name}.tmp{suffix}")
        fig.savefig(tmp, dpi=150, bbox_inches="tight", metadata={"CreationDate": None} if suffix == ".pdf" else None)
        tmp.replace(stem.with_suffix(suffix))
    plt.close(fig)


def tuning_curve(summary: pd.DataFrame, stem: Path) -> None:
    """Claim (a): base models' knowledge and format accuracy against the tuning step, per task."""
    sp = summary[(summary["role"] == "base") & (summary["method"] == "soft_prompt")]
    tasks = sorted(set(sp["task"]))
    fig, axes = plt.subplots(1, len(tasks), figsize=(3.2 * len(tasks), 3), sharey=True, squeeze=False)
    for ax, task in zip(axes[0], tasks, strict=True):
        curve = sp[sp["task"] == task].groupby("step")[["format", "knowledge"]].mean()
        ax.plot(curve.index, curve["format"], marker="o", label="format")
        ax.plot(curve.index, curve["knowledge"], marker="s", label="knowledge")
        ax.set_title(task)
        ax.set_xlabel("tuning step")
        ax.set_ylim(-0.02, 1.02)
    axes[0][0].set_ylabel("accuracy (mean over base models)")
    axes[0][0].legend(loc="best")
    save(fig, stem)


def method_scores(summary: pd.DataFrame, final_step: int, stem: Path) -> None:
    """Claims (b, c): strict score per method, base vs post-trained, mean over models and tasks."""
    methods = methods_in(summary)
    fig, ax = plt.subplots(figsize=(5, 3))
    width = 0.38
    for k, role in enumerate(("base", "post")):
        means = []
        for method in methods:
            rows = summary[(summary["role"] == role) & (summary["method"] == method)]
            rows = rows[rows["step"] == final_step] if method == "soft_prompt" else rows[rows["step"].isna()]
            means.append(rows["strict"].mean())
        ax.bar(np.arange(len(methods)) + (k - 0.5) * width, means, width, label=role)
    ax.set_xticks(np.arange(len(methods)), [LABELS[m] for m in methods])
    ax.set_ylabel("strict score (mean)")
    ax.set_ylim(0, 1)
    ax.legend()
    save(fig, stem)


def swap_distances(swap: pd.DataFrame, stem: Path) -> None:
    """Claim (d): swap distance to the post-trained ranking per task and method, 95% bootstrap CI."""
    tasks = [t for t in dict.fromkeys(swap["task"]) if t != ALL_TASKS]
    methods = list(dict.fromkeys(swap["method"]))
    fig, ax = plt.subplots(figsize=(1.4 * len(tasks) + 2, 3))
    width = 0.8 / len(methods)
    for k, method in enumerate(methods):
        rows = swap[(swap["method"] == method) & (swap["task"].isin(tasks))].set_index("task").loc[tasks]
        x = np.arange(len(tasks)) + (k - (len(methods) - 1) / 2) * width
        low = np.clip(rows["distance"] - rows["ci_low"], 0, None)
        high = np.clip(rows["ci_high"] - rows["distance"], 0, None)
        ax.bar(x, rows["distance"], width, yerr=[low, high], capsize=3, label=LABELS.get(method, method))
    ax.set_xticks(np.arange(len(tasks)), tasks)
    ax.set_ylabel("swap distance to post-trained")
    ax.legend()
    save(fig, stem)


def score_gaps(gap: pd.DataFrame, stem: Path) -> None:
    """Post-trained minus base strict score per task and method (mean over models)."""
    rows = gap[gap["task"] != ALL_TASKS]
    tasks = list(dict.fromkeys(rows["task"]))
    methods = list(dict.fromkeys(rows["method"]))
    fig, ax = plt.subplots(figsize=(1.4 * len(tasks) + 2, 3))
    width = 0.8 / len(methods)
    for k, method in enumerate(methods):
        values = rows[rows["method"] == method].set_index("task").loc[tasks, "gap_signed"]
        ax.bar(np.arange(len(tasks)) + (k - (len(methods) - 1) / 2) * width, values, width, label=LABELS[method])
    ax.axhline(0, color="black", linewidth=0.8)
    ax.set_xticks(np.arange(len(tasks)), tasks)
    ax.set_ylabel("post minus base strict score")
    ax.legend()
    save(fig, stem)
