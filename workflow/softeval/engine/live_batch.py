"""The rows decoded together (softeval.engine.generate.decode), and rows joining them mid-decode.

Continuous batching joins rows prefilled apart to a batch whose rows have decoded for a while:
the narrower cache is padded with masked columns (at the start, or after a shared prefix that
every row's cache begins with) and the two are stacked; when rows leave, the columns no row
attends to any more go. A row's attention and positions see only its own columns, so none of
this changes what it generates (tests/unit/engine/test_generate.py compares it with one row at a
time).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import torch


@dataclass
class Live:
    """The rows being decoded together: each batch row's original row, the attention mask and
    positions over every cached column, the KV cache (None without one), the embeddings (the
    no-cache path) and each row's next-token logits."""

    rows: list[int]
    mask: torch.Tensor
    positions: torch.Tensor
    cache: Any
    embeds: torch.Tensor | None
    logits: torch.Tensor


def mergeable(cache: Any) -> bool:
    """Whether rows can join a batch mid-decode: a full-attention dynamic cache, whose columns can be
    padded and joined. A sliding-window layer keeps only its last window of columns (Gemma 2 and 3,
    Mistral), so padding would shift that window: those models refill a batch only once it is empty."""
    from transformers.cache_utils import DynamicLayer

    layers = getattr(cache, "layers", None)
    return bool(layers) and all(type(layer) is DynamicLayer and layer.keys is not None for layer in layers)


def pad_columns(live: Live, at: int, count: int) -> Live:
    """`count` masked columns inserted at column `at` (0, or after the shared prefix): a row's
    attention and positions ignore them, so its continuation is unchanged."""
    if count == 0:
        return live

    def widen(x: torch.Tensor, dim: int) -> torch.Tensor:
        shape = list(x.shape)
        shape[dim] = count
        before, after = x.narrow(dim, 0, at), x.narrow(dim, at, x.shape[dim] - at)
        return torch.cat([before, x.new_zeros(shape), after], dim=dim)

    for layer in live.cache.layers:
        layer.keys, layer.values = widen(layer.keys, 2), widen(layer.values, 2)
    return replace(live, mask=widen(live.mask, 1), positions=widen(live.positions, 1))


def join(live: Live, new: Live, at: int) -> Live:
    """Rows prefilled apart (`new`) joining a batch mid-decode: the narrower one padded at `at`, then
    both stacked."""
    width = max(live.mask.shape[1], new.mask.shape[1])
    live = pad_columns(live, at, width - live.mask.shape[1])
    new = pad_columns(new, at, width - new.mask.shape[1])
    for mine, theirs in zip(live.cache.layers, new.cache.layers, strict=True):
        mine.keys = torch.cat([mine.keys, theirs.keys])
        mine.values = torch.cat([mine.values, theirs.values])
    return Live(
        live.rows + new.rows,
        torch.cat([live.mask, new.mask]),
        torch.cat([live.positions, new.positions]),
        live.cache,
        None,
        torch.cat([live.logits, new.logits]),
    )


def keep_rows(live: Live, keep: list[int], tokens: torch.Tensor, continuous: bool) -> tuple[Live, torch.Tensor]:
    """The batch without the rows that ended (their cache rows too); in a batch that rows join, the
    columns no row attends to any more (a departed row's prompt and answer) go too."""
    index = torch.tensor(keep, device=tokens.device)
    live = replace(
        live,
        rows=[live.rows[i] for i in keep],
        mask=live.mask[index],
        positions=live.positions[index],
        embeds=None if live.embeds is None else live.embeds[index],
    )
    if live.cache is not None:
        live.cache.batch_select_indices(index)
    if continuous:
        used = live.mask.any(dim=0)
        if not bool(used.all()):
            columns = used.nonzero().squeeze(1)
            for layer in live.cache.layers:
                layer.keys, layer.values = layer.keys[:, :, columns], layer.values[:, :, columns]
            live = replace(live, mask=live.mask[:, columns], positions=live.positions[:, columns])
    return live, tokens[index]
