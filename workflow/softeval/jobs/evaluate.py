"""`softeval evaluate` (rules evaluate, evaluate_closed, evaluate_soft_prompt and
evaluate_soft_prompt_closed): every output of one model on one task, with the model loaded once.

A unit's plain methods (zero-shot, few-shot) or its soft-prompt snapshots, each as greedy
responses and, on a closed task, option log-likelihoods. Each output is the file that one
method's `run_generate` or `run_loglik` alone writes, with the same provenance; one job instead
of up to four saves a model load and the start-up of a Python process with torch each time.
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
from softeval.jobs.arguments import (
    METHOD_CHOICES,
    add_model,
    add_settings,
    add_soft_prompt_steps,
    add_task,
    read_model_options,
    task_file,
)
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
from softeval.schema import InputError
from softeval.settings import GenerateSettings, LoglikSettings


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_model(parser)
    add_task(parser)
    add_settings(parser, GenerateSettings, flag="--generate-settings")
    add_settings(parser, LoglikSettings, flag="--loglik-settings", default="{}")
    parser.add_argument("--methods", nargs="+", required=True, choices=METHOD_CHOICES)
    add_soft_prompt_steps(parser)
    parser.add_argument("--generations", nargs="+", required=True, help="JSONL: one per method, or per step")
    parser.add_argument("--logliks", nargs="*", default=[], help="closed tasks: JSONL, one per --generations file")


def run(args: argparse.Namespace) -> None:
    generate_settings = GenerateSettings.parse(args.generate_settings, "evaluate --generate-settings")
    loglik_settings = LoglikSettings.parse(args.loglik_settings, "evaluate --loglik-settings") if args.logliks else None
    methods = method_outputs(args.methods, args.steps, args.prompts, args.generations, args.logliks)
    run_evaluate(
        model=args.model,
        model_options=read_model_options(args),
        task=task_file(args.task),
        data_dir=Path(args.data),
        methods=methods,
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
    if "soft_prompt" in methods:
        if methods != ["soft_prompt"] or not (len(steps) == len(prompts) == len(generations)):
            raise InputError(
                "evaluate --methods soft_prompt (alone): give as many --steps and --prompts as --generations"
            )
        keys: list[int | None] = list(steps)
        return [
            MethodOutputs(
                "soft_prompt",
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


def run_evaluate(
    *,
    model: str,
    model_options: ModelOptions | None = None,
    task: Task,
    data_dir: Path,
    methods: list[MethodOutputs],
    generate_settings: GenerateSettings,
    loglik_settings: LoglikSettings | None,
    threads: int,
) -> None:
    """Option log-likelihoods first, then responses, for every method given.

    A backend with an engine of its own (vLLM) starts after the Hugging Face model that scored
    the options is freed, reference cycles included (the engine takes a fixed share of GPU
    memory, and checks that it is free: softeval.engine.vllm_backend); otherwise one model
    does both. loglik_settings may be None when no method writes option log-likelihoods.
    """
    if any(m.logliks for m in methods) and not task.closed:
        raise InputError(f"task {task.name} is open; option log-likelihoods exist for closed tasks only")
    options = model_options or ModelOptions()
    outs = [out for m in methods for out in (*m.generations.values(), *m.logliks.values())]
    metas: dict[Path, dict[str, Any]] = {}
    loaded: LoadedModel | None = None
    if any(m.logliks for m in methods):
        if loglik_settings is None:
            raise InputError("evaluate: option log-likelihoods need --loglik-settings")
        loaded = open_model(model, options, threads, load_with_chat)
    forget_provenance(outs)
    common = {"task": task, "data_dir": data_dir}
    for m in methods:
        if m.logliks and loaded is not None and loglik_settings is not None:
            metas |= write_method_outputs(
                job="loglik",
                loaded=loaded,
                method=m.method,
                prompt_files=m.prompt_files,
                outs=m.logliks,
                settings=loglik_settings,
                make_rows=option_rows(loglik_settings, task),
                **common,
            )
    if any(m.generations for m in methods):
        backend = backend_for(generate_settings)
        if loaded is None or not backend.uses_hf_model:
            loaded = None
            gc.collect()  # a model in a reference cycle (modules <-> hooks) is freed only by the collector
            free_memory()  # and its cached blocks go back to the GPU before an engine takes its share
            soft_prompt = any(m.method == "soft_prompt" for m in methods)
            loaded = open_model(model, options, threads, partial(backend.load, soft_prompt=soft_prompt))
        make_rows = generation_rows(generate_settings, data_dir)
        for m in methods:
            metas |= write_method_outputs(
                job="generate",
                loaded=loaded,
                method=m.method,
                prompt_files=m.prompt_files,
                outs=m.generations,
                settings=generate_settings,
                make_rows=make_rows,
                **common,
            )
    write_provenance(metas)
