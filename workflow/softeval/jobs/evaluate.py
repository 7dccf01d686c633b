"""The evaluate job: every output of one model on one task, with the model loaded once.

A unit's plain methods (zero-shot, few-shot) or its soft-prompt snapshots, each as greedy
responses and, on a closed task, option log-likelihoods. Each output is the file the
single-method `generate` and `loglik` jobs write, with the same provenance; one job instead
of up to four saves a model load and the start-up of a Python process with torch each time.
"""

from __future__ import annotations

import gc
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from softeval.data.tasks import Task
from softeval.engine.backends import backend_for
from softeval.engine.backoff import free_memory
from softeval.engine.models import ModelOptions
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


@dataclass(frozen=True)
class MethodOutputs:
    """One method's outputs: one file per soft-prompt step (keyed by step), else one (key None)."""

    method: str
    generations: dict[int | None, Path]
    logliks: dict[int | None, Path]
    prompt_files: dict[int, Path]


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
