"""Knowledge of closed tasks: rank the listed options by their log-likelihood.

Each option is scored as the response the model would write ("B. Talvish"), after the
same prompt (and soft prompt) as generation, so knowledge and format are measured on
the same footing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch

from softeval.backoff import BatchSize, in_batches
from softeval.context import prompt_limit
from softeval.methods import ChatWrap, response_target
from softeval.softprompt import answer_logprobs
from softeval.tasks import Task
from softeval.tokenizer import encode_batch


@dataclass(frozen=True)
class OptionScores:
    """Summed log-likelihood and token count of each option, and what they choose."""

    logliks: list[float]
    lengths: list[int]
    truncated: int = 0  # most prompt tokens cut from the left for any option (softeval.context)

    @property
    def ranking(self) -> list[int]:
        """Option indices, most likely first (ties keep the listed order)."""
        return sorted(range(len(self.logliks)), key=lambda i: -self.logliks[i])

    @property
    def chosen(self) -> int:
        return self.ranking[0]

    @property
    def chosen_normalized(self) -> int:
        """The choice under per-token (length-normalised) log-likelihood."""
        per_token = [ll / n for ll, n in zip(self.logliks, self.lengths, strict=True)]
        return max(range(len(per_token)), key=lambda i: (per_token[i], -i))


@torch.no_grad()
def score_options(
    model: Any,
    tokenizer: Any,
    task: Task,
    prompts: Sequence[str],
    examples: Sequence[dict[str, Any]],
    vectors: torch.Tensor | None = None,
    batch_size: int | BatchSize = 32,
    chat: ChatWrap | None = None,
) -> list[OptionScores]:
    """Score every option of every example after its prompt, `batch_size` options at a time."""
    pairs = [
        (i, prompt, response_target(task.option_target(example, k), chat))
        for i, (prompt, example) in enumerate(zip(prompts, examples, strict=True))
        for k in range(len(example["options"]))
    ]

    limit = prompt_limit(model, 0 if vectors is None else vectors.shape[0], 0)

    def run(chunk: Sequence[tuple[int, str, str]]) -> list[tuple[float, int, int]]:
        prompts_, targets = [p for _, p, _ in chunk], [t for _, _, t in chunk]
        batch = encode_batch(tokenizer, prompts_, targets, eos=False, max_tokens=limit)
        logprobs, rows = answer_logprobs(model, vectors, batch)
        rows, logprobs = rows.cpu(), logprobs.float().cpu()
        sums = torch.zeros(len(chunk)).index_add_(0, rows, logprobs).tolist()
        counts = torch.bincount(rows, minlength=len(chunk)).tolist()
        return list(zip(sums, counts, batch.truncated, strict=True))

    scored = in_batches(pairs, batch_size, run, "loglik")
    out, cursor = [], 0
    for example in examples:
        n = len(example["options"])
        part = scored[cursor : cursor + n]
        out.append(OptionScores([ll for ll, _, _ in part], [k for _, k, _ in part], max(c for _, _, c in part)))
        cursor += n
    return out
