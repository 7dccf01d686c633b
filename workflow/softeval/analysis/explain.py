"""Recompute a claim's point estimates from the per-example score files, with pandas alone.

A reviewer's check on `softeval claims`: nothing here imports softeval's analysis code (only
json, pathlib, numpy and pandas), so an estimate that matches claims.csv was computed twice, two
ways. Read this file as the script: every estimate is a mean over units (model x task) of a
unit's mean score, or of the difference of two units' means.

Covered (the parts whose estimate is a mean or a mean difference):
- claim 1: "<kind> tasks: format climbs", "<kind> tasks: format reaches >= 0.9", "<kind> tasks:
  knowledge flat" (final step minus first step, base models, every model);
- claim 2: "<base|post-trained> models vs <baseline>" (soft prompt at the final step minus the
  baseline, the ranking metric);
- claim 3: "vs <baseline>" (the base ranking's swap distance to the post-trained ranking under the
  reference method, summed over tasks, soft prompt minus baseline; ties broken alphabetically);
- claims 3 and 5: "vs the prompt before tuning" (final step minus first step) and "own twins, not
  twins reassigned at random" (with the twins as paired minus its exact expectation when each
  base model is dealt a random twin; 5 models with a twin or more);
- claim 4: "<baseline>: more near-zero scores than the soft prompt" (share of base units with a
  mean below 0.05, baseline minus soft prompt) and "<baseline>: agreement owed to tie-breaks" (the
  swaps uniformly random tie-breaks of the base scores add, in expectation, to the alphabetical
  ones, summed over tasks).
Claims 3-5 rank or pair the models with a post-trained twin only. Not covered: claim 1's
saturation order (a step, not an estimate).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

LABEL = {"zero_shot": "zero-shot", "few_shot": "few-shot"}
BEFORE_TUNING = "vs the prompt before tuning"  # claims 3 and 5's guards (claims.guards)
OWN_TWINS = "own twins, not twins reassigned at random"
FORMAT_SATURATED = 0.9
NEAR_ZERO = 0.05  # claim 4: a base unit's mean score below this is "near zero"


def load_scores(scores: Path) -> pd.DataFrame:
    """Every per-example row of results/scores/<model>/<role>/<task>/<method>.jsonl (a soft
    prompt's at soft_prompt/step<N>.jsonl), with its unit's keys and its position in the file."""
    rows = []
    for path in sorted(scores.rglob("*.jsonl")):
        parts = path.relative_to(scores).parts
        model, role, task = parts[0], parts[1], parts[2]
        if parts[3] == "soft_prompt":
            method, step = "soft_prompt", int(parts[4].removeprefix("step").removesuffix(".jsonl"))
        else:
            method, step = parts[3].removesuffix(".jsonl"), -1
        for i, line in enumerate(path.read_text(encoding="utf-8").splitlines()):
            if line.strip():
                row = json.loads(line)
                rows.append(
                    {
                        "model": model,
                        "role": role,
                        "task": task,
                        "method": method,
                        "step": step,
                        "i": i,
                        "closed": row.get("knowledge_from") == "loglik",
                        **{m: float(row[m]) for m in ("knowledge", "format", "strict")},
                    }
                )
    return pd.DataFrame(rows)


def unit_means(frame: pd.DataFrame) -> pd.DataFrame:
    """One row per unit: its mean knowledge, format and strict score."""
    keys = ["model", "role", "task", "method", "step"]
    return frame.groupby(keys)[["knowledge", "format", "strict"]].mean().reset_index()


def _mean(means: pd.DataFrame, role: str, method: str, step: int, metric: str, models, tasks) -> pd.Series:
    rows = means[(means.role == role) & (means.method == method) & (means.step == step)]
    rows = rows[rows.model.isin(models) & rows.task.isin(tasks)]
    return rows.set_index(["model", "task"])[metric].sort_index()


def swap_distance(base: pd.Series, post: pd.Series) -> int:
    """Pairs of models (index: model names) the two score tables order differently, each ranking
    best first with ties broken alphabetically (model x above y, x before y by name, exactly when
    its score is at least y's): the bubble-sort swap distance of the paper."""
    models = sorted(base.index)
    return sum((base[x] >= base[y]) != (post[x] >= post[y]) for i, x in enumerate(models) for y in models[i + 1 :])


def random_twins_swaps(base: pd.Series, post: pd.Series) -> float:
    """Expected swap distance when the twins' scores are dealt to the base models at random: each
    pair of base models (x before y by name) gets a random ordered pair of distinct twins, whose
    scores rank x above y with the share q of ordered twin pairs (k, l) where k's is at least l's."""
    models = sorted(base.index)
    q = np.mean([post[k] >= post[m] for k in models for m in models if k != m])
    return float(sum(1 - q if base[x] >= base[y] else q for i, x in enumerate(models) for y in models[i + 1 :]))


def _ranked_at(means: pd.DataFrame, role: str, method: str, step: int, metric: str, models, task: str) -> pd.Series:
    return _mean(means, role, method, step, metric, models, [task]).droplevel("task")


def tie_savings(base: pd.Series, post: pd.Series) -> float:
    """Expected swaps that uniformly random tie-breaks of the base scores add to the alphabetical
    tie-break: per pair tied in `base`, +1/2 where the post-trained ranking agrees with the names'
    order (alphabetically concordant, at random discordant half the time), -1/2 where it does not."""
    models = sorted(base.index)
    pairs = [(x, y) for i, x in enumerate(models) for y in models[i + 1 :] if base[x] == base[y]]
    return sum(0.5 if post[x] >= post[y] else -0.5 for x, y in pairs)


def estimates(
    results: Path,
    claim: int,
    metric: str = "strict",
    first: int | None = None,
    final: int | None = None,
    reference: str | None = None,
) -> pd.DataFrame:
    """Claim `claim`'s covered parts: part name and its estimate, recomputed from results/scores.
    `reference`: the method whose post-trained ranking claims 3 and 4 compare with (default, as
    analysis.reference_method's: zero_shot if evaluated, else few_shot, else soft_prompt)."""
    frame = load_scores(results / "scores")
    means = unit_means(frame)
    soft_steps = sorted(set(means[means.method == "soft_prompt"].step))
    first = soft_steps[0] if first is None else first
    final = soft_steps[-1] if final is None else final
    models = sorted(set(means[means.role == "base"].model))
    twinned = sorted(set(models) & set(means[means.role == "post"].model))
    tasks = sorted(set(means.task))
    closed = set(frame[frame.closed].task)
    baselines = [m for m in LABEL if m in set(means.method)]
    if reference is None:
        reference = next((m for m in (*LABEL, "soft_prompt") if m in set(means.method)), "soft_prompt")

    def step_of(method: str) -> int:
        return final if method == "soft_prompt" else -1

    def ranked(role: str, method: str, task: str) -> pd.Series:
        """The twinned models' mean scores on one task (index: model)."""
        return _mean(means, role, method, step_of(method), metric, twinned, [task]).droplevel("task")

    out: list[tuple[str, float]] = []
    if claim == 1:
        for kind in ("closed", "open"):
            kind_tasks = [t for t in tasks if (t in closed) == (kind == "closed")]
            if not kind_tasks:
                continue

            def at(step: int, metric: str, kind_tasks: list = kind_tasks) -> pd.Series:
                return _mean(means, "base", "soft_prompt", step, metric, models, kind_tasks)

            out.append((f"{kind} tasks: format climbs", (at(final, "format") - at(first, "format")).mean()))
            out.append(
                (f"{kind} tasks: format reaches >= {FORMAT_SATURATED}", at(final, "format").mean() - FORMAT_SATURATED)
            )
            out.append((f"{kind} tasks: knowledge flat", (at(final, "knowledge") - at(first, "knowledge")).mean()))
    elif claim == 2:
        for role, who, role_models in (("base", "base", models), ("post", "post-trained", twinned)):
            for baseline in baselines:
                soft = _mean(means, role, "soft_prompt", final, metric, role_models, tasks)
                other = _mean(means, role, baseline, -1, metric, role_models, tasks)
                if len(soft):
                    out.append((f"{who} models vs {LABEL[baseline]}", (soft - other).mean()))
    elif claim == 3 and len(twinned) >= 2:

        def distance(method: str) -> int:
            return sum(swap_distance(ranked("base", method, t), ranked("post", reference, t)) for t in tasks)

        for baseline in baselines:
            out.append((f"vs {LABEL[baseline]}", float(distance("soft_prompt") - distance(baseline))))

        def sp_distance(step: int) -> int:
            return sum(
                swap_distance(
                    _ranked_at(means, "base", "soft_prompt", step, metric, twinned, t), ranked("post", reference, t)
                )
                for t in tasks
            )

        if first < final:
            out.append((BEFORE_TUNING, float(sp_distance(final) - sp_distance(first))))
        if len(twinned) >= 5:
            expected = sum(
                random_twins_swaps(ranked("base", "soft_prompt", t), ranked("post", reference, t)) for t in tasks
            )
            out.append((OWN_TWINS, float(sp_distance(final) - expected)))
    elif claim == 4 and len(twinned) >= 2:

        def near_zero(method: str) -> float:
            units = _mean(means, "base", method, step_of(method), metric, twinned, tasks)
            return float((units < NEAR_ZERO).mean())

        for baseline in baselines:
            label = LABEL[baseline]
            out.append(
                (f"{label}: more near-zero scores than the soft prompt", near_zero(baseline) - near_zero("soft_prompt"))
            )
            saved = sum(tie_savings(ranked("base", baseline, t), ranked("post", reference, t)) for t in tasks)
            out.append((f"{label}: agreement owed to tie-breaks", float(saved)))
    elif claim == 5 and twinned:

        def gap(method: str, step: int) -> pd.Series:
            base = _mean(means, "base", method, step, metric, twinned, tasks)
            post = _mean(means, "post", method, step, metric, twinned, tasks)
            return (post - base).abs()

        for baseline in baselines:
            out.append((f"vs {LABEL[baseline]}", (gap("soft_prompt", final) - gap(baseline, -1)).mean()))
            for role, who in (("base", "base"), ("post", "post-trained")):
                soft = _mean(means, role, "soft_prompt", final, metric, twinned, tasks)
                other = _mean(means, role, baseline, -1, metric, twinned, tasks)
                out.append((f"vs {LABEL[baseline]}: soft prompt not below it ({who} models)", (soft - other).mean()))
        if first < final:
            out.append((BEFORE_TUNING, (gap("soft_prompt", final) - gap("soft_prompt", first)).mean()))
        if len(twinned) >= 5:
            base = _mean(means, "base", "soft_prompt", final, metric, twinned, tasks)
            post = _mean(means, "post", "soft_prompt", final, metric, twinned, tasks)
            # a random twin: each base model's mean gap to every twin of the same task
            random_gap = [abs(post.xs(t, level="task") - base[(m, t)]).mean() for m, t in base.index]
            out.append((OWN_TWINS, float((post - base).abs().mean() - np.mean(random_gap))))
    return pd.DataFrame(out, columns=["part", "recomputed"]).astype({"recomputed": float})


def compare(results: Path, claim: int, claims_csv: Path | None = None, **kwargs) -> pd.DataFrame:
    """The recomputed estimates beside claims.csv's `estimate` for the same parts."""
    table = pd.read_csv(claims_csv or results / "tables" / "claims.csv")
    table = table[table["claim"] == claim][["part", "estimate"]]
    mine = estimates(results, claim, **kwargs)
    both = mine.merge(table, on="part", how="left")
    # claims.csv writes its estimates to 4 decimals: a match is equality to that rounding
    both["match"] = np.isclose(both["recomputed"], both["estimate"], rtol=0, atol=0.5e-4 + 1e-9)
    return both
