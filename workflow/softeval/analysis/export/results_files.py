"""lm-evaluation-harness results files of a run (the package's docstring says their layout): one
per model and role, from the tidy score table, the task meta files and the run's settings."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

import softeval
from softeval.analysis.aggregate import METRICS
from softeval.analysis.export.harness import (
    KEY_NOTE,
    STDERR_NOTE,
    _add,
    _step,
    harness_columns,
    harness_metric,
    method_filter,
    results_file_name,
    sanitize_model_name,
)
from softeval.io import atomic_write_json, check_slug, read_json
from softeval.names import BASE, FEW_SHOT, METHODS, ROLES, SOFT_PROMPT
from softeval.schema import InputError


def _final_step(rows: pd.DataFrame, final_step: int | None, where: str) -> int | None:
    """The soft prompt's final step among a task's rows: `final_step`, or the largest step scored."""
    steps = sorted({int(s) for s in rows.loc[rows["method"] == SOFT_PROMPT, "step"].dropna()})
    if not steps:
        return None
    if final_step is None:
        return steps[-1]
    if final_step not in steps:
        raise InputError(
            f"{where}: no soft_prompt score at step {final_step} (scored steps: {', '.join(map(str, steps))}); "
            "pass the final step the run tuned to (evaluation.tune.steps)"
        )
    return final_step


def _order(row: Mapping[str, Any]) -> tuple[int, int]:
    method = str(row["method"])
    step = _step(row["step"])
    return METHODS.index(method) if method in METHODS else len(METHODS), -1 if step is None else step


def _setting(config: Mapping[str, Any] | None, section: str, key: str) -> Any:
    """A config value, or the schema's default where the config leaves it out; None without a config."""
    from softeval.settings import section_properties

    if config is None:
        return None
    node: Any = config
    for part in section.split(".") if section else ():
        node = (node.get(part) or {}) if isinstance(node, Mapping) else {}
    if isinstance(node, Mapping) and key in node:
        return node[key]
    return section_properties(section or None).get(key, {}).get("default")


def _model_record(config: Mapping[str, Any] | None, model: str, role: str) -> dict[str, Any]:
    """What the model's role loaded (config["loaded"][model][role]: the jobs' --model and
    --model-options), as the harness's config records it: model_args pretrained=<id or
    directory>,revision=...,dtype=...; the model's softeval name where the config does not say."""
    loaded = ((config or {}).get("loaded") or {}).get(model, {}).get(role)
    if not loaded:
        return {"model_name": model, "model_args": f"pretrained={model}"}
    ref = str(loaded["ref"])
    args = [f"pretrained={ref}"]
    args += [f"{key}={loaded[key]}" for key in ("revision", "dtype") if loaded.get(key)]
    if loaded.get("trust_remote_code"):
        args.append("trust_remote_code=True")
    record: dict[str, Any] = {"model_name": ref, "model_args": ",".join(args)}
    record |= {f"model_{key}": loaded[key] for key in ("revision", "dtype") if loaded.get(key)}
    record["chat_template"] = bool(loaded.get("chat_template"))
    return record


def lm_eval_results(
    scores: pd.DataFrame,
    model: str,
    role: str = BASE,
    *,
    task_meta: Mapping[str, Mapping[str, Any]] | None = None,
    config: Mapping[str, Any] | None = None,
    final_step: int | None = None,
    all_steps: bool = False,
    date: float | None = None,
) -> dict[str, Any]:
    """One model's role as lm-evaluation-harness's results dict (see the module docstring).

    scores: the aggregate table; task_meta: task -> results/data/<task>/meta.json (versions, test
    split sizes, kinds); config: the run's settings, {"seed", "evaluation" (the config's
    sections; a key left out takes the schema's default), "loaded": model -> role -> {"ref",
    "revision", "dtype", "trust_remote_code", "chat_template"} (what the jobs loaded: their --model
    and --model-options)}; None: the file leaves them unsaid and names the model by its softeval
    name; final_step: the soft prompt's final step (None: the largest scored per task);
    all_steps: the other snapshots too; date: the UNIX time the file records (lm-eval: when the
    evaluation started)."""
    check_slug(model, "model")
    rows = scores[(scores["model"] == model) & (scores["role"] == role)]
    if rows.empty:
        known = ", ".join(sorted({f"{m}/{r}" for m, r in zip(scores["model"], scores["role"], strict=True)}))
        raise InputError(f"the score table has no rows of model {model!r} in role {role!r} (it has: {known or 'none'})")
    task_meta = task_meta or {}
    columns = harness_columns(scores)
    few_shot_k = _setting(config, "evaluation.few_shot", "k")
    n_tokens = _setting(config, "evaluation.tune", "n_tokens")
    results: dict[str, Any] = {}
    configs: dict[str, Any] = {}
    versions: dict[str, Any] = {}
    higher_is_better: dict[str, Any] = {}
    n_samples: dict[str, Any] = {}
    intervals: dict[str, Any] = {}
    judged: dict[str, Any] = {}
    finals: dict[str, int | None] = {}
    for task in sorted(set(rows["task"])):
        part = rows[rows["task"] == task]
        final = finals[task] = _final_step(part, final_step, f"{model}/{role}/{task}")
        n_task = int(part["n"].max())
        entry: dict[str, Any] = {"name": task, "alias": task, "sample_len": n_task}
        metrics: dict[str, None] = {}
        methods: dict[str, Any] = {}
        intervals[task], judged[task] = {}, {}
        for row in sorted(part.to_dict("records"), key=_order):
            method, step = str(row["method"]), _step(row["step"])
            if method == SOFT_PROMPT and step != final and not all_steps:
                continue
            filter_, n = method_filter(method, step, final), int(row["n"])
            for metric in METRICS:
                _add(entry, metric, filter_, row[metric], n)
                metrics[metric] = None
                low, high = row.get(f"{metric}_low"), row.get(f"{metric}_high")
                if low is not None and not pd.isna(low):
                    intervals[task][f"{metric},{filter_}"] = [float(low), float(high)]
            for column in columns:
                value = row.get(column)
                if value is None or pd.isna(value):
                    continue  # the harness does not score this task
                metric, harness_filter = harness_metric(column)
                _add(entry, metric, f"{filter_}:{harness_filter}" if harness_filter else filter_, value, n)
                metrics[metric] = None
            if "llm_judged" in row and not pd.isna(row["llm_judged"]):
                judged[task][filter_] = float(row["llm_judged"])
            shots = few_shot_k if method == FEW_SHOT else 0
            methods[filter_] = {"num_fewshot": shots} | (
                {"soft_prompt_tokens": n_tokens, "step": step} if method == SOFT_PROMPT else {}
            )
        meta = dict(task_meta.get(task) or {})
        version = meta.get("task_version")
        results[task] = entry
        versions[task] = version
        higher_is_better[task] = dict.fromkeys(metrics, True)
        total = meta.get("test_total", part["test_total"].max() if "test_total" in part else n_task)
        n_samples[task] = {"original": int(total), "effective": n_task}
        configs[task] = {
            "task": task,
            "test_split": "test",
            "metric_list": [{"metric": m, "aggregation": "mean", "higher_is_better": True} for m in metrics],
            "metadata": {
                "version": version,
                "kind": meta.get("kind"),
                "test_limit": meta.get("test_limit"),
                "methods": methods,
            },
        }
    record = _model_record(config, model, role)
    roles = set(scores.loc[scores["model"] == model, "role"])
    result: dict[str, Any] = {
        "results": results,
        "group_subtasks": {},
        "configs": configs,
        "versions": versions,
        "higher_is_better": higher_is_better,
        "n-samples": n_samples,
        "config": {
            "model": "softeval",
            "model_args": record["model_args"],
            **{k: record[k] for k in ("model_revision", "model_dtype") if k in record},
            "batch_size": _setting(config, "evaluation.generate", "batch_size"),
            "limit": _setting(config, "evaluation", "test_limit"),
            "bootstrap_iters": 0,  # the stderrs are the closed form of a mean's (STDERR_NOTE)
            "gen_kwargs": {
                "do_sample": False,
                "max_new_tokens": _setting(config, "evaluation.generate", "max_new_tokens"),
            },
            "random_seed": _setting(config, "", "seed"),
            "numpy_seed": _setting(config, "", "seed"),
            "torch_seed": _setting(config, "", "seed"),
            "fewshot_seed": _setting(config, "", "seed"),
        },
        "model_source": "softeval",
        "model_name": record["model_name"],
        "model_name_sanitized": sanitize_model_name(record["model_name"]),
        "softeval": {
            "version": softeval.__version__,
            "model": model,
            "role": role,
            "chat_template": record.get("chat_template", False),
            "twin": next((results_file_name(model, r) for r in ROLES if r != role and r in roles), None),
            "keys": KEY_NOTE,
            "stderr": STDERR_NOTE,
            "intervals": intervals,
            "intervals_note": "95% percentile-bootstrap interval over the test examples (softeval's aggregate)",
            "llm_judged": judged,
            "final_step": finals,
        },
    }
    if date is not None:
        result["date"] = float(date)
    return result


def write_lm_eval_results(
    scores: pd.DataFrame,
    out_dir: Path | str,
    *,
    models: Sequence[str] | None = None,
    task_meta: Mapping[str, Mapping[str, Any]] | None = None,
    config: Mapping[str, Any] | None = None,
    final_step: int | None = None,
    all_steps: bool = False,
    date: float | None = None,
) -> list[Path]:
    """One results file per model and role in the table (or of `models`), written atomically;
    returns their paths (results_<model>.json, results_<model>.post.json)."""
    out = Path(out_dir)
    pairs = sorted({(str(m), str(r)) for m, r in zip(scores["model"], scores["role"], strict=True)})
    if models is not None:
        missing = sorted(set(models) - {m for m, _ in pairs})
        if missing:
            raise InputError(f"the score table has no rows of model {missing[0]!r}; run the workflow for it first")
        pairs = [(m, r) for m, r in pairs if m in set(models)]
    written = []
    for model, role in pairs:
        data = lm_eval_results(
            scores,
            model,
            role,
            task_meta=task_meta,
            config=config,
            final_step=final_step,
            all_steps=all_steps,
            date=date,
        )
        path = out / results_file_name(model, role)
        atomic_write_json(path, data)
        written.append(path)
    return written


def read_task_meta(paths: Sequence[Path | str]) -> dict[str, dict[str, Any]]:
    """task -> its results/data/<task>/meta.json."""
    metas = {}
    for path in paths:
        meta = read_json(path)
        if not isinstance(meta, dict) or "task" not in meta:
            raise InputError(
                f"{path}: not a task's meta.json (no 'task' key); delete it so the prepare rule rewrites it"
            )
        metas[str(meta["task"])] = meta
    return metas
