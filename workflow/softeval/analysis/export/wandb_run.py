"""A Weights & Biases run of a run's scores (`export_wandb`, offline by default), in an environment
that keeps W&B's files out of the user's home (`wandb_environment`); optional:
`pip install "softeval[tracking]"`."""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pandas as pd

import softeval
from softeval.analysis.aggregate import METRICS
from softeval.analysis.export.harness import _step
from softeval.analysis.export.tracking import (
    BOARD_METRICS,
    TRACKING_HINT,
    _board_rows,
    _final_steps,
    _plain,
    _unit_values,
)
from softeval.names import METHODS, SOFT_PROMPT
from softeval.schema import InputError


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
