"""Where the soft prompt sits and what it is scored by: `insert_soft_prompt` places the vectors
after each row's left padding, right before the query, and `answer_logprobs` gives every answer
token's log-probability (the projection at the answer positions alone, `projection.kept_logits`).
Shared by the tuning loss, option log-likelihoods, generation and the hf judge.
"""

from __future__ import annotations

from typing import Any

import torch

from softeval.engine.batching import IGNORE, TokenBatch
from softeval.engine.models import input_device
from softeval.engine.softprompt.projection import kept_logits


def insert_soft_prompt(
    embeddings: torch.Tensor, vectors: torch.Tensor, attention_mask: torch.Tensor, labels: torch.Tensor | None = None
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor | None]:
    """Place `vectors` after each row's left padding, right before its first real token.

    Returns inputs_embeds, the extended attention mask, position ids derived from that mask,
    and the labels shifted to match (IGNORE on the soft prompt).
    """
    batch, length, _ = embeddings.shape
    n = vectors.shape[0]
    pad = (attention_mask == 0).sum(dim=1, keepdim=True)  # left padding per row
    j = torch.arange(length + n, device=embeddings.device).unsqueeze(0)
    virtual = (j >= pad) & (j < pad + n)
    token_index = torch.where(j < pad, j, j - n).clamp(0, length - 1).expand(batch, -1)
    tokens = embeddings.gather(1, token_index.unsqueeze(-1).expand(-1, -1, embeddings.shape[-1]))
    prompt = vectors.to(embeddings)[(j - pad).clamp(0, n - 1)]
    inputs_embeds = torch.where(virtual.unsqueeze(-1), prompt, tokens)
    mask = torch.where(virtual, torch.ones_like(token_index), attention_mask.gather(1, token_index))
    position_ids = (mask.cumsum(dim=1) - 1).clamp(min=0)
    if labels is not None:
        labels = torch.where(virtual, torch.full_like(token_index, IGNORE), labels.gather(1, token_index))
    return inputs_embeds, mask, position_ids, labels


def answer_logprobs(model: Any, vectors: torch.Tensor | None, batch: TokenBatch) -> tuple[torch.Tensor, torch.Tensor]:
    """Log-probability of every answer token, and the batch row each belongs to.

    The vocabulary projection runs only at answer positions, in fp32, inside the model's own
    forward (kept_logits: softcapping and logit scales included). `vectors=None` scores the
    plain prompt (no soft prompt).
    """
    assert batch.labels is not None
    dev = input_device(model)
    embeds = model.get_input_embeddings()(batch.input_ids.to(dev))
    attention_mask, labels = batch.attention_mask.to(dev), batch.labels.to(dev)
    if vectors is None:
        mask = attention_mask
        inputs_embeds, positions = embeds, (mask.cumsum(dim=1) - 1).clamp(min=0)
    else:
        inputs_embeds, mask, positions, labels = insert_soft_prompt(embeds, vectors, attention_mask, labels)
    assert labels is not None
    targets = labels[:, 1:]
    keep = targets != IGNORE

    def answers(hidden: torch.Tensor) -> torch.Tensor:  # token t+1 is predicted at position t
        return hidden[:, :-1][keep.to(hidden.device)]

    logits, _ = kept_logits(
        model, answers, inputs_embeds=inputs_embeds, attention_mask=mask, position_ids=positions, use_cache=False
    )
    picked = targets[keep].to(logits.device).unsqueeze(1)
    logprobs = logits.log_softmax(dim=-1).gather(1, picked).squeeze(1)
    return logprobs, keep.nonzero()[:, 0]
