"""The model zoo: tiny Llama-style (or GPT-2-style) base models pre-trained by recipe, and their SFT twins.

Outputs are ordinary Hugging Face model directories, so every later stage loads zoo models
and hub models through the same `from_pretrained` path.
"""

from __future__ import annotations

import dataclasses
import math
import random
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import torch
from tqdm import tqdm
from transformers import (
    AutoModelForCausalLM,
    AutoTokenizer,
    GenerationConfig,
    GPT2Config,
    GPT2LMHeadModel,
    LlamaConfig,
    LlamaForCausalLM,
)

from softeval.data.splits import load_split
from softeval.data.tasks import Task
from softeval.data.world import World
from softeval.engine.batching import encode_batch
from softeval.engine.models import NO_HUB_KERNELS
from softeval.io import atomic_directory, atomic_write_json, atomic_write_text
from softeval.names import BASE, POST
from softeval.provenance import provenance
from softeval.zoo.chat_style import chat_pair
from softeval.zoo.corpus import CorpusStyle, PretrainCorpus, Recipe

MAX_POSITIONS = 512


def set_determinism(seed: int, threads: int) -> None:
    """Same seed and thread count => bit-identical weights on CPU."""
    torch.manual_seed(seed)
    torch.set_num_threads(threads)
    torch.use_deterministic_algorithms(True)


def build_model(size: dict[str, Any], tokenizer: Any) -> torch.nn.Module:
    """A randomly initialised causal LM of the given size ("llama": RoPE, RMSNorm, SwiGLU; or "gpt2")."""
    special = {
        "bos_token_id": tokenizer.bos_token_id,
        "eos_token_id": tokenizer.eos_token_id,
        "pad_token_id": tokenizer.pad_token_id,
    }
    if size.get("arch", "llama") == "gpt2":
        config = GPT2Config(
            vocab_size=len(tokenizer),
            n_positions=MAX_POSITIONS,
            n_embd=size["width"],
            n_layer=size["layers"],
            n_head=size["heads"],
            resid_pdrop=0.0,
            embd_pdrop=0.0,
            attn_pdrop=0.0,
            **special,
        )
        return GPT2LMHeadModel(config)
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=size["width"],
        intermediate_size=size.get("ffn", 4 * size["width"]),
        num_hidden_layers=size["layers"],
        num_attention_heads=size["heads"],
        num_key_value_heads=size["heads"],
        max_position_embeddings=MAX_POSITIONS,
        tie_word_embeddings=True,
        **special,
    )
    return LlamaForCausalLM(config)


def lr_at(step: int, steps: int, warmup: int, peak: float) -> float:
    """Linear warm-up, then cosine decay to a tenth of the peak."""
    if step < warmup:
        return peak * (step + 1) / warmup
    progress = (step - warmup) / max(1, steps - warmup)
    return peak * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * progress)))


def train_loop(
    model: torch.nn.Module,
    batches: Iterator[dict[str, torch.Tensor]],
    steps: int,
    lr: float,
    warmup: int,
    desc: str,
) -> list[float]:
    """AdamW over all weights with gradient clipping; returns the loss of every step."""
    model.train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, betas=(0.9, 0.95), weight_decay=0.0)
    losses = []
    with tqdm(range(steps), desc=desc, unit="step", mininterval=5) as bar:
        for step in bar:
            for group in optimizer.param_groups:
                group["lr"] = lr_at(step, steps, warmup, lr)
            loss = model(**next(batches)).loss
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
            losses.append(loss.item())
            bar.set_postfix(loss=f"{losses[-1]:.3f}", refresh=False)
    model.eval()
    return losses


def packed_batches(corpus: PretrainCorpus, tokenizer: Any, batch_size: int, seq_len: int) -> Iterator[dict[str, Any]]:
    """Rows of whole documents separated by EOS, each row starting at a document start."""
    eos = tokenizer.eos_token_id
    pending: list[list[int]] = []
    while True:
        rows = []
        for _ in range(batch_size):
            row: list[int] = []
            while len(row) < seq_len:
                if not pending:
                    pending = tokenizer([corpus.document() for _ in range(256)])["input_ids"][::-1]
                row.extend([*pending.pop(), eos])
            rows.append(row[:seq_len])
        ids = torch.tensor(rows)
        yield {"input_ids": ids, "labels": ids}


def sft_batches(
    items: list[tuple[Task, dict[str, Any]]], tokenizer: Any, batch_size: int, seed: int, style: str = "target"
) -> Iterator[dict[str, torch.Tensor]]:
    """Shuffled task examples as (prompt, target), right-padded, loss on target and EOS only.

    style "target": the task's zero-shot prompt and exact target; "chat": an instruction and
    answer form of the twins' own (softeval.zoo.chat_style), drawn afresh each time.
    """
    rng = random.Random(seed)
    order: list[int] = []
    while True:
        if len(order) < batch_size:
            refill = list(range(len(items)))
            rng.shuffle(refill)
            order.extend(refill)
        chosen = [items[order.pop()] for _ in range(batch_size)]
        if style == "chat":
            pairs = [chat_pair(t, ex, rng) for t, ex in chosen]
        else:
            pairs = [(t.prompt(ex), t.target(ex)) for t, ex in chosen]
        batch = encode_batch(tokenizer, [p for p, _ in pairs], [t for _, t in pairs], side="right")
        yield {"input_ids": batch.input_ids, "attention_mask": batch.attention_mask, "labels": batch.labels}


def save_model(
    model: torch.nn.Module, tokenizer: Any, out_dir: Path, meta: dict[str, Any], losses: list[float]
) -> None:
    """Write a complete HF directory atomically, with the training curve and provenance."""
    model.generation_config = GenerationConfig(
        eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id, do_sample=False
    )
    with atomic_directory(out_dir) as tmp:
        model.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
        atomic_write_json(tmp / "softeval.json", meta)
        atomic_write_text(
            tmp / "train_curve.csv", "step,loss\n" + "".join(f"{i},{v:.6f}\n" for i, v in enumerate(losses))
        )


def training_meta(
    name: str, role: str, model: torch.nn.Module, losses: list[float], start: float, prov: dict[str, Any]
) -> dict[str, Any]:
    """What a reviewer wants to know about a trained model, stored beside its weights."""
    tail = losses[-20:]
    return {
        "model": name,
        "role": role,
        "parameters": sum(p.numel() for p in model.parameters()),
        "final_loss": sum(tail) / len(tail),
        "wall_seconds": round(time.perf_counter() - start, 1),
        "provenance": prov,
    }


def pretrain(
    *,
    name: str,
    world_path: Path,
    tasks: list[Task],
    tokenizer_dir: Path,
    recipe: Recipe,
    style: CorpusStyle,
    size: dict[str, int],
    training: dict[str, Any],
    seed: int,
    threads: int,
    out_dir: Path,
) -> None:
    """Pre-train one base model from scratch on its recipe's corpus."""
    set_determinism(seed, threads)
    world = World.load(world_path)
    tokenizer = AutoTokenizer.from_pretrained(tokenizer_dir)
    model = build_model(size, tokenizer)
    corpus = PretrainCorpus(world, tasks, recipe, seed=f"{seed}-{name}-corpus", style=style)
    batches = packed_batches(corpus, tokenizer, training["batch_size"], training["seq_len"])
    start = time.perf_counter()
    losses = train_loop(model, batches, training["steps"], training["lr"], training["warmup_steps"], f"pretrain {name}")
    params = {
        "recipe": {"coverage": recipe.coverage, "format_exposure": recipe.format_exposure},
        "corpus": dataclasses.asdict(style),
        "size": size,
        "pretrain": training,
        "tasks": {task.name: task.version for task in tasks},
        "world_seed": world.seed,
    }
    meta = training_meta(name, BASE, model, losses, start, provenance(params, seed=seed, threads=threads))
    save_model(model, tokenizer, out_dir, meta, losses)


def posttrain(
    *,
    name: str,
    base_dir: Path,
    tasks: list[Task],
    data_dirs: dict[str, Path],
    training: dict[str, Any],
    seed: int,
    threads: int,
    out_dir: Path,
) -> None:
    """Supervised fine-tuning of all weights on train-split Q&A of every task, in the task's own
    prompt and target or in the chat style (`training["style"]`)."""
    set_determinism(seed, threads)
    tokenizer = AutoTokenizer.from_pretrained(base_dir)
    model = AutoModelForCausalLM.from_pretrained(base_dir, **NO_HUB_KERNELS)
    items = [(task, example) for task in tasks for example in load_split(data_dirs[task.name], "train")]
    batches = sft_batches(items, tokenizer, training["batch_size"], seed, training.get("style", "target"))
    start = time.perf_counter()
    losses = train_loop(
        model, batches, training["steps"], training["lr"], training["warmup_steps"], f"posttrain {name}"
    )
    params = {"posttrain": training, "tasks": {task.name: task.version for task in tasks}}
    meta = training_meta(name, POST, model, losses, start, provenance(params, seed=seed, threads=threads))
    meta[BASE] = str(base_dir)
    save_model(model, tokenizer, out_dir, meta, losses)
