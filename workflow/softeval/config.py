"""The workflow configuration: validation, defaults, and the checks a schema cannot express."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from softeval.data.tasks import load_task, task_names
from softeval.io import read_utf8
from softeval.judges.factory import JUDGES
from softeval.model_kinds import kind_of
from softeval.schema import InputError, fill_defaults, load_schema, validate
from softeval.settings import RandomModelSettings

DOCS = "config/README.md"


def load_config_file(path: Path | str) -> dict[str, Any]:
    path = Path(path)
    try:
        data = yaml.safe_load(read_utf8(path))
    except FileNotFoundError:
        raise InputError(f"{path}: config file not found; pass an existing file to --configfile") from None
    except yaml.YAMLError as err:
        raise InputError(f"{path}: not valid YAML ({str(err).splitlines()[0]}); fix the syntax") from None
    return data if data is not None else {}


def check_config(config: dict[str, Any], source: str, workflow_root: Path) -> dict[str, Any]:
    """Validate `config` in place, fill defaults, and check cross-references.

    Raises InputError with one line naming `source`, the key and the fix.
    """
    validate(config, "config", source, DOCS)
    fill_defaults(config, load_schema("config"))
    names = [m["name"] for m in config["models"]]
    for index, name in enumerate(names):
        if names.index(name) != index:
            raise InputError(f"{source}: key 'models[{index}].name': model name {name!r} is used twice; rename one")
    sizes = config["zoo"]["sizes"]
    for index, model in enumerate(config["models"]):
        _check_model_entry(model, index, source)
        if "zoo" not in model:
            continue
        size = model["zoo"]["size"]
        if size not in sizes:
            raise InputError(
                f"{source}: key 'models[{index}].zoo.size' is {size!r}; use one of {', '.join(sorted(sizes))} "
                "or define it under zoo.sizes"
            )
    for size_name, size in sizes.items():
        if size["width"] % size["heads"]:
            raise InputError(f"{source}: key 'zoo.sizes.{size_name}': width must be a multiple of heads")
    tune = config["evaluation"]["tune"]
    late = [step for step in tune["snapshots"] if step > tune["steps"]]
    if late:
        raise InputError(
            f"{source}: key 'evaluation.tune.snapshots' has step {late[0]} after the last step {tune['steps']}; "
            "remove it or raise evaluation.tune.steps"
        )
    if tune["init"] == "text" and not tune.get("init_text"):
        raise InputError(f"{source}: key 'evaluation.tune.init_text' is missing; init 'text' needs it")
    judge = config["evaluation"]["judge"]
    kind = JUDGES.get(judge["name"])
    missing = [key for key in kind.needs if not judge.get(key)]
    if missing:
        raise InputError(
            f"{source}: key 'evaluation.judge.{missing[0]}' is missing; judge {judge['name']!r} needs a {missing[0]}"
        )
    problem = kind.check(judge) if kind.check else None
    if problem:
        raise InputError(f"{source}: {problem}")
    if judge.get("base_url") and judge.get("base_url_env"):
        raise InputError(f"{source}: evaluation.judge has base_url and base_url_env; keep one")
    folder = task_dir(config, workflow_root)
    sources = set()
    for index, name in enumerate(config["tasks"]):
        if not (folder / f"{name}.yaml").is_file():
            known = ", ".join(task_names(folder)) or "none"
            raise InputError(
                f"{source}: key 'tasks[{index}]' is {name!r} but {folder / name}.yaml does not exist; "
                f"available tasks: {known} (fix the name or add the task file)"
            )
        sources.add(load_task(folder, name).dataset["source"])
    if any("zoo" in m for m in config["models"]) and "world" not in sources:
        raise InputError(
            f"{source}: key 'tasks' has no world task, but embedded-zoo models are pre-trained on the world's "
            "tasks; add one (e.g. world_numeric) or use hub models"
        )
    for task in config["evaluation"]["test_limit_per_task"]:
        if task not in config["tasks"]:
            raise InputError(
                f"{source}: key 'evaluation.test_limit_per_task.{task}' names a task the config does not evaluate; "
                f"use one of {', '.join(config['tasks'])}"
            )
    for index, model in enumerate(config["models"]):
        if "gguf" in model:
            from softeval.engine.gguf import locate_gguf

            try:
                locate_gguf(model["gguf"], workflow_root)
            except InputError as err:
                raise InputError(f"{source}: key 'models[{index}].gguf': {err}") from None
    if "hub" in sources and config["data"]["source"] == "mirror" and not config["data"].get("mirror"):
        raise InputError(f"{source}: key 'data.mirror' is missing; data.source 'mirror' needs the mirror folder")
    return config


def _check_model_entry(model: dict[str, Any], index: int, source: str) -> None:
    """What the schema cannot say about a model entry's roles."""
    key = f"{source}: key 'models[{index}]"
    kind = kind_of(model)
    built = kind.name if kind.built_locally else None
    for role in ("base", "post"):
        entry = model.get(role) or {}
        if built and "id" in entry:
            raise InputError(f"{key}.{role}.id': a {built} model is built locally; remove the id")
        if not built and role in model and "id" not in entry:
            raise InputError(f"{key}.{role}.id' is missing; give a hub id (owner/name) or a local directory")
    if (model.get("base") or {}).get("chat_template"):
        raise InputError(f"{key}.base.chat_template': base models never use a chat template; remove it")


def model_kind(model: dict[str, Any]) -> str:
    """The name of the entry's kind (softeval.model_kinds): zoo, random, gguf or checkpoint."""
    return kind_of(model).name


def model_options(model: dict[str, Any], role: str) -> dict[str, Any]:
    """How a job loads this model in this role (softeval.engine.models.ModelOptions fields)."""
    entry = model.get(role) or {}
    kind = kind_of(model)
    return {
        "revision": entry.get("revision", "main") if kind.hub_revision else None,
        "dtype": entry.get("dtype", "auto"),
        "device_map": model.get("device_map"),
        "trust_remote_code": bool(model.get("trust_remote_code", False)),
        "chat_template": role == "post" and entry.get("chat_template", kind.chat_template_default),
        # only when set: every other entry's options (a job parameter) stay as they were
        **({"bin_weights": True} if model.get("bin_weights") else {}),
    }


def random_spec(model: dict[str, Any]) -> dict[str, Any]:
    """A random model entry's settings, the schema's defaults filled in."""
    return RandomModelSettings.parse(model["random"], f"models[{model['name']}].random").as_dict()


def task_dir(config: dict[str, Any], workflow_root: Path) -> Path:
    path = Path(config["task_dir"])
    return path if path.is_absolute() else Path(workflow_root) / path


def workdir_relative(path: str | Path, workdir: str | Path) -> str:
    """`path` relative to `workdir` when it lies inside it (through symlinks too), else
    absolute. Snakemake records input paths: an absolute one inside the checkout would make
    a moved or copied checkout rerun every job."""
    path, workdir = Path(path).resolve(), Path(workdir).resolve()
    return str(path.relative_to(workdir)) if path.is_relative_to(workdir) else str(path)


def model_entry(config: dict[str, Any], name: str) -> dict[str, Any]:
    for model in config["models"]:
        if model["name"] == name:
            return model
    known = ", ".join(m["name"] for m in config["models"])
    raise InputError(f"unknown model {name!r}; the config defines: {known}")
