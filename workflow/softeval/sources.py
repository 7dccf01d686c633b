"""Real benchmark data: a task's splits from the Hugging Face hub or from a local mirror.

One switch in the config (`data.source`) chooses: `hub` loads with `datasets.load_dataset`
at the task file's revision; `mirror` reads <mirror>/<task>/<role>.parquet (or .jsonl), the
files `softeval mirror` writes on a machine with internet, for offline clusters. Either way
the rows keep the benchmark's own schema; `softeval.fields` maps them to examples.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import Any

import datasets

from softeval.io import atomic_write_json, read_json
from softeval.schema import InputError
from softeval.tasks import Task

MIRROR_FORMATS = (("parquet", "parquet"), ("jsonl", "json"))
MIRROR_RECORD = "MIRROR.json"
COMMIT = re.compile(r"^[0-9a-f]{40}$")


def roles(task: Task) -> list[str]:
    """The splits a task file names: train, test, and few_shot where the benchmark has its own."""
    return [role for role in ("train", "test", "few_shot") if role in task.dataset["splits"]]


def mirror_file(mirror: Path, task: Task, role: str) -> Path:
    for suffix, _ in MIRROR_FORMATS:
        path = mirror / task.name / f"{role}.{suffix}"
        if path.is_file():
            return path
    raise InputError(
        f"{mirror / task.name}: no {role}.parquet or {role}.jsonl in the local mirror for task {task.name!r}; "
        f"create it with `softeval mirror --task {task.name} --out {mirror}` on a machine with internet, "
        "or set data.source: hub in the config"
    )


def load_rows(task: Task, role: str, source: str, mirror: Path | None) -> tuple[datasets.Dataset, dict[str, Any]]:
    """The raw rows of one role, and where they came from (for provenance)."""
    spec = task.dataset["splits"][role]
    if source == "mirror":
        if mirror is None:
            raise InputError("config key 'data.mirror' is missing; data.source 'mirror' needs the mirror folder")
        path = mirror_file(Path(mirror), task, role)
        builder = dict(MIRROR_FORMATS)[path.suffix.lstrip(".")]
        try:
            rows = datasets.load_dataset(builder, data_files=str(path), split="train")
        except Exception as err:  # datasets raises many error types for unreadable files
            raise InputError(f"{path}: cannot read the mirrored split ({str(err).splitlines()[0]})") from None
        record = _mirror_record(path.parent).get(path.stem, {})
        return rows, {
            **spec,
            "source": "mirror",
            "file": str(path),
            "sha256": _sha256(path),
            "commit": record.get("commit"),
            "fingerprint": rows._fingerprint,
        }
    rows = load_hub_split(spec)
    return rows, {**spec, "source": "hub", "commit": resolve_commit(spec), "fingerprint": rows._fingerprint}


def load_hub_split(spec: dict[str, Any]) -> datasets.Dataset:
    try:
        return datasets.load_dataset(spec["path"], spec.get("name"), split=spec["split"], revision=spec["revision"])
    except Exception as err:  # network, auth, missing split: one line with the fix
        raise InputError(
            f"dataset {spec['path']} ({spec.get('name') or 'default'}, split {spec['split']}, revision "
            f"{spec['revision']}): cannot load from the hub ({type(err).__name__}: {str(err).splitlines()[0]}); "
            "check the name and your network, or use a local mirror (data.source: mirror)"
        ) from None


def resolve_commit(spec: dict[str, Any]) -> str | None:
    """The commit a revision points at now (None when the hub cannot say)."""
    if COMMIT.match(spec["revision"]):
        return spec["revision"]
    try:
        from huggingface_hub import HfApi

        return HfApi().dataset_info(spec["path"], revision=spec["revision"]).sha
    except Exception:  # offline or private: provenance says unresolved rather than guessing
        return None


def write_mirror(task: Task, out: Path) -> dict[str, Any]:
    """Download every role of a task from the hub into <out>/<task>/ with a record of commits."""
    folder = Path(out) / task.name
    folder.mkdir(parents=True, exist_ok=True)
    record = {}
    for role in roles(task):
        spec = task.dataset["splits"][role]
        rows = load_hub_split(spec)
        tmp = folder / f".{role}.parquet.tmp"
        rows.to_parquet(str(tmp))
        tmp.replace(folder / f"{role}.parquet")
        record[role] = {**spec, "commit": resolve_commit(spec), "rows": len(rows), "fingerprint": rows._fingerprint}
    atomic_write_json(folder / MIRROR_RECORD, record)
    return record


def _mirror_record(folder: Path) -> dict[str, Any]:
    path = folder / MIRROR_RECORD
    return read_json(path) if path.is_file() else {}


def _sha256(path: Path) -> str:
    with path.open("rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()
