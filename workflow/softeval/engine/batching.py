"""Token batches: prompts (and answers) tokenised, cut to fit and padded, with loss labels.

One owner for IGNORE, TokenBatch and encode_batch: soft-prompt tuning, option scoring, the
zoo's training and the local-LM judge all batch text the same way.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch

from softeval.engine.context import keep_last

IGNORE = -100  # label of tokens that carry no loss


def prompt_and_answer_ids(tokenizer: Any, prompt: str, answer: str, eos: bool = True) -> tuple[list[int], list[int]]:
    """Token ids of a prompt and of its answer (+ EOS unless eos=False), split where the answer starts.

    The answer is tokenised in context (prompt + answer), as the model will see it.
    """
    prompt_ids = tokenizer(prompt)["input_ids"]
    answer_ids = tokenizer(prompt + answer)["input_ids"][len(prompt_ids) :]
    return prompt_ids, [*answer_ids, tokenizer.eos_token_id] if eos else answer_ids


@dataclass
class TokenBatch:
    """Padded token ids, their mask, and labels (IGNORE outside the answer)."""

    input_ids: torch.Tensor
    attention_mask: torch.Tensor
    labels: torch.Tensor | None = None
    truncated: tuple[int, ...] = ()  # tokens cut from each row's front to fit `max_tokens`


def encode_batch(
    tokenizer: Any,
    prompts: Sequence[str],
    targets: Sequence[str] | None = None,
    eos: bool = True,
    side: str = "left",
    max_tokens: int | None = None,
) -> TokenBatch:
    """Tokenise prompts (and answers, + EOS unless eos=False) and pad them into one batch.

    Left padding (the default) is for inference and soft prompts, whose positions come from
    the mask; right padding suits plain training, where positions start at 0 anyway. A row
    longer than `max_tokens` loses its first tokens (softeval.engine.context), never its answer's.
    """
    rows, answers, cuts = [], [], []
    for i, prompt in enumerate(prompts):
        if targets is None:
            prompt_ids, answer_ids = tokenizer(prompt)["input_ids"], []
        else:
            prompt_ids, answer_ids = prompt_and_answer_ids(tokenizer, prompt, targets[i], eos=eos)
        row, cut = keep_last(prompt_ids + answer_ids, max_tokens)
        rows.append(row)
        answers.append(min(len(answer_ids), len(row)))
        cuts.append(cut)
    width = max(len(r) for r in rows)
    ids = torch.full((len(rows), width), tokenizer.pad_token_id, dtype=torch.long)
    mask = torch.zeros((len(rows), width), dtype=torch.long)
    labels = torch.full((len(rows), width), IGNORE, dtype=torch.long)
    for b, (row, n_answer) in enumerate(zip(rows, answers, strict=True)):
        start = width - len(row) if side == "left" else 0
        ids[b, start : start + len(row)] = torch.tensor(row)
        mask[b, start : start + len(row)] = 1
        if n_answer:
            labels[b, start + len(row) - n_answer : start + len(row)] = torch.tensor(row[-n_answer:])
    return TokenBatch(ids, mask, labels if targets is not None else None, tuple(cuts))
