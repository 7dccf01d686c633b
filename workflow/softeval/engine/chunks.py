"""Resumable JSONL outputs: rows are written in chunks, the final file appears atomically.

Completed chunks live in a hidden folder beside the output (`.<name>.parts/`), each one
written atomically, with a fingerprint of what produced them. A killed job leaves its
complete chunks behind; the rerun computes only the missing ones, provided the
fingerprint is unchanged (otherwise the stale chunks are discarded). Snakemake removes
a failed job's declared outputs, never this folder.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from softeval.io import atomic_write_json, atomic_write_jsonl, atomic_write_text
from softeval.provenance import params_hash


def parts_dir(out: Path) -> Path:
    return out.with_name(f".{out.name}.parts")


def write_in_chunks(
    out: Path | str,
    items: Sequence[Any],
    produce: Callable[[Sequence[Any]], list[dict[str, Any]]],
    fingerprint: dict[str, Any],
    chunk_size: int,
    on_chunk: Callable[[int], None] | None = None,
    on_reused: Callable[[int], None] | None = None,
) -> int:
    """Write produce(chunk) for every chunk of `items` to `out`; returns how many chunks were computed.

    `on_chunk(n_items)` is called after each computed chunk, `on_reused(n_items)` once, before
    any is computed, with the items a killed run already finished (progress reporting: a
    resumed bar starts where the killed one stopped and ends at 100 %).
    """
    out = Path(out)
    parts = parts_dir(out)
    digest = params_hash(fingerprint)
    stamp = parts / "fingerprint.json"
    if parts.exists() and (not stamp.is_file() or json.loads(stamp.read_text()).get("hash") != digest):
        shutil.rmtree(parts)  # made by other inputs or settings: not ours to reuse
    parts.mkdir(parents=True, exist_ok=True)
    if not stamp.is_file():
        atomic_write_json(stamp, {"hash": digest, "fingerprint": fingerprint})
    starts = range(0, len(items), chunk_size)
    done = [index for index in range(len(starts)) if (parts / f"{index:05d}.jsonl").is_file()]
    if on_reused and done:
        on_reused(sum(len(items[starts[index] : starts[index] + chunk_size]) for index in done))
    computed = 0
    for index, start in enumerate(starts):
        chunk_path = parts / f"{index:05d}.jsonl"
        if chunk_path.is_file():
            continue
        chunk = items[start : start + chunk_size]
        atomic_write_jsonl(chunk_path, produce(chunk))
        computed += 1
        if on_chunk:
            on_chunk(len(chunk))
    text = "".join((parts / f"{index:05d}.jsonl").read_text(encoding="utf-8") for index in range(len(starts)))
    atomic_write_text(out, text)
    shutil.rmtree(parts)
    return computed
