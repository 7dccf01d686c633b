"""Training a soft prompt (`tune`): the starting vectors, the learning-rate schedule, the answer-token
loss, and a batch's gradient accumulated in smaller micro-batches on GPU out-of-memory; the model
frozen, its weights never change.
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch
from tqdm import tqdm

from softeval.engine.backoff import BatchSize
from softeval.engine.batching import IGNORE, TokenBatch, encode_batch
from softeval.engine.context import prompt_limit
from softeval.engine.models import input_device
from softeval.engine.softprompt.scoring import answer_logprobs
from softeval.schema import InputError
from softeval.settings import TuneSettings


@dataclass
class TuneResult:
    vectors: torch.Tensor
    losses: list[float]
    snapshots: dict[int, torch.Tensor]
    wall_seconds: float


def answer_loss(model: Any, vectors: torch.Tensor | None, batch: TokenBatch) -> torch.Tensor:
    """Mean cross-entropy of the answer tokens."""
    logprobs, _ = answer_logprobs(model, vectors, batch)
    return -logprobs.mean()


def initial_vectors(model: Any, tokenizer: Any, config: TuneSettings, generator: torch.Generator) -> torch.Tensor:
    """Starting vectors: sampled vocabulary rows, an init text's embeddings, or noise.

    Rows go through the embedding module, never its raw `.weight`: some models scale inside it
    (Gemma by sqrt(hidden size)), and a prompt must start where the model's own tokens live."""
    embed = model.get_input_embeddings()
    vocab, width = embed.weight.shape
    dev = embed.weight.device
    if config.init == "vocab":
        rows = torch.randint(0, vocab, (config.n_tokens,), generator=generator)
        return embed(rows.to(dev)).detach().float()
    if config.init == "text":
        if not config.init_text:
            raise InputError("soft-prompt init 'text' needs init_text; set it or use init 'vocab'")
        ids = tokenizer(config.init_text)["input_ids"]
        ids = (ids * math.ceil(config.n_tokens / len(ids)))[: config.n_tokens]
        return embed(torch.tensor(ids, device=dev)).detach().float()
    if config.init == "random":
        return torch.randn(config.n_tokens, width, generator=generator).to(dev) * embedding_std(embed)
    raise InputError(f"unknown soft-prompt init {config.init!r}; use vocab, text or random")


def embedding_std(embed: Any, chunk: int = 8192) -> float:
    """Standard deviation of every vocabulary row as the embedding module outputs it, in chunks
    (a 256k x 3072 table in float32 would be 3 GB at once)."""
    weight = embed.weight
    if type(embed) is torch.nn.Embedding:  # unscaled: the table itself
        return float(weight.detach().float().std())
    total, squares, count = 0.0, 0.0, 0
    with torch.no_grad():
        for start in range(0, weight.shape[0], chunk):
            rows = embed(torch.arange(start, min(start + chunk, weight.shape[0]), device=weight.device)).double()
            total, squares, count = total + float(rows.sum()), squares + float((rows**2).sum()), count + rows.numel()
    return math.sqrt(max(0.0, (squares - total * total / count) / (count - 1)))


def lr_factor(step: int, config: TuneSettings) -> float:
    if step < config.warmup_steps:
        return (step + 1) / config.warmup_steps
    if config.schedule == "cosine":
        progress = (step - config.warmup_steps) / max(1, config.steps - config.warmup_steps)
        return 0.5 * (1 + math.cos(math.pi * progress))
    return 1.0


def freeze(model: Any) -> None:
    """Eval mode (no dropout) and no gradients for any model weight."""
    model.eval()
    for parameter in model.parameters():
        parameter.requires_grad_(False)


def tune(
    model: Any,
    tokenizer: Any,
    pairs: Sequence[tuple[str, str]],
    config: TuneSettings,
    on_snapshot: Callable[[int, torch.Tensor], None] | None = None,
) -> TuneResult:
    """Train the soft prompt on (prompt, answer) pairs; the model's weights never change."""
    freeze(model)
    if config.gradient_checkpointing:
        enable_checkpointing(model)
    generator = torch.Generator().manual_seed(config.seed)
    vectors = torch.nn.Parameter(initial_vectors(model, tokenizer, config, generator).to(input_device(model)))
    micro = BatchSize(config.batch_size)
    optimizer = torch.optim.AdamW([vectors], lr=config.lr, weight_decay=config.weight_decay)
    rng = random.Random(config.seed)
    order: list[int] = []
    losses: list[float] = []
    snapshots: dict[int, torch.Tensor] = {}

    def snapshot(step: int) -> None:
        if step in config.snapshots:
            snapshots[step] = vectors.detach().clone()
            if on_snapshot:
                on_snapshot(step, snapshots[step])

    start = time.perf_counter()
    with tqdm(range(config.steps), desc="tune", unit="step", mininterval=5) as bar:
        for step in bar:
            snapshot(step)
            while len(order) < config.batch_size:  # a train split smaller than a batch: reshuffle again
                refill = list(range(len(pairs)))
                rng.shuffle(refill)
                order.extend(refill)
            chosen = [pairs[order.pop()] for _ in range(config.batch_size)]
            for group in optimizer.param_groups:
                group["lr"] = config.lr * lr_factor(step, config)
            losses.append(backward_with_backoff(model, tokenizer, vectors, chosen, micro))
            if not math.isfinite(losses[-1]):
                raise InputError(
                    f"tuning diverged: the loss is {losses[-1]} at step {step}; nothing was saved. Lower "
                    "evaluation.tune.lr, or check the model's weights (a NaN in them gives a NaN loss)"
                )
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
            elapsed = time.perf_counter() - start
            bar.set_postfix(loss=f"{losses[-1]:.3f}", ex_per_s=f"{(step + 1) * config.batch_size / elapsed:.1f}")
    if not torch.isfinite(vectors).all():
        raise InputError("tuning diverged: the soft prompt holds NaN or infinite values; nothing was saved")
    snapshot(config.steps)
    return TuneResult(vectors.detach().clone(), losses, snapshots, round(time.perf_counter() - start, 2))


def backward_with_backoff(
    model: Any, tokenizer: Any, vectors: torch.Tensor, chosen: Sequence[tuple[str, str]], micro: BatchSize
) -> float:
    """Accumulate the gradient of one batch's loss; on GPU out-of-memory, in smaller micro-batches.

    The loss is the mean over all answer tokens of the batch whatever the micro-batch size,
    so a backoff changes memory use, not the optimisation.
    """
    limit = prompt_limit(model, vectors.shape[0], 0)  # an over-long train example keeps its end
    while True:
        try:
            parts = [chosen[i : i + micro.size] for i in range(0, len(chosen), micro.size)]
            batches = [
                encode_batch(tokenizer, [p for p, _ in part], [t for _, t in part], max_tokens=limit) for part in parts
            ]
            if len(batches) == 1:
                loss = answer_loss(model, vectors, batches[0])
                loss.backward()
                return loss.item()
            total = sum(int((b.labels[:, 1:] != IGNORE).sum()) for b in batches if b.labels is not None)
            value = 0.0
            for batch in batches:
                logprobs, _ = answer_logprobs(model, vectors, batch)
                part_loss = -logprobs.sum() / total
                part_loss.backward()
                value += part_loss.item()
            return value
        except torch.OutOfMemoryError:
            vectors.grad = None
            micro.halve("tune")


def enable_checkpointing(model: Any) -> None:
    """Recompute activations in the backward pass (less memory, ~30% more time).

    Hugging Face checkpoints only in training mode; dropout modules stay in eval mode and
    attention dropout is zeroed, so the forward pass is the eval-mode one.
    """
    kwargs = {"use_reentrant": False}
    if hasattr(model, "activation_checkpointing_enable"):  # transformers >= 5.x names it so
        model.activation_checkpointing_enable(activation_checkpointing_kwargs=kwargs)
    else:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs=kwargs)
    model.train()
    for module in model.modules():
        if isinstance(module, torch.nn.Dropout):
            module.eval()
        if isinstance(getattr(module, "attention_dropout", None), float):
            module.attention_dropout = 0.0
