"""`check_config`: the schema, its defaults, and the checks a schema cannot express (model names
used twice, zoo sizes, snapshot steps, the reference method, the judge's keys, task files, gguf
files, model folders, the published record), each failing with one line that names where the key
was set, the key and the fix.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from softeval.config.lookups import task_dir
from softeval.config.model_folders import _check_model_ids
from softeval.config.sources import ConfigSources, Source, namer, read_override_text
from softeval.data.tasks import load_task, task_names
from softeval.judges.factory import JUDGES
from softeval.model_kinds import kind_of
from softeval.names import BASE, FEW_SHOT, ROLES, SOFT_PROMPT, ZERO_SHOT
from softeval.schema import InputError, fill_defaults, load_schema, validate

DOCS = "config/README.md"
# analysis.reference_method where the config leaves it unset: the first of these that is evaluated
REFERENCE_ORDER = (ZERO_SHOT, FEW_SHOT, SOFT_PROMPT)


def check_config(
    config: dict[str, Any], source: Source, workflow_root: Path, workdir: Path | str | None = None
) -> dict[str, Any]:
    """Validate `config` in place, fill defaults, and check cross-references and the model folders.

    Raises InputError with one line naming the source of the key (`source`: a file name, or
    ConfigSources to name the file or --config override that set it), the key and the fix.
    A local model folder (a model entry's id) is relative to `workdir` (default: the current
    folder, where Snakemake's jobs run).
    """
    where = namer(source)
    if isinstance(source, ConfigSources):
        read_override_text(config, source)
    validate(config, "config", where, DOCS)
    analysis = config.get("analysis")
    reference_given = isinstance(analysis, dict) and "reference_method" in analysis  # before the default fills it
    fill_defaults(config, load_schema("config"))
    names = [m["name"] for m in config["models"]]
    for index, name in enumerate(names):
        if names.index(name) != index:
            key = f"models[{index}].name"
            raise InputError(f"{where(key)}: key '{key}': model name {name!r} is used twice; rename one")
    sizes = config["zoo"]["sizes"]
    for index, model in enumerate(config["models"]):
        _check_model_entry(model, index, where)
        if "zoo" not in model:
            continue
        size = model["zoo"]["size"]
        if size not in sizes:
            key = f"models[{index}].zoo.size"
            raise InputError(
                f"{where(key)}: key '{key}' is {size!r}; use one of {', '.join(sorted(sizes))} "
                "or define it under zoo.sizes"
            )
    for size_name, size in sizes.items():
        if size["width"] % size["heads"]:
            key = f"zoo.sizes.{size_name}"
            raise InputError(f"{where(key)}: key '{key}': width must be a multiple of heads")
    tune = config["evaluation"]["tune"]
    late = [step for step in tune["snapshots"] if step > tune["steps"]]
    if late:
        key = "evaluation.tune.snapshots"
        raise InputError(
            f"{where(key)}: key '{key}' has step {late[0]} after the last step {tune['steps']}; "
            "remove it or raise evaluation.tune.steps"
        )
    if tune["init"] == "text" and not tune.get("init_text"):
        key = "evaluation.tune.init_text"
        raise InputError(f"{where(key)}: key '{key}' is missing; init 'text' needs it")
    _check_reference_method(config, reference_given, where)
    judge = config["evaluation"]["judge"]
    kind = JUDGES.get(judge["name"])
    missing = [key for key in kind.needs if not judge.get(key)]
    if missing:
        key = f"evaluation.judge.{missing[0]}"
        raise InputError(f"{where(key)}: key '{key}' is missing; judge {judge['name']!r} needs a {missing[0]}")
    problem = kind.check(judge) if kind.check else None
    if problem:
        raise InputError(f"{where('evaluation.judge')}: {problem}")
    if judge.get("base_url") and judge.get("base_url_env"):
        raise InputError(f"{where('evaluation.judge')}: evaluation.judge has base_url and base_url_env; keep one")
    folder = task_dir(config, workflow_root)
    sources = set()
    for index, name in enumerate(config["tasks"]):
        if not (folder / f"{name}.yaml").is_file():
            known = ", ".join(task_names(folder)) or "none"
            key = f"tasks[{index}]"
            raise InputError(
                f"{where(key)}: key '{key}' is {name!r} but {folder / name}.yaml does not exist; "
                f"available tasks: {known} (fix the name or add the task file)"
            )
        sources.add(load_task(folder, name).dataset["source"])
    if any("zoo" in m for m in config["models"]) and "world" not in sources:
        raise InputError(
            f"{where('tasks')}: key 'tasks' has no world task, but embedded-zoo models are pre-trained on the world's "
            "tasks; add one (e.g. world_numeric) or use hub models"
        )
    for task in config["evaluation"]["test_limit_per_task"]:
        if task not in config["tasks"]:
            key = f"evaluation.test_limit_per_task.{task}"
            raise InputError(
                f"{where(key)}: key '{key}' names a task the config does not evaluate; "
                f"use one of {', '.join(config['tasks'])}"
            )
    for index, model in enumerate(config["models"]):
        if "gguf" in model:
            from softeval.engine.gguf import locate_gguf

            key = f"models[{index}].gguf"
            try:
                locate_gguf(model["gguf"], workflow_root)
            except InputError as err:
                raise InputError(f"{where(key)}: key '{key}': {err}") from None
    _check_model_ids(config, where, Path(workdir) if workdir is not None else Path.cwd())
    if "hub" in sources and config["data"]["source"] == "mirror" and not config["data"].get("mirror"):
        key = "data.mirror"
        raise InputError(f"{where(key)}: key '{key}' is missing; data.source 'mirror' needs the mirror folder")
    _check_published(config, where, Path(workflow_root))
    return config


def _check_model_entry(model: dict[str, Any], index: int, where: Callable[[str], str]) -> None:
    """What the schema cannot say about a model entry's roles."""
    kind = kind_of(model)
    built = kind.name if kind.built_locally else None
    for role in ROLES:
        given = model.get(role)
        entry = given if isinstance(given, dict) else {}  # post: false (base only) has no keys
        key = f"models[{index}].{role}.id"
        if built and "id" in entry:
            raise InputError(f"{where(key)}: key '{key}': a {built} model is built locally; remove the id")
        if not built and isinstance(given, dict) and "id" not in entry:
            raise InputError(f"{where(key)}: key '{key}' is missing; give a hub id (owner/name) or a local directory")
    if isinstance(model.get(BASE), dict) and model[BASE].get("chat_template"):
        key = f"models[{index}].base.chat_template"
        raise InputError(f"{where(key)}: key '{key}': base models never use a chat template; remove it")


def _check_reference_method(config: dict[str, Any], given: bool, where: Callable[[str], str]) -> None:
    """The post-trained ranking the base rankings are compared with must be one the run evaluates.
    Unset, it follows the methods: zero_shot when evaluated, else few_shot, else soft_prompt."""
    methods = config["evaluation"]["methods"]
    analysis = config["analysis"]
    if not given:
        analysis["reference_method"] = next((m for m in REFERENCE_ORDER if m in methods), methods[0])
        return
    reference = analysis["reference_method"]
    if reference not in methods:
        key = "analysis.reference_method"
        evaluated = [m for m in REFERENCE_ORDER if m in methods] or list(methods)
        raise InputError(
            f"{where(key)}: key '{key}' is {reference!r} but evaluation.methods evaluates only "
            f"{', '.join(evaluated)}; set {key} to {' or '.join(evaluated)}, or add {reference} to evaluation.methods"
        )


def _check_published(config: dict[str, Any], where: Callable[[str], str], workflow_root: Path) -> None:
    """analysis.published (relative to the workflow root, as task_dir is) must exist: claims.md quotes it."""
    name = config["analysis"].get("published")
    if not name:
        return
    path = Path(name) if os.path.isabs(name) else workflow_root / name
    if not path.is_file():
        key = "analysis.published"
        raise InputError(
            f"{where(key)}: key '{key}' is {name!r} but {path} does not exist; "
            "give a record that `softeval publish-ranges` writes, or null"
        )
