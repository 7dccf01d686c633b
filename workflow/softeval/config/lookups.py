"""What the plan and the jobs read from a checked config: a model entry by name, how a job loads it
in a role, a random model's settings, the task folder, and a path as Snakemake should record it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from softeval.model_kinds import kind_of
from softeval.names import POST
from softeval.schema import InputError
from softeval.settings import RandomModelSettings


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
        "chat_template": role == POST and entry.get("chat_template", kind.chat_template_default),
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
