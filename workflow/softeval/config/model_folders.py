"""The model folders a config names: whether a checkpoint id is a local folder or a hub id, as a job
reads it, and what would stop a job loading it (no config.json, missing weights or shards, .bin
weights without bin_weights), found before any job runs. `preflight` reuses them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from softeval.names import ROLES
from softeval.schema import InputError

# What a job loads as a hub id (softeval.engine.models.HUB_ID); any other id is a local folder.
HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")
FOLDER_FIX = "give the folder that holds the checkpoint's config.json and weights"
AGAIN = "copy or download the checkpoint again"


def _check_model_ids(config: dict[str, Any], where: Callable[[str], str], workdir: Path) -> None:
    """Each checkpoint id: a local folder that holds a loadable model, or a valid hub id."""
    for index, model in enumerate(config["models"]):
        for role in ROLES:
            entry = model.get(role)
            if not isinstance(entry, dict) or "id" not in entry:
                continue
            key = f"models[{index}].{role}.id"
            problem = model_id_problem(entry["id"], workdir, bool(model.get("bin_weights")), f"models[{index}]")
            if problem:
                raise InputError(f"{where(key)}: key '{key}' is {problem}")


def local_model_folder(model_id: str, workdir: Path) -> Path | None:
    """The folder a job loads for this id, or None for a hub id (owner/name). As a job reads it
    (softeval.engine.models.check_reference): a path that exists (relative to the working
    directory) is a folder; so is anything that is not of the hub form; the rest is a hub id."""
    path = Path(model_id)
    folder = path if path.is_absolute() else workdir / path
    if folder.exists() or model_id.startswith(("./", "../", "~")) or not HUB_ID.match(model_id):
        return folder
    return None


def model_id_problem(model_id: str, workdir: Path, bin_weights: bool, entry_key: str) -> str | None:
    """What would stop a job loading the model `model_id` names, as "'<id>': <what>; <fix>"
    (None: nothing seen; a hub id is looked up by softeval.preflight, where jobs cannot download)."""
    shown = repr(model_id)
    if model_id.startswith("~"):
        return f"{shown}: jobs do not expand '~'; write the full path ({Path(model_id).expanduser()})"
    folder = local_model_folder(model_id, workdir)
    if folder is None:
        from huggingface_hub.utils import HFValidationError, validate_repo_id

        try:
            validate_repo_id(model_id)
        except HFValidationError as err:
            return f"{shown}: not a valid hub id ({str(err).splitlines()[0]}); fix it (owner/name)"
        return None
    if not Path(model_id).is_absolute():
        shown += f" ({folder})"
    if not folder.exists() and not model_id.startswith(("/", "./", "../")):  # a folder only by its form
        return (
            f"{shown}: neither an existing folder nor a hub id owner/name; fix the path, "
            "or write the hub id in full (owner/name)"
        )
    found = checkpoint_problem(folder, bin_weights, entry_key)
    return f"{shown}: {found[0]}; {found[1]}" if found else None


def checkpoint_problem(folder: Path, bin_weights: bool, entry_key: str) -> tuple[str, str] | None:
    """(what is wrong, the fix) when `folder` holds no model a job can load (transformers'
    from_pretrained: config.json and model.safetensors, or shards and their index; .bin files
    only where the entry sets bin_weights); None when it looks complete."""
    if not folder.exists():
        return "no such folder", f"{FOLDER_FIX}, or a hub id owner/name"
    if not folder.is_dir():
        return "a file, not a folder", FOLDER_FIX
    if not (folder / "config.json").is_file():
        return (
            "no config.json there, so it is not a Hugging Face model folder",
            f"{FOLDER_FIX} (save_pretrained writes both)",
        )
    try:
        json.loads((folder / "config.json").read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as err:
        return f"config.json there is not valid JSON ({str(err).splitlines()[0]})", AGAIN
    formats = [("model.safetensors", "model.safetensors.index.json")]
    if bin_weights:
        formats.append(("pytorch_model.bin", "pytorch_model.bin.index.json"))
    for single, index in formats:
        if (folder / single).is_file():
            return None
        if (folder / index).is_file():
            try:
                shards = sorted(set(json.loads((folder / index).read_text(encoding="utf-8"))["weight_map"].values()))
            except (ValueError, UnicodeDecodeError, KeyError, TypeError, AttributeError):
                return f"{index} there is not a weight index (no weight_map)", AGAIN
            missing = [shard for shard in shards if not (folder / str(shard)).is_file()]
            if missing:
                return f"{index} lists {missing[0]}, which is not there", AGAIN
            return None
    if not bin_weights and any(folder.glob("pytorch_model*.bin")):
        return (
            "only .bin weights there",
            f"set {entry_key}.bin_weights: true to read them, or convert them to safetensors",
        )
    wanted = "model.safetensors, or shards and model.safetensors.index.json"
    if bin_weights:
        wanted = "model.safetensors or pytorch_model.bin, or shards and their index .json"
    return f"no weights there ({wanted})", "copy the checkpoint's weight files into it"
