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
from collections.abc import Callable, Iterator, Sequence
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
    """Write produce(chunk) for every chunk of `items` to `out`, one chunk at a time; returns how
    many chunks were computed (write_streamed: the same with every missing chunk in flight)."""

    def one_by_one(chunks: list[Sequence[Any]]) -> Iterator[tuple[int, list[dict[str, Any]]]]:
        for index, chunk in enumerate(chunks):
            yield index, produce(chunk)

    return write_streamed(out, items, one_by_one, fingerprint, chunk_size, on_chunk, on_reused)


def write_streamed(
    out: Path | str,
    items: Sequence[Any],
    stream: Callable[[list[Sequence[Any]]], Iterator[tuple[int, list[dict[str, Any]]]]],
    fingerprint: dict[str, Any],
    chunk_size: int,
    on_chunk: Callable[[int], None] | None = None,
    on_reused: Callable[[int], None] | None = None,
) -> int:
    """Write every chunk of `items` to `out`; returns how many chunks were computed.

    stream(missing chunks) yields (index in that list, rows) as each chunk is complete, in any
    order: a generator that keeps every missing row in flight (softeval.engine.generate) writes
    each chunk as soon as its last row ends, so a killed job loses only the rows in flight.
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
    chunks = [items[start : start + chunk_size] for start in starts]
    missing = [index for index in range(len(chunks)) if not (parts / f"{index:05d}.jsonl").is_file()]
    reused = len(items) - sum(len(chunks[index]) for index in missing)
    if on_reused and reused:
        on_reused(reused)
    written: set[int] = set()
    if missing:
        for position, rows in stream([chunks[index] for index in missing]):
            index = missing[position]
            if position in written:
                raise RuntimeError(f"{out}: chunk {index} was produced twice")
            if len(rows) != len(chunks[index]):
                raise RuntimeError(f"{out}: chunk {index} has {len(rows)} rows for {len(chunks[index])} items")
            atomic_write_jsonl(parts / f"{index:05d}.jsonl", rows)
            written.add(position)
            if on_chunk:
                on_chunk(len(rows))
    if len(written) < len(missing):
        raise RuntimeError(f"{out}: {len(missing) - len(written)} chunks were not produced")
    text = "".join((parts / f"{index:05d}.jsonl").read_text(encoding="utf-8") for index in range(len(starts)))
    atomic_write_text(out, text)
    shutil.rmtree(parts)
    return len(written)
