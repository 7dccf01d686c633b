"""Fail before GPU time: everything the workflow would reject, found before any job runs.

`preflight` runs the config's checks (softeval.config.check_config: the schema, cross-references,
model folders), looks hub models up in the local Hugging Face cache where jobs cannot download
them (HF_HUB_OFFLINE or TRANSFORMERS_OFFLINE set), then builds the whole run plan and asks it
everything the rules will (targets, every job's inputs and settings). Whatever fails is one
InputError line naming the file or flag, the key and the fix; no traceback, no job started.
`softeval check-config`, `softeval run` and the Snakefile (workflow/rules/common.smk) call it.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from softeval.config import Source, check_config, checkpoint_problem, local_model_folder, namer
from softeval.layout import world_file
from softeval.names import ROLES
from softeval.plan import Plan
from softeval.schema import InputError

OFFLINE_FLAGS = ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")


def preflight(
    config: dict[str, Any],
    source: Source,
    workflow_root: Path | str,
    workdir: Path | str | None = None,
    uncached: str = "error",
) -> Plan:
    """Check `config` (in place: defaults filled, as check_config does) and return its plan.

    `source`: the config file's name, or softeval.config.ConfigSources (the files and --config
    overrides, so a line names the one that set the key); `workdir`: where the jobs run (default:
    the current folder), which local model folders and results/ are relative to; `uncached`:
    what a hub id missing from the cache is when offline, "error" (check-config, softeval run)
    or "warn" (the Snakefile: a dry run or a rule graph plans a config whose models a login node
    has not downloaded; a job that loads one fails with the same line)."""
    root = Path(workflow_root)
    work = Path(workdir) if workdir is not None else Path.cwd()
    name = str(source)
    with one_line(name):
        check_config(config, source, root, work)
        try:
            check_hub_models(config, namer(source), work)
        except InputError as err:
            if uncached == "error":
                raise
            print(f"warning: {err}", file=sys.stderr)
    try:
        with one_line(name):
            plan = Plan.from_config(config, root, work)
            ask_everything(plan)
    except InputError as err:
        message = str(err)
        raise InputError(message if message.startswith(f"{name}: ") else f"{name}: {message}") from None
    return plan


@contextmanager
def one_line(source: str) -> Iterator[None]:
    """InputError passes; any other exception becomes one InputError line naming `source` (a
    command that checks a config never prints a traceback)."""
    try:
        yield
    except InputError:
        raise
    except Exception as err:  # the point: one line, whatever the plan trips on
        reason = (str(err).splitlines() or [""])[0]
        raise InputError(
            f"{source}: the run cannot be planned ({type(err).__name__}: {reason}); fix the config, "
            "or report it as a bug if the config is valid"
        ) from None


def ask_everything(plan: Plan) -> None:
    """What the rules ask the plan while Snakemake builds the DAG, asked once now."""
    plan.targets()
    plan.benchmark_files()
    plan.validation_task_files()
    plan.published_record()
    for task in plan.task_names:
        plan.prepare_inputs(task)
        plan.prepare_arguments(task, world_file())
    for model, role, task in plan.unit_triples():
        plan.model_ref(model, role)
        plan.model_inputs(model, role)
        plan.model_options(model, role)
        plan.judge_inputs(model, role, task)
    for model in plan.models:
        for key in plan.model_resource_keys:
            plan.resource(model, key)
    for model in plan.models_of_kind("gguf"):
        plan.gguf_file(model)
    plan.world_settings()
    if plan.zoo_models:
        for section in ("tokenizer", "probe"):
            plan.zoo_settings(section)
        plan.posttrain_settings()
        plan.zoo_report_settings()
    for model in plan.zoo_models:
        plan.pretrain_settings(model)
    plan.random_vocabularies()
    for settings in (plan.tune_settings, plan.generate_settings, plan.loglik_settings, plan.judge_settings):
        settings()
    plan.aggregate_settings()
    plan.analysis_settings()


# ---- hub models where jobs cannot download ----------------------------------------------------
def offline_flag() -> str | None:
    """The environment variable that keeps jobs off the network (huggingface_hub's reading), if any."""
    for name in OFFLINE_FLAGS:
        if os.environ.get(name, "").strip().upper() in {"1", "ON", "YES", "TRUE"}:
            return name
    return None


def hub_cache() -> Path:
    """The Hugging Face cache the jobs read (read now, as a job's huggingface_hub reads it at import)."""
    for name in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE"):
        if os.environ.get(name):
            return Path(os.environ[name]).expanduser()
    if os.environ.get("HF_HOME"):
        return Path(os.environ["HF_HOME"]).expanduser() / "hub"
    from huggingface_hub import constants

    return Path(constants.HF_HUB_CACHE)


def check_hub_models(config: dict[str, Any], where: Callable[[str], str], workdir: Path) -> None:
    """Offline, every hub id must be in the cache with its weights; online, a job downloads it
    (nothing is looked up: a lookup would need the network, and a private model a token)."""
    flag = offline_flag()
    if flag is None:
        return
    cache = hub_cache()
    for index, model in enumerate(config["models"]):
        for role in ROLES:
            entry = model.get(role)
            if not isinstance(entry, dict) or "id" not in entry or local_model_folder(entry["id"], workdir):
                continue
            key, model_id = f"models[{index}].{role}.id", entry["id"]
            revision = entry.get("revision", "main")
            problem = cached_problem(
                model_id, revision, cache, bool(model.get("bin_weights")), f"models[{index}]", flag
            )
            if problem:
                raise InputError(
                    f"{where(key)}: key '{key}' is {model_id!r} (revision {revision}): {flag} is set and {problem}"
                )


def cached_problem(
    model_id: str, revision: str, cache: Path, bin_weights: bool, entry_key: str, flag: str = "HF_HUB_OFFLINE"
) -> str | None:
    """Why no job could load `model_id` at `revision` from the cache alone (None: it can)."""
    from huggingface_hub import snapshot_download

    download = f"hf download {model_id} --revision {revision}"
    try:
        snapshot = Path(snapshot_download(model_id, revision=revision, cache_dir=cache, local_files_only=True))
    except (OSError, ValueError):  # LocalEntryNotFoundError (an OSError); a bad revision
        return (
            f"the Hugging Face cache ({cache}) does not hold it, so no job could load it; "
            f"download it first ({download}) or unset {flag}"
        )
    found = checkpoint_problem(snapshot, bin_weights, entry_key)
    if found:
        return f"the cached copy ({snapshot}) is incomplete: {found[0]}; download it again ({download})"
    return None
