"""Soft-prompt tuning: N trainable vectors placed right before the query, a frozen model.

The vectors sit after any left padding, so every row sees exactly [soft prompt, query]
whatever its length; positions follow the attention mask. The loss covers the answer
tokens only, and the vocabulary projection is applied at those positions alone: with
150k-token vocabularies, full-sequence logits would be most of the cost of a step.

Every score softeval computes from logits (option log-likelihoods, the tuning loss, the hf
judge) goes through `kept_logits`: the model's own forward, with its output-embedding module
replaced for that one call by a projection of the kept positions only. Whatever the forward
does after the projection (Gemma 2/3's final-logit softcapping, Cohere's logit_scale,
Granite's logits_scaling) therefore applies as it does in `model(...).logits`, with no list of
architectures to keep up to date. The projection runs in fp32 even for a bf16/fp16 model:
bf16 logits are spaced 0.125 apart for |logit| in [16, 32), so a 12-token answer's sum would
move by tenths of a nat. On an fp32 model it is the output module itself, bit for bit.
"""

from __future__ import annotations

import json
import math
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from safetensors import safe_open
from safetensors.torch import save_file
from tqdm import tqdm

from softeval.engine.backoff import BatchSize
from softeval.engine.batching import IGNORE, TokenBatch, encode_batch
from softeval.engine.context import prompt_limit
from softeval.engine.models import input_device
from softeval.io import atomic_directory, atomic_file
from softeval.schema import InputError
from softeval.settings import TuneSettings

PROMPT_KEY = "prompt"


@dataclass
class TuneResult:
    vectors: torch.Tensor
    losses: list[float]
    snapshots: dict[int, torch.Tensor]
    wall_seconds: float


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


# fp32 weight elements cast at once by the fp32 projection (128 MB): a 256k x 3584 vocabulary
# in fp32 would be 3.7 GB, so the cast runs a slice of the vocabulary at a time.
PROJECTION_CHUNK = 1 << 25
LOW_PRECISION = (torch.bfloat16, torch.float16)


def kept_logits(model: Any, select: Callable[[torch.Tensor], torch.Tensor], **inputs: Any) -> tuple[torch.Tensor, Any]:
    """fp32 logits of the positions `select` keeps, exactly as the model's forward makes them.

    `select` maps the hidden states the forward hands its output-embedding module (batch x
    length x width) to the rows (n x width) to project. The forward runs with that module
    replaced, for this one call, by an fp32 projection of those rows alone, so what it applies
    after the projection applies to them. Returns the (n x vocabulary) logits and the forward's
    output (its KV cache). A forward that projects without that module, or more than once, is
    refused: its logits could not be the ones scored.
    """
    head = model.get_output_embeddings()
    owner, name = _owner_of(model, head)
    stand_in = _KeptProjection(head, select)
    setattr(owner, name, stand_in)
    try:
        out = model(**inputs)
    finally:
        setattr(owner, name, head)
    if stand_in.calls != 1:
        raise InputError(
            f"{type(model).__name__}: its forward used its output projection (get_output_embeddings) "
            f"{stand_in.calls} times, not once, so softeval cannot compute its logits at the scored positions "
            "alone; option log-likelihoods, soft-prompt tuning and the hf judge do not support this model"
        )
    return out.logits[0], out


class _KeptProjection(torch.nn.Module):
    """Stands in for a model's output-embedding module during one forward (kept_logits)."""

    def __init__(self, head: Any, select: Callable[[torch.Tensor], torch.Tensor]) -> None:
        super().__init__()
        self.__dict__["head"] = head  # a plain reference: not registered as a submodule
        self.select, self.calls = select, 0

    @property
    def weight(self) -> torch.Tensor:  # code that reads the head's weight (its dtype) still can
        return self.head.weight

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        self.calls += 1
        return project_rows(self.head, self.select(hidden)).unsqueeze(0)


def _owner_of(model: Any, module: Any) -> tuple[Any, str]:
    """The module that holds `module` as an attribute, and the attribute's name."""
    for path, candidate in model.named_modules():
        if candidate is module and path:
            parent, _, name = path.rpartition(".")
            return model.get_submodule(parent), name
    raise InputError(f"{type(model).__name__}: its output embeddings are not one of its modules; cannot score it")


def project_rows(head: Any, rows: torch.Tensor) -> torch.Tensor:
    """fp32 logits of `rows` (n x width) through the output-embedding module `head`.

    A bf16/fp16 nn.Linear is projected in fp32: bf16 values are exact in fp32 (and in TF32), so
    the result is the exact products with fp32 sums, rounded once to fp32 instead of to bf16.
    Anything else (fp32 weights, quantised or offloaded heads) is the module's own output: on an
    fp32 model the logits are bit for bit those of the module."""
    weight = getattr(head, "weight", None)
    if (
        isinstance(head, torch.nn.Linear)
        and isinstance(weight, torch.Tensor)
        and weight.dtype in LOW_PRECISION
        and weight.device.type != "meta"
    ):
        return _Fp32Projection.apply(rows.to(weight.device).float(), weight, head.bias)
    return head(rows).float()


class _Fp32Projection(torch.autograd.Function):
    """rows (fp32) x weight^T (+ bias) in fp32, the low-precision weight cast a vocabulary slice
    at a time, in the forward and again in the backward pass: no fp32 copy of the table is held.
    The weight is frozen (softeval never trains it): only the rows get a gradient."""

    @staticmethod
    def forward(ctx: Any, rows: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None) -> torch.Tensor:
        ctx.save_for_backward(weight)
        step = max(1, PROJECTION_CHUNK // weight.shape[1])
        logits = rows.new_empty(rows.shape[0], weight.shape[0])
        for start in range(0, weight.shape[0], step):
            logits[:, start : start + step] = rows @ weight[start : start + step].float().T
        if bias is not None:
            logits += bias.float()
        return logits

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor | None, None, None]:
        if not ctx.needs_input_grad[0]:
            return None, None, None
        (weight,) = ctx.saved_tensors
        step = max(1, PROJECTION_CHUNK // weight.shape[1])
        rows = grad.new_zeros(grad.shape[0], weight.shape[1])
        for start in range(0, weight.shape[0], step):
            rows += grad[:, start : start + step] @ weight[start : start + step].float()
        return rows, None, None


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


def save_prompt(path: Path | str, vectors: torch.Tensor, meta: dict[str, Any]) -> None:
    """Safetensors (never pickle), with the provenance as string metadata; atomic."""
    with atomic_file(path) as tmp:
        save_file({PROMPT_KEY: vectors.detach().contiguous().cpu()}, str(tmp), metadata={"softeval": json.dumps(meta)})


def load_prompt(path: Path | str, width: int | None = None) -> tuple[torch.Tensor, dict[str, Any]]:
    """A tuned prompt, checked before use: a corrupt one would otherwise generate garbage that is
    scored as a result. `width`: the model's embedding width the vectors must have."""
    if not Path(path).is_file():
        raise InputError(f"{path}: soft prompt not found; run the tune rule first (snakemake makes it)")
    try:
        with safe_open(str(path), framework="pt") as handle:
            vectors = handle.get_tensor(PROMPT_KEY)
            meta = json.loads((handle.metadata() or {}).get("softeval", "{}"))
    except Exception as err:  # safetensors raises several error types for bad files
        reason = (str(err).splitlines() or [type(err).__name__])[0]
        raise InputError(f"{path}: not a softeval soft prompt ({reason}); delete it to retrain") from None
    problem = None
    if vectors.ndim != 2 or not vectors.is_floating_point():
        problem = f"tensor '{PROMPT_KEY}' is {vectors.dtype} of shape {tuple(vectors.shape)}, not float vectors"
    elif width is not None and vectors.shape[1] != width:
        problem = f"its vectors have width {vectors.shape[1]}, the model's embeddings {width} (another model's prompt?)"
    elif not torch.isfinite(vectors).all():
        problem = f"{int((~torch.isfinite(vectors)).sum())} of {vectors.numel()} values are NaN or infinite"
    if problem:
        raise InputError(f"{path}: corrupt soft prompt: {problem}; delete it so the tune rule retrains it")
    return vectors, meta


def export_peft(
    out_dir: Path | str,
    vectors: torch.Tensor,
    model: Any,
    base_model_name_or_path: str,
    metadata: dict[str, str] | None = None,
) -> None:
    """Write a PEFT prompt-tuning adapter that `peft.PeftModel.from_pretrained` loads; `metadata`
    goes into its safetensors header (a prompt trained inside a chat template says which)."""
    from peft import PromptTuningConfig

    config = PromptTuningConfig(
        task_type="CAUSAL_LM",
        num_virtual_tokens=vectors.shape[0],
        token_dim=vectors.shape[1],
        num_transformer_submodules=1,
        num_layers=model.config.num_hidden_layers,
        num_attention_heads=model.config.num_attention_heads,
        base_model_name_or_path=base_model_name_or_path,
        inference_mode=True,
    )
    with atomic_directory(Path(out_dir)) as tmp:
        config.save_pretrained(str(tmp))
        weights = {"prompt_embeddings": vectors.detach().contiguous().cpu()}
        save_file(weights, str(tmp / "adapter_model.safetensors"), metadata=metadata)


def import_peft(adapter_dir: Path | str) -> torch.Tensor:
    """Read the vectors of a PEFT prompt-tuning adapter (trained by PEFT or by softeval)."""
    from peft import PeftConfig

    config = PeftConfig.from_pretrained(str(adapter_dir))
    if str(config.peft_type) not in ("PROMPT_TUNING", "PeftType.PROMPT_TUNING"):
        raise InputError(
            f"{adapter_dir}: a {config.peft_type} adapter, not prompt tuning; softeval imports prompts only"
        )
    with safe_open(str(Path(adapter_dir) / "adapter_model.safetensors"), framework="pt") as handle:
        vectors = handle.get_tensor("prompt_embeddings")
    if vectors.shape[0] != config.num_virtual_tokens:
        raise InputError(
            f"{adapter_dir}: {vectors.shape[0]} vectors but num_virtual_tokens is {config.num_virtual_tokens}"
        )
    return vectors
