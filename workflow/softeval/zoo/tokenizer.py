"""A byte-level BPE tokenizer trained on the world's text, saved as a Hugging Face tokenizer.

Byte-level so that no string is ever unknown (model responses can contain anything).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import PreTrainedTokenizerFast

from softeval.io import atomic_directory

EOS = "<|endoftext|>"


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
