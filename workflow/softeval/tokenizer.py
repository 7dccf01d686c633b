"""A byte-level BPE tokenizer trained on the world's text, saved as a Hugging Face tokenizer.

Byte-level so that no string is ever unknown (model responses can contain anything).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import PreTrainedTokenizerFast

from softeval.context import keep_last
from softeval.io import atomic_directory

EOS = "<|endoftext|>"
IGNORE = -100  # label of tokens that carry no loss


def byte_level_bpe(vocab_size: int, special_tokens: list[str]) -> tuple[Tokenizer, trainers.BpeTrainer]:
    """An untrained byte-level BPE tokenizer and its trainer.

    Digits split one by one (as in Llama tokenizers): "290" is the same three tokens in
    "into 290 districts" and in "\\boxed{290}", so a known number can be written in any format.
    """
    core = Tokenizer(models.BPE())
    core.pre_tokenizer = pre_tokenizers.Sequence(
        [pre_tokenizers.Digits(individual_digits=True), pre_tokenizers.ByteLevel(add_prefix_space=False)]
    )
    core.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=special_tokens,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    return core, trainer


def train_tokenizer(texts: Iterable[str], vocab_size: int) -> PreTrainedTokenizerFast:
    core, trainer = byte_level_bpe(vocab_size, [EOS])
    core.train_from_iterator(texts, trainer=trainer)
    return PreTrainedTokenizerFast(
        tokenizer_object=core, eos_token=EOS, bos_token=EOS, pad_token=EOS, unk_token=None, model_max_length=512
    )


def save_tokenizer(tokenizer: PreTrainedTokenizerFast, out_dir: Path) -> None:
    with atomic_directory(out_dir) as tmp:
        tokenizer.save_pretrained(tmp)


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
    longer than `max_tokens` loses its first tokens (softeval.context), never its answer's.
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
