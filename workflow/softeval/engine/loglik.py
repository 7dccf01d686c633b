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

from softeval.data.tasks import Task
from softeval.engine.backoff import BatchSize, in_batches
from softeval.engine.batching import encode_batch
from softeval.engine.context import prompt_limit
from softeval.engine.generate import Prefix, after_prefix, encode_prefix, padded_inputs
from softeval.engine.methods import ChatWrap, response_target
from softeval.engine.models import input_device
from softeval.engine.softprompt import answer_logprobs, kept_logits


@dataclass(frozen=True)
class OptionScores:
    """Summed log-likelihood and token count of each option, and what they choose."""

    logliks: list[float]
    lengths: list[int]
    truncated: int = 0  # most prompt tokens cut from the left for any option (softeval.engine.context)

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
    shared_prefix: str | None = None,
    share_prompt: bool = True,
) -> list[OptionScores]:
    """Score every option of every example after its prompt, about `batch_size` options at a time.

    With `share_prompt` (the default), each prompt (with its soft prompt) runs once and its
    options are scored from its KV cache; `shared_prefix` (text every prompt starts with: the
    instruction, the few-shot examples) runs once per call. A prompt too long to fit beside its
    options (softeval.engine.context) is scored whole, option by option, as without `share_prompt`.
    """
    targets = [
        [response_target(task.option_target(example, k), chat) for k in range(len(example["options"]))]
        for example in examples
    ]
    if len(prompts) != len(examples):
        raise ValueError("one prompt per example")
    limit = prompt_limit(model, 0 if vectors is None else vectors.shape[0], 0)
    scores: list[OptionScores | None] = [None] * len(examples)
    shared: list[tuple[int, list[int], list[list[int]]]] = []
    whole: list[int] = []
    for i, prompt in enumerate(prompts):
        prompt_ids = tokenizer(prompt)["input_ids"]
        answers = [tokenizer(prompt + target)["input_ids"][len(prompt_ids) :] for target in targets[i]]
        fits = limit is None or len(prompt_ids) + max(len(a) for a in answers) <= limit
        if share_prompt and fits and prompt_ids and all(answers):
            shared.append((i, prompt_ids, answers))
        else:
            whole.append(i)
    if shared:
        size = batch_size if isinstance(batch_size, BatchSize) else BatchSize(batch_size)
        rows = [ids for _, ids, _ in shared]
        prefix = encode_prefix(model, tokenizer, rows, vectors, shared_prefix) if shared_prefix else None
        widest = max(len(answers) for _, _, answers in shared)
        per_batch = BatchSize(max(1, size.size // widest))  # examples per batch, so options per batch <= size

        def run(chunk: Sequence[tuple[int, list[int], list[list[int]]]]) -> list[list[float]]:
            return _score_from_prompt_cache(model, tokenizer.pad_token_id, list(chunk), vectors, prefix)

        for (i, _, answers), logliks in zip(shared, in_batches(shared, per_batch, run, "loglik"), strict=True):
            scores[i] = OptionScores(logliks, [len(a) for a in answers])
    if whole:
        for i, score in zip(
            whole,
            _score_whole(
                model, tokenizer, [prompts[i] for i in whole], [targets[i] for i in whole], vectors, batch_size, limit
            ),
            strict=True,
        ):
            scores[i] = score
    return [s for s in scores if s is not None]


def _score_whole(
    model: Any,
    tokenizer: Any,
    prompts: Sequence[str],
    targets: Sequence[list[str]],
    vectors: torch.Tensor | None,
    batch_size: int | BatchSize,
    limit: int | None,
) -> list[OptionScores]:
    """Each (prompt, option) as one row of its own, `batch_size` rows at a time."""
    pairs = [(prompt, target) for prompt, options in zip(prompts, targets, strict=True) for target in options]

    def run(chunk: Sequence[tuple[str, str]]) -> list[tuple[float, int, int]]:
        prompts_, targets_ = [p for p, _ in chunk], [t for _, t in chunk]
        batch = encode_batch(tokenizer, prompts_, targets_, eos=False, max_tokens=limit)
        logprobs, rows = answer_logprobs(model, vectors, batch)
        rows, logprobs = rows.cpu(), logprobs.float().cpu()
        sums = torch.zeros(len(chunk)).index_add_(0, rows, logprobs).tolist()
        counts = torch.bincount(rows, minlength=len(chunk)).tolist()
        return list(zip(sums, counts, batch.truncated, strict=True))

    scored = in_batches(pairs, batch_size, run, "loglik")
    out, cursor = [], 0
    for options in targets:
        part = scored[cursor : cursor + len(options)]
        out.append(OptionScores([ll for ll, _, _ in part], [k for _, k, _ in part], max(c for _, _, c in part)))
        cursor += len(options)
    return out


def _score_from_prompt_cache(
    model: Any,
    pad_id: int,
    chunk: list[tuple[int, list[int], list[list[int]]]],
    vectors: torch.Tensor | None,
    prefix: Prefix | None,
) -> list[list[float]]:
    """Run each prompt once, then all its options from the prompt's KV cache (right-padded after it).

    Both passes are the model's own forward (softprompt.kept_logits): the prompt pass keeps the
    hidden state its output projection gets at each prompt's last position, the option pass
    projects that and the options' positions in one fp32 projection, and applies what the
    forward applies after it (softcapping, a logit scale)."""
    prompt_ids = [ids for _, ids, _ in chunk]
    last, mask, positions, cache = _encode_prompts(model, prompt_ids, vectors, prefix, pad_id)
    dev = mask.device
    owner = [b for b, (_, _, answers) in enumerate(chunk) for _ in answers]
    options = [answer for _, _, answers in chunk for answer in answers]
    index = torch.tensor(owner, device=dev)
    width = max(len(a) for a in options)
    ids = torch.full((len(options), width), pad_id, dtype=torch.long)
    option_mask = torch.zeros((len(options), width), dtype=torch.long)
    for r, answer in enumerate(options):
        ids[r, : len(answer)] = torch.tensor(answer)
        option_mask[r, : len(answer)] = 1
    ids, option_mask = ids.to(dev), option_mask.to(dev)
    cache.batch_select_indices(index)  # each prompt's cache once per option
    after = positions[index, -1:] + 1 + torch.arange(width, device=dev).unsqueeze(0)
    keep = option_mask.bool()

    def predicting(hidden: torch.Tensor) -> torch.Tensor:
        # token j of an option is predicted at the position before it: the prompt's last for j = 0
        before = torch.cat([last[index.to(last.device)].unsqueeze(1).to(hidden.device), hidden[:, :-1]], dim=1)
        return before[keep.to(hidden.device)]

    logits, _ = kept_logits(
        model,
        predicting,
        input_ids=ids,
        attention_mask=torch.cat([mask[index], option_mask], dim=1),
        position_ids=after,
        cache=cache,
        use_cache=True,
    )
    logprobs = logits.log_softmax(dim=-1).gather(1, ids[keep].to(logits.device).unsqueeze(1)).squeeze(1).cpu()
    rows = keep.nonzero()[:, 0].cpu()
    sums = torch.zeros(len(options)).index_add_(0, rows, logprobs).tolist()
    out_rows, cursor = [], 0
    for _, _, answers in chunk:
        out_rows.append(sums[cursor : cursor + len(answers)])
        cursor += len(answers)
    return out_rows


def _encode_prompts(
    model: Any, rows: list[list[int]], vectors: torch.Tensor | None, prefix: Prefix | None, pad_id: int
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, Any]:
    """The prompts, left-padded (after the shared prefix's cache when there is one): the hidden
    state the output projection gets at each prompt's last position (nothing is projected here),
    the attention mask, the positions and the KV cache."""
    dev = input_device(model)
    kept: list[torch.Tensor] = []

    def last_position(hidden: torch.Tensor) -> torch.Tensor:
        kept.append(hidden[:, -1])
        return hidden[:, :0].flatten(0, 1)  # no rows: the options' pass projects this one

    if prefix is not None:
        ids, mask, positions, cache = after_prefix(prefix, rows, pad_id, dev)
        inputs: dict[str, Any] = {"input_ids": ids, "position_ids": positions[:, prefix.length :], "cache": cache}
    else:
        embeds, mask, positions = padded_inputs(model, rows, vectors, pad_id, dev)
        inputs = {"inputs_embeds": embeds, "position_ids": positions}
    _, out = kept_logits(model, last_position, attention_mask=mask, use_cache=True, **inputs)
    return kept[0], mask, positions, out.cache
