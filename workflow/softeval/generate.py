"""Greedy generation with an optional soft prompt, batched with left padding.

The soft prompt sits right before each row's query (after its padding) and positions follow
the attention mask, so a row's output does not depend on what it is batched with. A row
that stops (EOS, a stop string, or the token limit) leaves the batch and its KV cache rows
are dropped: finished rows cost nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch

from softeval.softprompt import insert_soft_prompt
from softeval.tokenizer import encode_batch


@dataclass(frozen=True)
class Generation:
    text: str
    stop_reason: str  # "eos" | "stop" | "length"
    prompt_tokens: int
    new_tokens: int


def cut_at_stop(text: str, stops: Sequence[str]) -> str:
    """The text before the first stop string (all of it if none occurs)."""
    return text[: min((text.find(s) for s in stops if s in text), default=len(text))]


@torch.no_grad()
def generate_greedy(
    model: Any,
    tokenizer: Any,
    prompts: Sequence[str],
    vectors: torch.Tensor | None = None,
    stops: Sequence[str] = ("\n",),
    max_new_tokens: int = 32,
    batch_size: int = 16,
    use_cache: bool = True,
) -> list[Generation]:
    """Greedy continuations of `prompts`, cut at the first stop string."""
    if max_new_tokens < 1:
        raise ValueError("max_new_tokens must be at least 1")
    out: list[Generation] = []
    for start in range(0, len(prompts), batch_size):
        out += _generate_chunk(
            model, tokenizer, prompts[start : start + batch_size], vectors, stops, max_new_tokens, use_cache
        )
    return out


def _generate_chunk(
    model: Any,
    tokenizer: Any,
    prompts: Sequence[str],
    vectors: torch.Tensor | None,
    stops: Sequence[str],
    max_new_tokens: int,
    use_cache: bool,
) -> list[Generation]:
    batch = encode_batch(tokenizer, prompts)
    embeds = model.get_input_embeddings()(batch.input_ids)
    if vectors is None:
        mask = batch.attention_mask
        positions = (mask.cumsum(dim=1) - 1).clamp(min=0)
    else:
        embeds, mask, positions, _ = insert_soft_prompt(embeds, vectors, batch.attention_mask)
    prompt_tokens = batch.attention_mask.sum(dim=1).tolist()
    new_ids: list[list[int]] = [[] for _ in prompts]
    results: list[Generation | None] = [None] * len(prompts)
    active = list(range(len(prompts)))  # original row of each live batch row
    logits = model(
        inputs_embeds=embeds, attention_mask=mask, position_ids=positions, use_cache=use_cache, logits_to_keep=1
    )
    cache = logits.past_key_values if use_cache else None
    next_logits = logits.logits[:, -1]
    for step in range(max_new_tokens):
        tokens = next_logits.argmax(dim=-1)
        keep = []
        for live, row in enumerate(active):
            token = int(tokens[live])
            if token == tokenizer.eos_token_id:
                results[row] = _finish(tokenizer, new_ids[row], "eos", prompt_tokens[row], stops)
                continue
            new_ids[row].append(token)
            text = tokenizer.decode(new_ids[row], skip_special_tokens=True)
            if cut_at_stop(text, stops) != text:
                results[row] = _finish(tokenizer, new_ids[row], "stop", prompt_tokens[row], stops)
            elif step == max_new_tokens - 1:
                results[row] = _finish(tokenizer, new_ids[row], "length", prompt_tokens[row], stops)
            else:
                keep.append(live)
        if not keep:
            break
        index = torch.tensor(keep)
        active = [active[i] for i in keep]
        mask = torch.cat([mask[index], torch.ones(len(keep), 1, dtype=mask.dtype)], dim=1)
        positions = torch.cat([positions[index], positions[index, -1:] + 1], dim=1)
        next_tokens = tokens[index].unsqueeze(1)
        if use_cache:
            cache.batch_select_indices(index)
            step_out = model(
                input_ids=next_tokens,
                attention_mask=mask,
                position_ids=positions[:, -1:],
                cache=cache,
                use_cache=True,
                logits_to_keep=1,
            )
            cache = step_out.cache
        else:
            embeds = torch.cat([embeds[index], model.get_input_embeddings()(next_tokens)], dim=1)
            step_out = model(
                inputs_embeds=embeds, attention_mask=mask, position_ids=positions, use_cache=False, logits_to_keep=1
            )
        next_logits = step_out.logits[:, -1]
    return [r for r in results if r is not None]


def _finish(tokenizer: Any, ids: list[int], reason: str, prompt_tokens: int, stops: Sequence[str]) -> Generation:
    return Generation(
        cut_at_stop(tokenizer.decode(ids, skip_special_tokens=True), stops), reason, prompt_tokens, len(ids)
    )
