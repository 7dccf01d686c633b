"""What a resample draws: the test items each task asks about (`declare_items`), and each task's
index matrix of resampled test examples (`task_resamples`), one draw shared by every task that
asks about the same items. The declared items are this module's state: every resampling of a run
reads them here."""

from __future__ import annotations

import functools
import zlib
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np

# task -> the item each of its test examples asks about, in test order (declare_items)
_ITEMS: dict[str, tuple[str, ...]] = {}


def declare_items(items: Mapping[str, Sequence[str] | None]) -> None:
    """Say which item (the world's country; for a real benchmark, the example itself) each test
    example of a task asks about, in test order: from then on `task_resamples` draws items, one
    draw shared by every task that asks about them. None forgets a task's items."""
    for task, keys in items.items():
        if keys is None:
            _ITEMS.pop(task, None)
        else:
            _ITEMS[task] = tuple(str(key) for key in keys)
    task_resamples.cache_clear()


def declared_items() -> dict[str, tuple[str, ...]]:
    return dict(_ITEMS)


@contextmanager
def shared_items(items: Mapping[str, Sequence[str] | None]) -> Iterator[None]:
    """`declare_items` for the duration of a block; what was declared before comes back after it."""
    before = dict(_ITEMS)
    declare_items(items)
    try:
        yield
    finally:
        _ITEMS.clear()
        _ITEMS.update(before)
        task_resamples.cache_clear()


def items_of(examples: Iterable[Mapping[str, Any]], key: str = "entity") -> list[str]:
    """The item each test example asks about: its `key` field where it has one (the embedded
    world's examples name their country), else its id (a real benchmark's example is its own item)."""
    return [str(row[key]) if row.get(key) is not None else f"id:{row['id']}" for row in examples]


def _component(task: str) -> list[str]:
    """The declared tasks linked to `task` by shared items (directly or through others), sorted."""
    members, frontier = {task}, [task]
    while frontier:
        keys = set(_ITEMS[frontier.pop()])
        for other, other_keys in _ITEMS.items():
            if other not in members and not keys.isdisjoint(other_keys):
                members.add(other)
                frontier.append(other)
    return sorted(members)


def _own_seed(task: str, seed: int) -> np.random.Generator:
    return np.random.default_rng([seed, zlib.crc32(task.encode("utf-8"))])


@functools.lru_cache(maxsize=64)  # read-only: every caller indexes with it, none writes to it
def task_resamples(task: str, n_examples: int, n_resamples: int, seed: int) -> np.ndarray:
    """The bootstrap's resampled test examples of one task: a (resamples x examples) index matrix.

    One matrix per task, shared by every model, role, method and step evaluated on it, so that
    the items' common difficulty moves all of them together (as it does between test sets); the
    same in every table and claim of a run. Without declared items (`declare_items`) it resamples
    the task's examples with its own seed (from `seed` and the task's name), so tasks of equal size
    are not resampled alike. With them, it draws items: the tasks that share items draw them
    together (a country drawn twice brings every task's questions about it twice)."""
    keys = _ITEMS.get(task)
    if keys is None:
        index = _own_seed(task, seed).integers(0, n_examples, (n_resamples, n_examples), dtype=np.int32)
    else:
        if len(keys) != n_examples:
            raise ValueError(
                f"task {task}: {len(keys)} items declared for {n_examples} test examples; declare one per example"
            )
        index = _item_resamples(task, keys, n_resamples, seed)
    index.flags.writeable = False
    return index


def _item_resamples(task: str, keys: tuple[str, ...], n_resamples: int, seed: int) -> np.ndarray:
    """Resampled examples of `task` from a draw of its items: with replacement, as many items as it
    has, every example of a drawn item taken; the draw shared with every task linked to it by items.

    The linked tasks draw from the union of their items, one row of draws per resample (seeded by
    the union, so adding a task that asks about the same items changes no other task's draws); a
    task takes, in order, the drawn items it asks about, until it has as many as it asks about
    (topped up from its own seed where the row holds too few): for each task, an ordinary
    bootstrap of its items, and two tasks asking about the same items draw the same ones."""
    own = list(dict.fromkeys(keys))  # the task's items, in order of first appearance
    positions: dict[str, list[int]] = {}
    for i, key in enumerate(keys):
        positions.setdefault(key, []).append(i)
    component = _component(task)
    if component == [task]:  # items of its own: today's per-task draw (items = examples: the same index)
        drawn = _own_seed(task, seed).integers(0, len(own), (n_resamples, len(own)), dtype=np.int32)
    else:
        union = sorted({key for other in component for key in _ITEMS[other]})
        stream = np.random.default_rng([seed, zlib.crc32("\n".join(union).encode("utf-8"))]).integers(
            0, len(union), (n_resamples, len(union))
        )
        where = {key: i for i, key in enumerate(own)}
        translate = np.array([where.get(key, -1) for key in union])
        mine = translate[stream]  # the task's item for each draw, -1 where the drawn item is not its
        if len(own) == len(union):
            drawn = mine
        else:
            top_up = _own_seed(task, seed)
            drawn = np.empty((n_resamples, len(own)), dtype=np.int64)
            for row, draws in enumerate(mine):
                taken = draws[draws >= 0][: len(own)]
                extra = top_up.integers(0, len(own), len(own) - len(taken))
                drawn[row] = np.concatenate([taken, extra])
    sizes = {len(positions[key]) for key in own}
    if len(sizes) == 1:  # every item asked as often (the world: once per task): a rectangular take
        table = np.array([positions[key] for key in own])
        return table[drawn].reshape(n_resamples, len(keys)).astype(np.int32)
    # items asked unequally often: take whole items until the resample has as many examples, cut there
    top_up = _own_seed(f"{task}/unequal", seed)
    index = np.empty((n_resamples, len(keys)), dtype=np.int32)
    for row, draws in enumerate(drawn):
        taken = [p for d in draws for p in positions[own[d]]]
        while len(taken) < len(keys):
            taken += positions[own[int(top_up.integers(0, len(own)))]]
        index[row] = taken[: len(keys)]
    return index
