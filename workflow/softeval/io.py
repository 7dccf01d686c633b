"""Atomic file writes and safe names: a killed job never leaves a file that looks complete."""

from __future__ import annotations

import glob
import json
import os
import re
import shutil
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from softeval.schema import InputError

SLUG = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")


def check_slug(name: str, what: str) -> str:
    """Validate a name before it becomes part of a path (no '/', '..', spaces, capitals)."""
    if not isinstance(name, str) or not SLUG.match(name):
        raise InputError(
            f"invalid {what} name {name!r}: use 1-64 characters of a-z, 0-9, '_' and '-', "
            "starting with a letter or digit"
        )
    return name


def umask() -> int:
    """The process's umask (reading it means setting it; it is put back at once)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def follow_umask(path: Path | str, directory: bool = False) -> None:
    """Give a file made by mkstemp/mkdtemp (owner-only) the mode an ordinary open() would have,
    so collaborators on a shared file system can read results."""
    os.chmod(path, (0o777 if directory else 0o666) & ~umask())


def clear_leftovers(path: Path) -> None:
    """Remove the temporaries a killed writer of `path` left beside it (`.<name>.<8 chars>.tmp`,
    as mkstemp/mkdtemp below name them): SIGKILL skips every cleanup, and a resumed run would
    otherwise keep them for good. Only one job ever writes a given path, so none is in use."""
    pattern = re.compile(rf"^\.{re.escape(path.name)}\.[a-z0-9_]{{8}}\.tmp$")
    for leftover in path.parent.glob(f".{glob.escape(path.name)}.*.tmp"):
        if pattern.match(leftover.name):
            if leftover.is_dir() and not leftover.is_symlink():
                shutil.rmtree(leftover, ignore_errors=True)
            else:
                leftover.unlink(missing_ok=True)


def atomic_write_text(path: Path | str, text: str) -> None:
    """Write text to a temporary file beside `path`, then rename it into place."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    clear_leftovers(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        follow_umask(tmp)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def atomic_write_json(path: Path | str, data: Any) -> None:
    atomic_write_text(path, json.dumps(data, indent=2, sort_keys=True) + "\n")


def atomic_write_jsonl(path: Path | str, rows: Iterable[dict[str, Any]]) -> None:
    atomic_write_text(path, "".join(json.dumps(row, sort_keys=True, ensure_ascii=False) + "\n" for row in rows))


def read_utf8(path: Path | str) -> str:
    """A text file's content; one that is not UTF-8 is one InputError with the line and byte."""
    raw = Path(path).read_bytes()
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as err:
        line = raw[: err.start].count(b"\n") + 1
        raise InputError(
            f"{path}:{line}: not UTF-8 (byte 0x{raw[err.start]:02x} at offset {err.start}); save the file as UTF-8"
        ) from None


def read_json(path: Path | str) -> Any:
    """A JSON artifact; an unreadable one is one InputError naming it and the fix."""
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise InputError(f"{path}: unreadable JSON file ({err}); delete or regenerate it") from None


def read_jsonl(path: Path | str, what: str) -> list[dict[str, Any]]:
    """Rows of a JSONL artifact; an unreadable one is one InputError naming it and the fix."""
    try:
        return [json.loads(line) for line in Path(path).read_text(encoding="utf-8").splitlines() if line.strip()]
    except FileNotFoundError:
        raise InputError(f"{path}: {what} file not found; run the workflow (or check the names) first") from None
    except (OSError, ValueError) as err:
        raise InputError(f"{path}: unreadable {what} file ({err}); delete it so the workflow recomputes it") from None


@contextmanager
def atomic_file(path: Path | str) -> Iterator[Path]:
    """Yield a temporary path beside `path` for a library that writes the file itself
    (safetensors, pandas, matplotlib); if the block succeeds, the file gets the mode the umask
    gives (safetensors writes owner-only files) and is renamed into place."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    clear_leftovers(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    try:
        yield Path(tmp)
        follow_umask(tmp)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


@contextmanager
def atomic_directory(path: Path | str) -> Iterator[Path]:
    """Yield a temporary directory that replaces `path` only if the block succeeds; everything
    written into it gets the mode the umask gives (libraries that write owner-only files, such
    as safetensors, included)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    clear_leftovers(path)
    tmp = Path(tempfile.mkdtemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp"))
    try:
        follow_umask(tmp, directory=True)
        yield tmp
        for entry in tmp.rglob("*"):
            if not entry.is_symlink():
                follow_umask(entry, directory=entry.is_dir())
        if path.exists():
            shutil.rmtree(path)
        os.replace(tmp, path)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
