"""Output others can read: lm-evaluation-harness results files, TensorBoard event files and a
Weights & Biases run, all made from the tidy score table (`aggregate`: results/tables/scores.parquet).

lm-evaluation-harness (`write_lm_eval_results`): one `results_<model>.json` per model (its base
role) and `results_<model>.post.json` for a post-trained twin (a model may be base-only; '.' is
no slug character, so no model's name collides with another's twin), in the layout of the
harness's own results file (`simple_evaluate` + `EvaluationTracker`): `results`, `configs`,
`versions`, `higher_is_better`, `n-samples`, `group_subtasks`, `config`, `model_name` (and `date` when asked).
Each task's entry holds `"<metric>,<filter>"` keys with `"<metric>_stderr,<filter>"` beside them,
where the harness's filter slot names softeval's method:

- `knowledge,soft_prompt`, `format,few_shot`, `strict,zero_shot`: softeval's three accuracies
  (`soft_prompt` is the final tuning step; with `all_steps`, snapshots as `soft_prompt@step<N>`);
- `exact_match,soft_prompt:strict-match`, `math_verify,zero_shot`: lm-evaluation-harness's
  scores of the same responses (the aggregate's `lm_eval:<metric>[,<filter>]` columns; the
  harness's own filter follows the method after ':');
- `options_acc,few_shot`, `options_acc_norm,...`: the harness's acc / acc_norm over softeval's
  option continuations (`options:<name>` columns), under a name of their own: not the harness's.

Every stderr is the harness's for a mean of 0/1 scores (`lm_eval.api.metrics.mean_stderr`: the
sample standard deviation over sqrt(n), i.e. sqrt(p(1-p)/(n-1))), computed from the accuracy and
n; "N/A" for n < 2, as the harness writes it. softeval's 95% percentile-bootstrap intervals are
in the file's `softeval` block (`intervals`), which lm-eval's readers ignore. The harness has one
shot count per task (`n-shot`) and softeval's methods differ in it, so the file leaves `n-shot`
out (lm-eval's readers treat it as optional) and says each method's in `configs[task].metadata`.

TensorBoard (`export_tensorboard`) and W&B (`export_wandb`, offline by default) are optional
(`pip install "softeval[tracking]"`); see their docstrings for the tags and keys they write.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pandas as pd

import softeval
from softeval.analysis.aggregate import METRICS
from softeval.io import atomic_directory, atomic_write_json, check_slug, read_json
from softeval.layout import SOFT_PROMPT
from softeval.layout import results_file_name as layout_results_file_name
from softeval.schema import InputError

METHODS = ("zero_shot", "few_shot", SOFT_PROMPT)
ROLES = ("base", "post")
HARNESS_PREFIXES = ("lm_eval", "options")
NOT_AVAILABLE = "N/A"  # what the harness writes for a stderr it cannot compute
STDERR_NOTE = (
    "sqrt(p(1-p)/(n-1)) over the test examples' 0/1 scores: lm-evaluation-harness's mean_stderr "
    "(sample standard deviation / sqrt(n)); N/A for n < 2"
)
KEY_NOTE = (
    "results keys are '<metric>,<method>' (soft_prompt: the final tuning step; other snapshots "
    "'soft_prompt@step<N>'); lm-evaluation-harness's own scores of the same responses are "
    "'<metric>,<method>:<harness filter>' (or '<metric>,<method>' when it has none); options_acc and "
    "options_acc_norm are the harness's acc / acc_norm over softeval's option continuations"
)
TRACKING_HINT = 'pip install "softeval[tracking]" (tensorboard and wandb)'


# ----------------------------------------------------------------------------- lm-evaluation-harness


def results_file_name(model: str, role: str = "base") -> str:
    """layout.results_file_name, the model's name checked first (it becomes a path)."""
    check_slug(model, "model")
    return layout_results_file_name(model, role)


def binary_stderr(accuracy: float, n: int) -> float | str:
    """The harness's stderr of a mean of n 0/1 scores with mean `accuracy`: sqrt(p(1-p)/(n-1))."""
    if n < 2:
        return NOT_AVAILABLE
    return math.sqrt(max(0.0, accuracy * (1.0 - accuracy)) / (n - 1))


def method_filter(method: str, step: int | None, final_step: int | None) -> str:
    """The filter slot of a method's keys: the method, or soft_prompt@step<N> off the final step."""
    if method == SOFT_PROMPT and step != final_step:
        return f"{SOFT_PROMPT}@step{step}"
    return method


def harness_metric(column: str) -> tuple[str, str | None]:
    """An aggregate column of the harness's scores as (metric, harness filter):
    'lm_eval:exact_match,strict-match' -> ('exact_match', 'strict-match'); 'lm_eval:math_verify'
    -> ('math_verify', None); 'options:acc' -> ('options_acc', None)."""
    prefix, _, name = column.partition(":")
    metric, _, harness_filter = name.partition(",")
    if prefix == "options":
        metric = f"options_{metric}"
    return metric, harness_filter or None


def harness_columns(scores: pd.DataFrame) -> list[str]:
    """The aggregate's lm_eval:<name> and options:<name> columns."""
    return [c for c in scores.columns if ":" in c and c.partition(":")[0] in HARNESS_PREFIXES]


def _step(value: Any) -> int | None:
    return None if value is None or pd.isna(value) else int(value)


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


def sanitize_model_name(name: str) -> str:
    """lm-evaluation-harness's folder-safe model name (lm_eval.utils.sanitize_model_name)."""
    return re.sub(r"[\"<>:/|\\?*\[\]]+", "__", name)


def _add(entry: dict[str, Any], metric: str, filter_: str, value: float, n: int) -> None:
    entry[f"{metric},{filter_}"] = float(value)
    entry[f"{metric}_stderr,{filter_}"] = binary_stderr(float(value), n)


def lm_eval_results(
    scores: pd.DataFrame,
    model: str,
    role: str = "base",
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
            shots = few_shot_k if method == "few_shot" else 0
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


# ----------------------------------------------------------------------------- shared by the trackers


def read_curves(softprompts_root: Path | str) -> pd.DataFrame:
    """Every soft prompt's tuning curve under results/softprompts (<model>/<role>/<task>/curve.csv)
    as one table: model, role, task, step, loss, lr."""
    frames = []
    for path in sorted(Path(softprompts_root).glob("*/*/*/curve.csv")):
        model, role, task = path.parent.relative_to(softprompts_root).parts
        try:
            curve = pd.read_csv(path)
        except (OSError, ValueError) as err:
            raise InputError(
                f"{path}: unreadable tuning curve ({err}); delete it so the tune rule rewrites it"
            ) from None
        if "step" not in curve or "loss" not in curve:
            raise InputError(f"{path}: a tuning curve needs 'step' and 'loss' columns; delete it to retune")
        frames.append(curve.assign(model=model, role=role, task=task))
    columns = ["model", "role", "task", "step", "loss", "lr"]
    if not frames:
        return pd.DataFrame(columns=columns)
    table = pd.concat(frames, ignore_index=True)
    return table[[c for c in columns if c in table.columns]]


def read_leaderboard(path: Path | str) -> pd.DataFrame:
    """results/tables/leaderboard.csv, its caption (the first paragraph of leaderboard.md beside it)
    in the table's attrs, as build_leaderboard leaves it."""
    path = Path(path)
    try:
        table = pd.read_csv(path)
    except (OSError, ValueError) as err:
        raise InputError(f"{path}: unreadable leaderboard ({err}); delete it so the workflow rewrites it") from None
    markdown = path.with_suffix(".md")
    if markdown.is_file():
        table.attrs["caption"] = markdown.read_text(encoding="utf-8").split("\n\n", 1)[0].strip()
    return table


def _unit_values(scores: pd.DataFrame) -> Iterator[tuple[dict[str, Any], str, float]]:
    """(row, measure, value) of every unit: the three accuracies and the harness's scores."""
    columns = harness_columns(scores)
    for row in scores.to_dict("records"):
        for measure in [*METRICS, *columns]:
            value = row.get(measure)
            if value is not None and not pd.isna(value):
                yield row, measure, float(value)


def _final_steps(scores: pd.DataFrame) -> dict[tuple[str, str, str], int]:
    prompts = scores[scores["method"] == SOFT_PROMPT].dropna(subset=["step"])
    return {(m, r, t): int(s) for (m, r, t), s in prompts.groupby(["model", "role", "task"])["step"].max().items()}


def _board_rows(leaderboard: pd.DataFrame | None) -> list[dict[str, Any]]:
    return [] if leaderboard is None else leaderboard.to_dict("records")


def _plain(value: Any) -> Any:
    """A cell as a JSON-able Python value (NaN and NA as None)."""
    if value is None or (not isinstance(value, str | bytes) and pd.api.types.is_scalar(value) and pd.isna(value)):
        return None
    if hasattr(value, "item"):
        return value.item()
    return value


def markdown_table(table: pd.DataFrame, columns: Sequence[str] | None = None) -> str:
    columns = [c for c in (columns or table.columns) if c in table.columns]

    def cell(value: Any) -> str:
        value = _plain(value)
        text = "" if value is None else f"{value:.4f}" if isinstance(value, float) else str(value)
        return text.replace("|", "\\|")

    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(cell(row[c]) for c in columns) + " |" for row in table.to_dict("records")]
    return "\n".join(lines) + "\n"


BOARD_METRICS = ("rank", *METRICS)
BOARD_COLUMNS = ("task", "rank", "place", "model", "method", "n", *METRICS, "vs_above", "flags")


# ----------------------------------------------------------------------------- TensorBoard


def export_tensorboard(
    scores: pd.DataFrame,
    leaderboard: pd.DataFrame | None,
    logdir: Path | str,
    *,
    curves: pd.DataFrame | None = None,
) -> Path:
    """TensorBoard event files of a run, written as one folder that replaces `logdir` whole.

    One TensorBoard run per model and role (<logdir>/<model>/<role>), so a chart overlays the
    models; tags `<measure>/<task>/<method>` for knowledge, format, strict and each harness
    column (lm_eval:<name>, options:<name>), at the soft prompt's tuning step (the snapshots make
    its curve) and at step 0 for zero_shot and few_shot; `tune_loss/<task>` and `tune_lr/<task>`
    per tuning step from `curves` (read_curves); the leaderboard's rank, knowledge, format and
    strict as `leaderboard/<task>/<metric>` in each base model's run (step 0), and the table
    itself as text in the run <logdir>/leaderboard (tag `leaderboard`)."""
    try:
        from torch.utils.tensorboard import SummaryWriter
    except ImportError as err:
        raise InputError(f"TensorBoard export needs the tensorboard package ({err}); {TRACKING_HINT}") from None
    target = Path(logdir)
    writers: dict[tuple[str, str], Any] = {}
    with atomic_directory(target) as tmp:

        def writer(*parts: str) -> Any:
            if parts not in writers:
                writers[parts] = SummaryWriter(log_dir=str(tmp.joinpath(*parts)))
            return writers[parts]

        try:
            for row, measure, value in _unit_values(scores):
                step = _step(row["step"]) or 0
                tag = f"{measure}/{row['task']}/{row['method']}"
                writer(row["model"], row["role"]).add_scalar(tag, value, global_step=step)
            for row in (curves if curves is not None else pd.DataFrame()).to_dict("records"):
                run = writer(row["model"], row["role"])
                run.add_scalar(f"tune_loss/{row['task']}", float(row["loss"]), global_step=int(row["step"]))
                if "lr" in row and not pd.isna(row["lr"]):
                    run.add_scalar(f"tune_lr/{row['task']}", float(row["lr"]), global_step=int(row["step"]))
            board = _board_rows(leaderboard)
            for row in board:
                for metric in BOARD_METRICS:
                    if metric in row and _plain(row[metric]) is not None:
                        tag = f"leaderboard/{row['task']}/{metric}"
                        writer(row["model"], "base").add_scalar(tag, float(row[metric]), global_step=0)
            if leaderboard is not None:
                caption = leaderboard.attrs.get("caption", "Leaderboard of base models")
                writer("leaderboard").add_text(
                    "leaderboard", f"{caption}\n\n{markdown_table(leaderboard, BOARD_COLUMNS)}"
                )
        finally:
            for run in writers.values():
                run.close()
    return target


# ----------------------------------------------------------------------------- Weights & Biases


@contextmanager
def wandb_environment(out_dir: Path, mode: str) -> Iterator[None]:
    """W&B's environment for one export: quiet, no code or git capture, its files under out_dir;
    offline, its cache, config, data and artifact-staging folders there too (not the user's home).
    The variables are put back afterwards."""
    values = {
        "WANDB_DIR": str(out_dir),
        "WANDB_MODE": mode,
        "WANDB_SILENT": "true",
        "WANDB_DISABLE_CODE": "true",
        "WANDB_DISABLE_GIT": "true",
        "WANDB_ERROR_REPORTING": "false",
    }
    if mode == "offline":
        hidden = out_dir / ".wandb-home"
        values |= {
            "WANDB_CACHE_DIR": str(hidden / "cache"),
            "WANDB_CONFIG_DIR": str(hidden / "config"),
            "WANDB_DATA_DIR": str(hidden / "data"),
            "WANDB_ARTIFACT_DIR": str(hidden / "artifacts"),
        }
    saved = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def _wandb_settings(wandb: Any) -> Any:
    wanted = {
        "silent": True,
        "console": "off",
        "save_code": False,
        "disable_git": True,
        "disable_job_creation": True,
        "x_disable_stats": True,
        "x_disable_meta": True,
        "x_disable_machine_info": True,
        "x_save_requirements": False,
        "reinit": "create_new",  # never log into (or finish) a run of the caller's
    }
    known = getattr(wandb.Settings, "model_fields", None)
    return wandb.Settings(**{k: v for k, v in wanted.items() if known is None or k in known})


def _table(wandb: Any, table: pd.DataFrame) -> Any:
    columns = [str(c) for c in table.columns]
    data = [[_plain(v) for v in row] for row in table.itertuples(index=False, name=None)]
    return wandb.Table(columns=columns, data=data)


def export_wandb(
    scores: pd.DataFrame,
    leaderboard: pd.DataFrame | None,
    out_dir: Path | str,
    project: str,
    run_name: str,
    mode: str = "offline",
    *,
    curves: pd.DataFrame | None = None,
    config: Mapping[str, Any] | None = None,
) -> Path:
    """One W&B run (`project`, `run_name`) of the scores; returns its folder
    (<out_dir>/wandb/<offline->run-<time>-<id>; `wandb sync <folder>` uploads an offline one).

    Summary keys `<model>/<role>/<task>/<method>/<measure>` (soft_prompt at its final step) for
    knowledge, format, strict and each harness column; `leaderboard/<task>/<model>/<metric>` for
    the leaderboard's rank, knowledge, format and strict. History (x axis `tune_step`):
    `tune/<model>/<role>/<task>/<metric>` at each soft-prompt snapshot and
    `tune/<model>/<role>/<task>/loss` (and `lr`) per tuning step from `curves`. Tables `scores`
    (the whole aggregate table) and `leaderboard`. The run's config: `config` as given, plus the
    models, roles, tasks and methods of the table."""
    try:
        import wandb
    except ImportError as err:
        raise InputError(f"W&B export needs the wandb package ({err}); {TRACKING_HINT}") from None
    if mode not in ("offline", "online", "disabled"):
        raise InputError(f"W&B mode {mode!r}; use offline (no network), online or disabled")
    out = Path(out_dir).resolve()
    out.mkdir(parents=True, exist_ok=True)
    finals = _final_steps(scores)
    summary: dict[str, float] = {}
    history: dict[int, dict[str, float]] = {}
    for row, measure, value in _unit_values(scores):
        unit = f"{row['model']}/{row['role']}/{row['task']}"
        step = _step(row["step"])
        if row["method"] == SOFT_PROMPT and step is not None:
            if measure in METRICS:
                history.setdefault(step, {})[f"tune/{unit}/{measure}"] = value
            if step != finals.get((row["model"], row["role"], row["task"])):
                continue
        summary[f"{unit}/{row['method']}/{measure}"] = value
    for row in (curves if curves is not None else pd.DataFrame()).to_dict("records"):
        unit = f"tune/{row['model']}/{row['role']}/{row['task']}"
        history.setdefault(int(row["step"]), {})[f"{unit}/loss"] = float(row["loss"])
        if "lr" in row and not pd.isna(row["lr"]):
            history[int(row["step"])][f"{unit}/lr"] = float(row["lr"])
    for row in _board_rows(leaderboard):
        for metric in BOARD_METRICS:
            if metric in row and _plain(row[metric]) is not None:
                summary[f"leaderboard/{row['task']}/{row['model']}/{metric}"] = float(row[metric])
    run_config = {
        "softeval_version": softeval.__version__,
        "models": sorted(set(scores["model"])),
        "roles": sorted(set(scores["role"])),
        "tasks": sorted(set(scores["task"])),
        "methods": [m for m in METHODS if m in set(scores["method"])],
        **({"config": dict(config)} if config else {}),
    }
    others = wandb.run is not None  # the caller's own run: keep W&B's service up for it
    with wandb_environment(out, mode):
        run = wandb.init(
            project=project,
            name=run_name,
            dir=str(out),
            mode=mode,
            config=run_config,
            settings=_wandb_settings(wandb),
        )
        try:
            run.define_metric("tune_step")
            run.define_metric("tune/*", step_metric="tune_step")
            for step in sorted(history):
                run.log({"tune_step": step, **history[step]})
            tables = {"scores": _table(wandb, scores)}
            if leaderboard is not None:
                tables["leaderboard"] = _table(wandb, leaderboard)
            run.log(tables)
            run.summary.update(summary)
            folder = Path(run.dir).parent
        except BaseException:
            run.finish(exit_code=1)
            raise
        run.finish()
        if not others:
            # finish() can return before W&B's service has written the run's last records (its
            # transaction log was seen empty right after it); teardown waits for the service, so
            # the folder is complete when this returns (the next init starts a new one, ~0.5 s).
            wandb.teardown()
    return folder


# ----------------------------------------------------------------------------- command line
