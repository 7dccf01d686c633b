"""Which weights a result came from: the content hash of a local model directory's safetensors.

Hashing a 15 GB checkpoint takes about a minute, and every job of a model would repeat it, so
the digest is computed once and cached per directory, keyed by each weight file's name, size
and modification time (nanoseconds): rewriting a file changes its key, so a stale digest is
never reused. The cache is one small JSON file per directory under $SOFTEVAL_CACHE (default
$XDG_CACHE_HOME/softeval or ~/.cache/softeval); an unwritable cache only costs the recomputation.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from pathlib import Path

from softeval.io import atomic_write_json

BLOCK = 8 * 2**20


def cache_dir() -> Path:
    if os.environ.get("SOFTEVAL_CACHE"):
        return Path(os.environ["SOFTEVAL_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "softeval"


def weight_files(directory: Path | str) -> list[Path]:
    """The safetensors files of a model directory, in the order their bytes are hashed."""
    return sorted(Path(directory).glob("*.safetensors"))


def file_keys(files: list[Path]) -> list[list[str | int]]:
    return [[f.name, (stat := f.stat()).st_size, stat.st_mtime_ns] for f in files]


def hash_files(files: list[Path]) -> str:
    """sha256 of the files' bytes, concatenated in order (streamed: memory stays flat)."""
    digest = hashlib.sha256()
    for path in files:
        with path.open("rb") as handle:
            while block := handle.read(BLOCK):
                digest.update(block)
    return digest.hexdigest()


def weights_digest(directory: Path | str, cache: Path | None = None) -> str | None:
    """The full sha256 of a directory's safetensors weights (None when it has none), from the
    cache when no weight file changed since it was computed."""
    directory = Path(directory).resolve()
    files = weight_files(directory)
    if not files:
        return None
    keys = file_keys(files)
    entry = (cache or cache_dir()) / f"{hashlib.sha256(str(directory).encode()).hexdigest()[:32]}.json"
    try:
        cached = json.loads(entry.read_text(encoding="utf-8"))
        if cached.get("directory") == str(directory) and cached.get("files") == keys:
            return str(cached["sha256"])
    except (OSError, ValueError, KeyError, AttributeError):
        pass  # no entry, or an unreadable one: compute
    digest = hash_files(files)
    if file_keys(files) == keys:  # not rewritten while it was being read
        with contextlib.suppress(OSError):
            atomic_write_json(entry, {"directory": str(directory), "files": keys, "sha256": digest})
    return digest
