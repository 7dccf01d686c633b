"""Randomly initialised Llama-style models with a real-size vocabulary, for smoke runs.

They exercise the real-model path end to end on CPU — a Llama architecture loaded by
`AutoModelForCausalLM` from a directory, a 32k-token BPE tokenizer that adds BOS like Llama's,
and (for the post-trained role) a ChatML chat template with its own end-of-turn token —
without a download. Their answers are noise; only the plumbing is under test.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Iterator
from pathlib import Path

import torch
from tokenizers import processors
from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

from softeval.io import atomic_directory, read_jsonl
from softeval.names import POST
from softeval.settings import RandomModelSettings
from softeval.zoo.tokenizer import byte_level_bpe

BOS, EOS, TURN_START, TURN_END = "<s>", "</s>", "<|im_start|>", "<|im_end|>"
CHATML = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n{{ message['content'] }}<|im_end|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def filler_words(n: int, seed: int) -> Iterator[str]:
    """Seeded pseudo-words: enough distinct character pairs for BPE to fill a large vocabulary."""
    rng = random.Random(seed)
    letters = "abcdefghijklmnopqrstuvwxyz"
    for _ in range(n):
        yield "".join(rng.choice(letters) for _ in range(rng.randint(3, 12)))


def train_llama_style_tokenizer(texts: Iterable[str], vocab_size: int, seed: int = 0) -> PreTrainedTokenizerFast:
    """Byte-level BPE of `vocab_size` tokens trained on `texts` plus filler; adds BOS like Llama."""
    core, trainer = byte_level_bpe(vocab_size, [BOS, EOS, TURN_START, TURN_END])

    def corpus() -> Iterator[str]:
        yield from texts
        words = list(filler_words(vocab_size * 2, seed))
        for start in range(0, len(words), 64):
            yield " ".join(words[start : start + 64])

    core.train_from_iterator(corpus(), trainer=trainer)
    core.post_processor = processors.TemplateProcessing(
        single=f"{BOS} $A", pair=f"{BOS} $A {BOS} $B", special_tokens=[(BOS, core.token_to_id(BOS))]
    )
    return PreTrainedTokenizerFast(
        tokenizer_object=core,
        bos_token=BOS,
        eos_token=EOS,
        pad_token=EOS,
        additional_special_tokens=[TURN_START, TURN_END],
        model_max_length=2048,
    )


def task_texts(data_files: Iterable[Path]) -> Iterator[str]:
    """Questions, answers and options of prepared task splits: the tokenizer's real text."""
    for path in data_files:
        for row in read_jsonl(path, "task split"):
            yield " ".join(str(v) for v in (row["question"], row["answer"], *(row.get("options") or [])))


def build_random_model(
    settings: RandomModelSettings, tokenizer_dir: Path, out_dir: Path, role: str, chat: bool
) -> None:
    """Write a Hugging Face model directory: random weights (seeded per role) and the tokenizer."""
    tokenizer = PreTrainedTokenizerFast.from_pretrained(str(tokenizer_dir))
    if chat:
        tokenizer.chat_template = CHATML
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=settings.width,
        intermediate_size=4 * settings.width,
        num_hidden_layers=settings.layers,
        num_attention_heads=settings.heads,
        num_key_value_heads=settings.heads,
        max_position_embeddings=2048,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        tie_word_embeddings=True,
    )
    torch.manual_seed(settings.seed * 2 + (role == POST))
    model = LlamaForCausalLM(config)
    if chat:  # a chat model ends its turn with <|im_end|>, as instruct models list it in generation_config
        model.generation_config.eos_token_id = [tokenizer.eos_token_id, tokenizer.convert_tokens_to_ids(TURN_END)]
    with atomic_directory(out_dir) as tmp:
        model.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
