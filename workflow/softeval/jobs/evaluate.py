"""`softeval evaluate` (rules evaluate and evaluate_soft_prompt): every output of one model on
every task, with the model loaded once.

Per task, the plain methods (zero-shot, few-shot) or the soft-prompt snapshots, each as greedy
responses and, on a closed task, option log-likelihoods. Each output is the file that one
method's `run_generate` or `run_loglik` alone writes on that task, with the same provenance; one
job per model x role instead of one per method and task saves a model load and the start-up of
a Python process with torch each time (most of a small model's job: benchmarks/README.md).
"""

from __future__ import annotations

import argparse
import gc
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from softeval.data.tasks import Task
from softeval.engine.backends import backend_for
from softeval.engine.backoff import free_memory
from softeval.engine.models import ModelOptions
from softeval.jobs.arguments import add_model, add_settings, read_model_options, task_files
from softeval.jobs.common import (
    LoadedModel,
    forget_provenance,
    load_with_chat,
    open_model,
    write_method_outputs,
    write_provenance,
)
from softeval.jobs.generate import generation_rows
from softeval.jobs.loglik import option_rows
from softeval.names import METHODS, SOFT_PROMPT
from softeval.schema import InputError
from softeval.settings import GenerateSettings, LoglikSettings


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_model(parser)
    group = parser.add_argument_group("tasks")
    group.add_argument("--task", nargs="+", required=True, help="one or more task files")
    group.add_argument("--data", nargs="+", required=True, help="each task's folder of prepared splits, in order")
    add_settings(parser, GenerateSettings, flag="--generate-settings")
    add_settings(parser, LoglikSettings, flag="--loglik-settings", default="{}")
    parser.add_argument("--methods", nargs="+", required=True, choices=METHODS)
    group = parser.add_argument_group("soft prompt")
    group.add_argument("--steps", type=int, nargs="*", default=[], help="soft_prompt: snapshot steps")
    group.add_argument(
        "--prompts", nargs="*", default=[], help="soft_prompt: per task in --task order, one prompt file per step"
    )
    parser.add_argument(
        "--generations",
        nargs="+",
        required=True,
        help="JSONL: per task in --task order, one per method (or per soft-prompt step)",
    )
    parser.add_argument(
        "--logliks", nargs="*", default=[], help="JSONL: per closed task in --task order, one per method (or step)"
    )


def run(args: argparse.Namespace) -> None:
    generate_settings = GenerateSettings.parse(args.generate_settings, "evaluate --generate-settings")
    loglik_settings = LoglikSettings.parse(args.loglik_settings, "evaluate --loglik-settings") if args.logliks else None
    if len(args.task) != len(args.data):
        raise InputError("evaluate: give one --data folder per --task file, in the same order")
    tasks = task_outputs(
        task_files(args.task),
        [Path(d) for d in args.data],
        args.methods,
        args.steps,
        args.prompts,
        args.generations,
        args.logliks,
    )
    run_evaluate(
        model=args.model,
        model_options=read_model_options(args),
        tasks=tasks,
        generate_settings=generate_settings,
        loglik_settings=loglik_settings,
        threads=args.threads,
    )


@dataclass(frozen=True)
class MethodOutputs:
    """One method's outputs: one file per soft-prompt step (keyed by step), else one (key None)."""

    method: str
    generations: dict[int | None, Path]
    logliks: dict[int | None, Path]
    prompt_files: dict[int, Path]


def method_outputs(
    methods: list[str], steps: list[int], prompts: list[str], generations: list[str], logliks: list[str]
) -> list[MethodOutputs]:
    """The outputs the flags name: plain methods with one --generations file each, or soft_prompt
    alone with one per --steps and --prompts; a closed task's --logliks beside each generation file."""
    if len(set(methods)) != len(methods):
        raise InputError(f"evaluate: --methods names a method twice: {' '.join(methods)}")
    if logliks and len(logliks) != len(generations):
        raise InputError("evaluate: give as many --logliks as --generations (or none, for an open task)")
    loglik_paths = [Path(p) for p in logliks] or [None] * len(generations)
    if SOFT_PROMPT in methods:
        if methods != [SOFT_PROMPT] or not (len(steps) == len(prompts) == len(generations)):
            raise InputError(
                "evaluate --methods soft_prompt (alone): give as many --steps and --prompts as --generations"
            )
        keys: list[int | None] = list(steps)
        return [
            MethodOutputs(
                SOFT_PROMPT,
                dict(zip(keys, map(Path, generations), strict=True)),
                {k: p for k, p in zip(keys, loglik_paths, strict=True) if p is not None},
                {step: Path(p) for step, p in zip(steps, prompts, strict=True)},
            )
        ]
    if len(generations) != len(methods) or prompts or steps:
        raise InputError("evaluate: give one --generations file per method, and no --steps or --prompts")
    return [
        MethodOutputs(m, {None: Path(g)}, {None: ll} if ll is not None else {}, {})
        for m, g, ll in zip(methods, generations, loglik_paths, strict=True)
    ]


@dataclass(frozen=True)
class TaskOutputs:
    """One task's part of an evaluate job: the task, its prepared splits and each method's outputs."""

    task: Task
    data_dir: Path
    methods: list[MethodOutputs]


def task_outputs(
    tasks: list[Task],
    data_dirs: list[Path],
    methods: list[str],
    steps: list[int],
    prompts: list[str],
    generations: list[str],
    logliks: list[str],
) -> list[TaskOutputs]:
    """The flags' flat lists cut per task (in --task order): as many --generations per task as
    methods (soft_prompt: steps), as many --prompts as steps, and --logliks for the closed tasks
    only (or none at all: responses alone)."""
    soft = SOFT_PROMPT in methods
    per_task = len(steps) if soft else len(methods)
    closed = [task for task in tasks if task.closed]
    if len(generations) != len(tasks) * per_task:
        each = "one per --steps value" if soft else "one per --methods value"
        raise InputError(
            f"evaluate: {len(generations)} --generations files for {len(tasks)} tasks; give {per_task} per task "
            f"({each}), task by task in --task order"
        )
    if prompts and len(prompts) != len(tasks) * len(steps):
        raise InputError(f"evaluate: give {len(steps)} --prompts per task (one per --steps), task by task")
    if logliks and len(logliks) != len(closed) * per_task:
        raise InputError(
            f"evaluate: {len(logliks)} --logliks files; give {per_task} per closed task "
            f"({', '.join(t.name for t in closed) or 'none here'}), in --task order"
        )
    out, closed_seen = [], 0
    for i, (task, data_dir) in enumerate(zip(tasks, data_dirs, strict=True)):
        lls: list[str] = []
        if task.closed and logliks:
            lls = logliks[closed_seen * per_task : (closed_seen + 1) * per_task]
            closed_seen += 1
        task_prompts = prompts[i * len(steps) : (i + 1) * len(steps)] if prompts else []
        gens = generations[i * per_task : (i + 1) * per_task]
        out.append(TaskOutputs(task, data_dir, method_outputs(methods, steps, task_prompts, gens, lls)))
    return out


def run_evaluate(
    *,
    model: str,
    model_options: ModelOptions | None = None,
    tasks: list[TaskOutputs],
    generate_settings: GenerateSettings,
    loglik_settings: LoglikSettings | None,
    threads: int,
) -> None:
    """Option log-likelihoods first, then responses, for every task and method given.

    A backend with an engine of its own (vLLM) starts after the Hugging Face model that scored
    the options is freed, reference cycles included (the engine takes a fixed share of GPU
    memory, and checks that it is free: softeval.engine.vllm_backend); otherwise one model
    does both. loglik_settings may be None when no method writes option log-likelihoods.
    Each output is computed from its own unit alone (its prompts, its seed), so its bytes do not
    depend on the tasks evaluated before it in the job.
    """
    for t in tasks:
        if any(m.logliks for m in t.methods) and not t.task.closed:
            raise InputError(f"task {t.task.name} is open; option log-likelihoods exist for closed tasks only")
    options = model_options or ModelOptions()
    outs = [out for t in tasks for m in t.methods for out in (*m.generations.values(), *m.logliks.values())]
    metas: dict[Path, dict[str, Any]] = {}
    loaded: LoadedModel | None = None
    scores_options = any(m.logliks for t in tasks for m in t.methods)
    if scores_options:
        if loglik_settings is None:
            raise InputError("evaluate: option log-likelihoods need --loglik-settings")
        loaded = open_model(model, options, threads, load_with_chat)
    forget_provenance(outs)
    for t in tasks:
        for m in t.methods:
            if m.logliks and loaded is not None and loglik_settings is not None:
                metas |= write_method_outputs(
                    job="loglik",
                    loaded=loaded,
                    task=t.task,
                    data_dir=t.data_dir,
                    method=m.method,
                    prompt_files=m.prompt_files,
                    outs=m.logliks,
                    settings=loglik_settings,
                    make_rows=option_rows(loglik_settings, t.task),
                )
    if any(m.generations for t in tasks for m in t.methods):
        backend = backend_for(generate_settings)
        if loaded is None or not backend.uses_hf_model:
            loaded = None
            gc.collect()  # a model in a reference cycle (modules <-> hooks) is freed only by the collector
            free_memory()  # and its cached blocks go back to the GPU before an engine takes its share
            soft_prompt = any(m.method == SOFT_PROMPT for t in tasks for m in t.methods)
            loaded = open_model(model, options, threads, partial(backend.load, soft_prompt=soft_prompt))
        for t in tasks:
            make_rows = generation_rows(generate_settings, t.data_dir)
            for m in t.methods:
                metas |= write_method_outputs(
                    job="generate",
                    loaded=loaded,
                    task=t.task,
                    data_dir=t.data_dir,
                    method=m.method,
                    prompt_files=m.prompt_files,
                    outs=m.generations,
                    settings=generate_settings,
                    make_rows=make_rows,
                )
    write_provenance(metas)
