"""Greedy generation with an optional soft prompt, batched with left padding.

The soft prompt sits right before each row's query (after its padding) and positions follow
the attention mask, so a row's output does not depend on what it is batched with. A row
that stops (EOS, a stop string, or the token limit) leaves the batch and its KV cache rows
are dropped: finished rows cost nothing. The next rows of the queue are prefilled and join the
batch when a quarter of its slots are free (continuous batching: a batch does not wait for its
slowest row with most of its rows gone), their cache padded with masked columns to the batch's.

A second reading (`also`: another tool's stop strings and token budget, lm-evaluation-harness's
for the lm_eval columns) keeps a row going until both readings have ended, so one greedy pass
gives softeval's response and the other tool's, each exactly as a run with its own stops alone
would (greedy decoding: the longer run only extends the shorter one).
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any

import torch

from softeval.data.answers import cut_at_stop
from softeval.engine.backoff import BatchSize
from softeval.engine.context import keep_last, prompt_limit
from softeval.engine.live_batch import Live, join, keep_rows, mergeable
from softeval.engine.models import input_device
from softeval.engine.softprompt import insert_soft_prompt


@dataclass(frozen=True)
class Generation:
    text: str
    stop_reason: str  # "eos" | "stop" | "length"
    prompt_tokens: int
    new_tokens: int
    truncated: int = 0  # prompt tokens cut from the left to fit the context (softeval.engine.context)
    also_text: str | None = None  # the same continuation read with `also`'s stops and budget


@dataclass(frozen=True)
class Until:
    """Where a reading of a greedy continuation ends: at the first of `stops` (cut before it), at
    the model's EOS, or after `max_new_tokens` tokens."""

    stops: tuple[str, ...]
    max_new_tokens: int


def generate_greedy(
    model: Any,
    tokenizer: Any,
    prompts: Sequence[str],
    vectors: torch.Tensor | None = None,
    stops: Sequence[str] = ("\n",),
    max_new_tokens: int = 32,
    batch_size: int | BatchSize = 16,
    use_cache: bool = True,
    shared_prefix: str | None = None,
    stop_ids: Iterable[int] = (),
    also: Until | None = None,
) -> list[Generation]:
    """Greedy continuations of `prompts`, cut at the first stop string, in the prompts' order.

    With `shared_prefix` (text every prompt starts with) and the KV cache on, the prefix and
    the soft prompt before it are encoded once and their cache is reused for every batch.
    `stop_ids`: end-of-turn tokens beyond the model's EOS (a chat template's, ChatWrap.end_of_turn).
    `also`: a second reading of each continuation (Generation.also_text).
    """
    ended = dict(
        iter_greedy(
            model,
            tokenizer,
            prompts,
            vectors,
            stops,
            max_new_tokens,
            batch_size,
            use_cache,
            shared_prefix,
            stop_ids,
            also,
        )
    )
    return [ended[i] for i in range(len(prompts))]


@torch.no_grad()  # a generator: grad mode is off while it runs, restored while its caller does
def iter_greedy(
    model: Any,
    tokenizer: Any,
    prompts: Sequence[str],
    vectors: torch.Tensor | None = None,
    stops: Sequence[str] = ("\n",),
    max_new_tokens: int = 32,
    batch_size: int | BatchSize = 16,
    use_cache: bool = True,
    shared_prefix: str | None = None,
    stop_ids: Iterable[int] = (),
    also: Until | None = None,
) -> Iterator[tuple[int, Generation]]:
    """generate_greedy's continuations as they end: (index of the prompt, generation), every
    prompt in flight (up to `batch_size` at a time), so a caller can save each as soon as it ends.
    On GPU out-of-memory the rows not yet ended start again, fewer at a time."""
    if max_new_tokens < 1 or (also is not None and also.max_new_tokens < 1):
        raise ValueError("max_new_tokens must be at least 1")
    readings = [Until(tuple(stops), max_new_tokens), *([also] if also is not None else [])]
    reserved = max(reading.max_new_tokens for reading in readings)
    limit = prompt_limit(model, 0 if vectors is None else vectors.shape[0], reserved)
    kept = [keep_last(tokenizer(prompt)["input_ids"], limit) for prompt in prompts]
    rows = [ids for ids, _ in kept]
    prefix = encode_prefix(model, tokenizer, rows, vectors, shared_prefix) if use_cache and shared_prefix else None
    eos_ids = stop_token_ids(model, tokenizer) | set(stop_ids)
    size = batch_size if isinstance(batch_size, BatchSize) else BatchSize(batch_size)
    done: set[int] = set()
    while len(done) < len(rows):
        pending = [i for i in range(len(rows)) if i not in done]
        try:
            for row, generation in decode(
                model, tokenizer, rows, pending, size.size, vectors, prefix, readings, use_cache, eos_ids
            ):
                done.add(row)
                cut = kept[row][1]
                yield row, replace(generation, truncated=cut) if cut else generation
        except torch.OutOfMemoryError:  # rows that ended are kept; the rest start again, fewer at a time
            size.halve("generate")


def stop_token_ids(model: Any, tokenizer: Any) -> set[int]:
    """EOS and the end-of-turn ids a chat model's generation config lists (Llama 3's <|eot_id|>)."""
    ids = {tokenizer.eos_token_id}
    configured = getattr(getattr(model, "generation_config", None), "eos_token_id", None)
    ids |= set(configured) if isinstance(configured, list) else {configured}
    return {i for i in ids if i is not None}


def tail_window(stops: Sequence[str]) -> int:
    """Generated tokens to decode when looking for a stop string that the newest token may have
    completed. A token holds at least one byte and a character at most four, so a stop string of
    L characters ends within the last 4L tokens; 8 more absorb what decoding from the middle of a
    sequence can change at the window's start (a split UTF-8 character, SentencePiece's leading
    space)."""
    return 4 * max((len(s) for s in stops), default=0) + 8


def stop_string_seen(tokenizer: Any, ids: list[int], stops: Sequence[str], window: int) -> bool:
    """Whether the decoded output holds a stop string, decoding only its tail (O(1) per step, not
    the whole answer again: GSM8K/MATH budgets run to hundreds of tokens). A tail that decodes
    to too few characters (tokens that decode to nothing) is widened to the whole output, and a
    stop seen in the tail is confirmed on the whole output, so the answer is exactly the one a
    full decode at every step would give (tests/unit/engine/test_generate.py compares the two)."""
    if not stops:
        return False
    tail = tokenizer.decode(ids[-window:], skip_special_tokens=True)
    if len(ids) > window and len(tail) < max(len(s) for s in stops) + 4:
        tail = tokenizer.decode(ids, skip_special_tokens=True)
    if not any(s in tail for s in stops):
        return False
    text = tokenizer.decode(ids, skip_special_tokens=True)
    return cut_at_stop(text, stops) != text


@dataclass
class Prefix:
    """The KV cache of [soft prompt, shared prefix tokens] for one row, and its length."""

    n_tokens: int  # text tokens of the prefix
    length: int  # cache positions (soft prompt + text tokens)
    cache: Any


def encode_prefix(
    model: Any, tokenizer: Any, rows: list[list[int]], vectors: torch.Tensor | None, text: str
) -> Prefix | None:
    """Encode the shared prefix once; None when some prompt does not tokenise with it as a prefix."""
    ids = tokenizer(text)["input_ids"]
    if not ids or any(len(row) <= len(ids) or row[: len(ids)] != ids for row in rows):
        return None  # a tokenizer that merges across the boundary: no sharing, same results
    dev = input_device(model)
    embeds = model.get_input_embeddings()(torch.tensor([ids], device=dev))
    if vectors is not None:
        embeds = torch.cat([vectors.to(embeds).unsqueeze(0), embeds], dim=1)
    length = embeds.shape[1]
    out = model(
        inputs_embeds=embeds,
        attention_mask=torch.ones(1, length, dtype=torch.long, device=dev),
        position_ids=torch.arange(length, device=dev).unsqueeze(0),
        use_cache=True,
        logits_to_keep=1,
    )
    return Prefix(len(ids), length, out.cache)


def after_prefix(
    prefix: Prefix, rows: Sequence[list[int]], pad_id: int, dev: torch.device
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, Any]:
    """Inputs of a batch that continues the shared prefix: each row's tokens after it (left-padded),
    the attention mask and positions over prefix and rows, and a copy of the prefix's cache per row."""
    ids, suffix_mask = pad_left([row[prefix.n_tokens :] for row in rows], pad_id, dev)
    cache = copy.deepcopy(prefix.cache)
    cache.batch_repeat_interleave(len(rows))
    mask = torch.cat([torch.ones(len(rows), prefix.length, dtype=torch.long, device=dev), suffix_mask], dim=1)
    return ids, mask, (mask.cumsum(dim=1) - 1).clamp(min=0), cache


def padded_inputs(
    model: Any, rows: Sequence[list[int]], vectors: torch.Tensor | None, pad_id: int, dev: torch.device
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Left-padded rows as embeddings, with the soft prompt right before each row's tokens (after
    its padding): inputs_embeds, attention mask, positions from the mask."""
    ids, mask = pad_left(rows, pad_id, dev)
    embeds = model.get_input_embeddings()(ids)
    if vectors is None:
        return embeds, mask, (mask.cumsum(dim=1) - 1).clamp(min=0)
    embeds, mask, positions, _ = insert_soft_prompt(embeds, vectors, mask)
    return embeds, mask, positions


def pad_left(rows: Sequence[list[int]], pad_id: int, dev: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    width = max(len(row) for row in rows)
    ids = torch.full((len(rows), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(rows), width), dtype=torch.long)
    for b, row in enumerate(rows):
        ids[b, width - len(row) :] = torch.tensor(row)
        mask[b, width - len(row) :] = 1
    return ids.to(dev), mask.to(dev)


def _prefill(
    model: Any,
    rows: list[list[int]],
    vectors: torch.Tensor | None,
    prefix: Prefix | None,
    pad_id: int,
    use_cache: bool,
) -> tuple[Any, torch.Tensor, torch.Tensor, torch.Tensor, Any]:
    """Run the prompts; returns last logits, mask, positions, embeddings (no-cache path) and cache."""
    dev = input_device(model)
    if prefix is not None:
        ids, mask, positions, cache = after_prefix(prefix, rows, pad_id, dev)
        out = model(
            input_ids=ids,
            attention_mask=mask,
            position_ids=positions[:, prefix.length :],
            cache=cache,
            use_cache=True,
            logits_to_keep=1,
        )
        return out.logits[:, -1], mask, positions, None, out.cache
    embeds, mask, positions = padded_inputs(model, rows, vectors, pad_id, dev)
    out = model(
        inputs_embeds=embeds, attention_mask=mask, position_ids=positions, use_cache=use_cache, logits_to_keep=1
    )
    return out.logits[:, -1], mask, positions, embeds, out.cache if use_cache else None


@torch.no_grad()
def decode(
    model: Any,
    tokenizer: Any,
    rows: list[list[int]],
    order: list[int],
    slots: int,
    vectors: torch.Tensor | None,
    prefix: Prefix | None,
    readings: list[Until],
    use_cache: bool,
    eos_ids: set[int],
) -> Iterator[tuple[int, Generation]]:
    """Decode rows `order` with at most `slots` in flight, yielding each (row, generation) as it ends.

    Continuous batching: when a quarter of the slots are free, the next rows in the queue are
    prefilled and join the batch, so a batch does not wait for its slowest row with most of its
    rows gone. Rows stay independent (a row's attention and positions see only its own columns),
    so the results are those of one row at a time. Without a cache, or with a cache that cannot
    be joined (mergeable), a batch is refilled only once it is empty: static batches."""
    queue = list(order)
    windows = [tail_window(reading.stops) for reading in readings]
    new_ids: dict[int, list[int]] = {row: [] for row in order}
    ended: dict[int, list[Generation | None]] = {row: [None] * len(readings) for row in order}
    at = prefix.length if prefix is not None else 0
    live: Live | None = None
    continuous = False
    while live is not None or queue:
        free = slots - (len(live.rows) if live is not None else 0)
        if queue and (live is None or (continuous and free >= max(1, slots // 4))):
            admitted, queue = queue[:free], queue[free:]
            logits, mask, positions, embeds, cache = _prefill(
                model, [rows[i] for i in admitted], vectors, prefix, tokenizer.pad_token_id, use_cache
            )
            new = Live(admitted, mask, positions, cache, None if use_cache else embeds, logits)
            if live is None:
                live, continuous = new, use_cache and mergeable(cache)
            else:
                live = join(live, new, at)
        tokens = live.logits.argmax(dim=-1)
        chosen = tokens.tolist()
        keep = []
        for batch_row, row in enumerate(live.rows):
            token, ids, done = chosen[batch_row], new_ids[row], ended[row]
            if token in eos_ids:
                for r, reading in enumerate(readings):
                    if done[r] is None:
                        done[r] = _finish(tokenizer, ids, "eos", len(rows[row]), reading.stops)
            else:
                ids.append(token)
                for r, reading in enumerate(readings):
                    if done[r] is not None:
                        continue
                    if stop_string_seen(tokenizer, ids, reading.stops, windows[r]):
                        done[r] = _finish(tokenizer, ids, "stop", len(rows[row]), reading.stops)
                    elif len(ids) == reading.max_new_tokens:
                        done[r] = _finish(tokenizer, ids, "length", len(rows[row]), reading.stops)
            if all(generation is not None for generation in done):
                yield row, _combined(done)
            else:
                keep.append(batch_row)
        if not keep:
            live = None  # every row ended: the next rows are a fresh batch
            continue
        if len(keep) < len(live.rows):  # some rows ended: drop them (their cache rows too)
            live, tokens = keep_rows(live, keep, tokens, continuous)
        # Nothing ended (most steps): no copy of the cache, mask or positions.
        mask = torch.cat([live.mask, torch.ones(len(keep), 1, dtype=live.mask.dtype, device=live.mask.device)], dim=1)
        positions = torch.cat([live.positions, live.positions[:, -1:] + 1], dim=1)
        next_tokens = tokens.unsqueeze(1)
        if use_cache:
            step_out = model(
                input_ids=next_tokens,
                attention_mask=mask,
                position_ids=positions[:, -1:],
                cache=live.cache,
                use_cache=True,
                logits_to_keep=1,
            )
            live = replace(live, mask=mask, positions=positions, cache=step_out.cache, logits=step_out.logits[:, -1])
        else:
            embeds = torch.cat([live.embeds, model.get_input_embeddings()(next_tokens)], dim=1)
            step_out = model(
                inputs_embeds=embeds, attention_mask=mask, position_ids=positions, use_cache=False, logits_to_keep=1
            )
            live = replace(live, mask=mask, positions=positions, embeds=embeds, logits=step_out.logits[:, -1])


def _combined(done: list[Generation | None]) -> Generation:
    """The first reading's generation, with the second reading's text beside it."""
    first, *others = done
    assert first is not None and all(other is not None for other in others)  # every reading ends by its budget
    return replace(first, also_text=others[0].text) if others else first


def _finish(tokenizer: Any, ids: list[int], reason: str, prompt_tokens: int, stops: Sequence[str]) -> Generation:
    return Generation(
        cut_at_stop(tokenizer.decode(ids, skip_special_tokens=True), stops), reason, prompt_tokens, len(ids)
    )
