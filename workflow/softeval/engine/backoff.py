"""Automatic batch sizing: halve the batch on GPU out-of-memory and carry on.

Rows are independent (batched generation equals one-at-a-time generation), so a smaller
batch changes only speed, never results. The reduced size sticks for the rest of the job;
finished chunks are already on disk (softeval.engine.chunks), so nothing computed is lost.
Not accelerate's `find_executable_batch_size`: it restarts the whole function at the smaller
size, where generation keeps the rows that ended and one BatchSize is shared by a job's calls.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import torch

from softeval.schema import InputError

T = TypeVar("T")
log = logging.getLogger("softeval")


class BatchSize:
    """The current batch size of a job, shared by its calls so a backoff is remembered."""

    def __init__(self, size: int) -> None:
        self.size = size

    def halve(self, what: str) -> None:
        if self.size == 1:
            raise InputError(
                f"{what}: out of GPU memory even at batch size 1; use a smaller dtype, device_map: auto "
                "(more GPUs) or gradient_checkpointing (tuning)"
            )
        self.size = max(1, self.size // 2)
        free_memory()
        log.warning("%s: out of GPU memory, batch size lowered to %d", what, self.size)


def free_memory() -> None:
    if torch.cuda.is_available():
        torch.cuda.empty_cache()


def in_batches(
    items: Sequence[Any], size: BatchSize | int, run: Callable[[Sequence[Any]], list[T]], what: str
) -> list[T]:
    """run() over consecutive batches of `items`; a batch that runs out of memory is retried smaller."""
    size = size if isinstance(size, BatchSize) else BatchSize(size)
    out: list[T] = []
    start = 0
    while start < len(items):
        chunk = items[start : start + size.size]
        try:
            out.extend(run(chunk))
        except torch.OutOfMemoryError:
            size.halve(what)
            continue
        start += len(chunk)
    return out
