"""`softeval tune` (rule tune): one model loaded once, one soft prompt trained per task on its
train split, each written with its record (loading the model is most of a small job's time)."""

from __future__ import annotations

import argparse
import hashlib
import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from softeval.data.splits import load_split
from softeval.data.tasks import Task
from softeval.engine.methods import ChatWrap, build_prompts, response_target
from softeval.engine.models import ModelOptions, model_identity
from softeval.engine.softprompt import TuneSettings, export_peft, lr_factor, save_prompt, tune
from softeval.io import atomic_write_json, atomic_write_text
from softeval.jobs.arguments import add_model, add_settings, read_model_options, task_files
from softeval.jobs.common import load_with_chat
from softeval.layout import snapshot_name
from softeval.names import ZERO_SHOT
from softeval.provenance import provenance
from softeval.schema import InputError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_model(parser)
    group = parser.add_argument_group("tasks")
    group.add_argument("--task", nargs="+", required=True, help="one or more task files")
    group.add_argument("--data", nargs="+", required=True, help="each task's folder of prepared splits")
    add_settings(parser, TuneSettings)
    parser.add_argument(
        "--out-dir", nargs="+", required=True, help="per task: prompt.safetensors, snapshots, curve, meta, peft/"
    )


def run(args: argparse.Namespace) -> None:
    if not (len(args.task) == len(args.data) == len(args.out_dir)):
        raise InputError("tune: give as many --data and --out-dir folders as --task files, in the same order")
    config = TuneSettings.parse(args.settings, "tune")
    units = [
        TuneUnit(task, Path(data), Path(out))
        for task, data, out in zip(task_files(args.task), args.data, args.out_dir, strict=True)
    ]
    run_tunes(
        model=args.model, model_options=read_model_options(args), units=units, config=config, threads=args.threads
    )


def chat_record(tokenizer: Any, chat: ChatWrap) -> dict[str, str]:
    """Which chat template a prompt was trained inside: the template's hash and the text around the user turn."""
    template = (
        tokenizer.chat_template if isinstance(tokenizer.chat_template, str) else json.dumps(tokenizer.chat_template)
    )
    return {"sha256": hashlib.sha256(template.encode()).hexdigest()[:16], "head": chat.head, "tail": chat.tail}


@dataclass(frozen=True)
class TuneUnit:
    """One task's prompt to train: the task, its prepared splits and the folder its files go to."""

    task: Task
    data_dir: Path
    out_dir: Path


def run_tunes(
    *,
    model: str,
    units: list[TuneUnit],
    config: TuneSettings,
    threads: int,
    model_options: ModelOptions | None = None,
) -> list[dict[str, Any]]:
    """Load the model once, then train and write every unit's prompt in turn (run_tune's files).

    Each prompt starts from its own seeded state (tune() seeds its generator and its batch
    order from the settings), so a prompt's bytes do not depend on the tasks trained before it.
    """
    start = time.perf_counter()
    options = model_options or ModelOptions()
    loaded = load_with_chat(model, options, threads)
    load_seconds = round(time.perf_counter() - start, 2)
    return [tune_unit(model, loaded, unit, config, options, load_seconds) for unit in units]


def run_tune(
    *,
    model: str,
    task: Task,
    data_dir: Path,
    config: TuneSettings,
    threads: int,
    out_dir: Path,
    model_options: ModelOptions | None = None,
) -> dict[str, Any]:
    """Train one task's prompt (run_tunes with one unit)."""
    unit = TuneUnit(task, Path(data_dir), Path(out_dir))
    return run_tunes(model=model, units=[unit], config=config, threads=threads, model_options=model_options)[0]


def tune_unit(
    ref: str, loaded: Any, unit: TuneUnit, config: TuneSettings, options: ModelOptions, load_seconds: float
) -> dict[str, Any]:
    """Write prompt.safetensors, step<N>.safetensors, curve.csv, meta.json and peft/ to the unit's folder.

    The soft prompt learns from the same prompts the soft_prompt method is evaluated with (the
    zero-shot text, inside the chat template when the model entry asks for it).
    """
    start = time.perf_counter()
    task, out_dir = unit.task, unit.out_dir
    model, tokenizer, chat = loaded
    train = [dict(row) for row in load_split(unit.data_dir, "train")]
    prompts = build_prompts(task, ZERO_SHOT, train, chat=chat).prompts
    pairs = [(prompt, response_target(task.target(ex), chat)) for prompt, ex in zip(prompts, train, strict=True)]
    identity = model_identity(ref, model, options)
    recorded: dict[str, Any] = {"tune": config.as_dict(), "task": task.name, "task_version": task.version}
    if chat is not None:  # the prompt learnt to sit inside this template: an adapter says which
        recorded["chat_template"] = chat_record(tokenizer, chat)
    record = provenance(recorded, seed=config.seed, **identity)
    # the tensor file keeps what determines its numbers; the code commit, config files and
    # machine (record["run"]) go to meta.json beside it, so equal prompts stay equal bytes
    stamp = {key: value for key, value in record.items() if key != "run"}

    def write_snapshot(step: int, vectors: Any) -> None:
        save_prompt(out_dir / snapshot_name(step), vectors, {**stamp, "step": step})

    result = tune(model, tokenizer, pairs, config, on_snapshot=write_snapshot)
    final_loss = sum(result.losses[-8:]) / len(result.losses[-8:])
    meta = {
        **record,
        "task": task.name,
        "task_version": task.version,
        "n_train": len(train),
        "final_loss": final_loss,
        "tune_seconds": result.wall_seconds,
        "wall_seconds": round(time.perf_counter() - start, 2),
        "model_load_seconds": load_seconds,
        "steps": config.steps,
        "snapshots": sorted(result.snapshots),
    }
    save_prompt(out_dir / "prompt.safetensors", result.vectors, {**stamp, "step": config.steps})
    chat_meta = {"softeval_chat_template": json.dumps(recorded["chat_template"])} if chat is not None else None
    export_peft(out_dir / "peft", result.vectors, model, ref, chat_meta)
    curve = "".join(
        f"{step},{loss:.6f},{config.lr * lr_factor(step, config):.6g}\n" for step, loss in enumerate(result.losses)
    )
    atomic_write_text(out_dir / "curve.csv", "step,loss,lr\n" + curve)
    atomic_write_json(out_dir / "meta.json", meta)
    return meta
