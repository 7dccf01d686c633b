"""Real benchmark data: a task's splits from the Hugging Face hub, a local mirror, or your own files.

For hub tasks one switch in the config (`data.source`) chooses: `hub` loads with
`datasets.load_dataset` at the task file's revision; `mirror` reads
<mirror>/<task>/<role>.parquet (or .jsonl), the files `softeval mirror` writes on a machine
with internet, for offline clusters. A local task (`dataset.source: local`) names its own
files, one per split (JSONL, CSV or Parquet), and mixes with hub tasks in one config. Either
way the rows keep the dataset's own schema; `softeval.data.fields` maps them to examples.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from softeval.data.tasks import Task
from softeval.io import atomic_file, atomic_write_json, read_json, read_utf8
from softeval.schema import InputError

if TYPE_CHECKING:  # imported where rows are read: a job reading prepared splits never needs it
    import datasets

MIRROR_SUFFIXES = ("parquet", "jsonl")
BUILDERS = {".parquet": "parquet", ".jsonl": "json", ".json": "json", ".csv": "csv"}
MIRROR_RECORD = "MIRROR.json"
COMMIT = re.compile(r"^[0-9a-f]{40}$")


def roles(task: Task) -> list[str]:
    """The splits a task file names: train, test, and few_shot where the benchmark has its own."""
    named = task.dataset["files"] if task.dataset["source"] == "local" else task.dataset["splits"]
    return [role for role in ("train", "test", "few_shot") if role in named]


def mirror_file(mirror: Path, task: Task, role: str) -> Path:
    for suffix in MIRROR_SUFFIXES:
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
    if task.dataset["source"] == "local":
        path = Path(task.dataset["files"][role])
        rows = read_file(path, f"the {role} split of task {task.name} (dataset.files.{role})")
        return rows, {"source": "local", "file": str(path), "sha256": _sha256(path), "fingerprint": rows._fingerprint}
    spec = task.dataset["splits"][role]
    if source == "mirror":
        if mirror is None:
            raise InputError("config key 'data.mirror' is missing; data.source 'mirror' needs the mirror folder")
        path = mirror_file(Path(mirror), task, role)
        rows = read_file(path, "the mirrored split")
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


def read_file(path: Path, what: str) -> datasets.Dataset:
    """Rows of a JSONL, CSV or Parquet file through `datasets`; an unreadable file is one error line."""
    import datasets

    if path.is_file() and path.stat().st_size == 0:
        raise InputError(f"{path}: {what} is an empty file (0 bytes); it needs one example per row")
    if path.is_file() and path.suffix in (".jsonl", ".csv"):
        read_utf8(path)  # pyarrow would fail on a stray byte later, deep inside `datasets`
    # datasets logs a parse failure and draws progress bars on stderr; the error line below says it all
    verbosity, bars = datasets.logging.get_verbosity(), datasets.is_progress_bar_enabled()
    datasets.logging.set_verbosity(datasets.logging.CRITICAL)
    datasets.disable_progress_bars()
    try:
        return datasets.load_dataset(BUILDERS[path.suffix], data_files=str(path), split="train")
    except Exception as err:  # datasets raises many error types for unreadable files
        reason = (str(err).splitlines() or [type(err).__name__])[0]
        raise InputError(f"{path}: cannot read {what} ({reason}); check that it is valid {path.suffix[1:]}") from None
    finally:
        datasets.logging.set_verbosity(verbosity)
        if bars:
            datasets.enable_progress_bars()


def load_hub_split(spec: dict[str, Any]) -> datasets.Dataset:
    import datasets

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
        with atomic_file(folder / f"{role}.parquet") as tmp:
            rows.to_parquet(str(tmp))
        record[role] = {**spec, "commit": resolve_commit(spec), "rows": len(rows), "fingerprint": rows._fingerprint}
    atomic_write_json(folder / MIRROR_RECORD, record)
    return record


def _mirror_record(folder: Path) -> dict[str, Any]:
    path = folder / MIRROR_RECORD
    return read_json(path) if path.is_file() else {}


def _sha256(path: Path) -> str:
    with path.open("rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()
