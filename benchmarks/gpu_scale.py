"""The GPU check's scale section: a random model of a 7B model's shape, built on the device.

Speed and memory do not depend on trained weights, so a randomly initialised Llama-2-7B-shaped
model (4096 wide, 32 layers, 11008 MLP, bf16) stands in for a user's checkpoint with nothing to
download. It measures what a 7B pair costs: a tuning step at batch 8 x ~300 tokens and on a
MATH-sized batch (8 x ~2,400 tokens), decode milliseconds per step at batch 32 and 128 beside
transformers' own `generate` on the same prompts, and the out-of-memory back-off, forced by
capping the memory the process may take (results must not change; only the batch does).
`--scale tiny` runs the same code on a model small enough for the CPU test.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import torch
from transformers import LlamaConfig, LlamaForCausalLM

from softeval.engine.backoff import BatchSize
from softeval.engine.batching import encode_batch
from softeval.engine.generate import generate_greedy
from softeval.engine.softprompt import answer_loss, backward_with_backoff, freeze, tune
from softeval.settings import TuneSettings

SHAPES = {
    "7b": {"hidden_size": 4096, "intermediate_size": 11008, "num_hidden_layers": 32, "num_attention_heads": 32},
    "tiny": {"hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 2},
}
# (rows, prompt tokens, answer tokens): a short-answer tuning batch and a MATH few-shot one
TUNE_BATCHES = {"batch8_300": (8, 280, 20), "math_batch8_2400": (8, 2300, 100)}
TINY_BATCHES = {"batch8_300": (8, 24, 4), "math_batch8_2400": (4, 48, 4)}  # the CPU test: same code
DECODE_BATCHES = (32, 128)
NEVER = "\u2403never\u2403"  # a stop string no model writes: every row decodes its whole budget


class BackoffLog(logging.Handler):
    """Counts the engine's 'batch size lowered' warnings, so a forced back-off is seen to happen."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


def build_model(scale: str, vocab: int, device: str, dtype: torch.dtype) -> Any:
    """The random model, initialised on the device itself (a 7B model in fp32 on the host would
    take minutes)."""
    config = LlamaConfig(vocab_size=vocab, max_position_embeddings=4096, **SHAPES[scale])
    previous = torch.get_default_dtype()
    torch.set_default_dtype(dtype)
    try:
        torch.manual_seed(0)
        with torch.device(device):
            model = LlamaForCausalLM(config)
    finally:
        torch.set_default_dtype(previous)
    freeze(model)
    return model


def vocabulary_words(tokenizer: Any) -> list[str]:
    """Whole words among the tokenizer's first tokens, to write prompts of a chosen length with."""
    decoded = (tokenizer.decode([i]).strip() for i in range(min(len(tokenizer), 20000)))
    return [w for w in decoded if w.isalpha() and len(w) > 2] or ["word", "text", "more"]


def text_of_tokens(tokenizer: Any, n: int, rng: random.Random) -> str:
    """Words from the tokenizer's own vocabulary until the text is n tokens long."""
    vocab = tokenizer.softeval_words if hasattr(tokenizer, "softeval_words") else vocabulary_words(tokenizer)
    tokenizer.softeval_words = vocab
    words: list[str] = []
    while len(tokenizer(" ".join(words), add_special_tokens=False)["input_ids"]) < n:
        words.extend(rng.choice(vocab) for _ in range(max(1, n // 8)))
    ids = tokenizer(" ".join(words), add_special_tokens=False)["input_ids"][:n]
    return tokenizer.decode(ids)


def synchronize(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def peak_mb(device: str) -> float | None:
    return round(torch.cuda.max_memory_allocated() / 2**20) if device.startswith("cuda") else None


def reset_peak(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()


def timed(device: str, run: Callable[[], Any]) -> tuple[float, Any]:
    synchronize(device)
    start = time.perf_counter()
    out = run()
    synchronize(device)
    return time.perf_counter() - start, out


def tune_costs(model: Any, tokenizer: Any, device: str, rng: random.Random, batches: dict) -> dict[str, Any]:
    """Seconds per tuning step (forward, backward, AdamW; after one warm-up step) and peak memory."""
    out: dict[str, Any] = {}
    for name, (rows, prompt_len, answer_len) in batches.items():
        pairs = [
            (text_of_tokens(tokenizer, prompt_len, rng), text_of_tokens(tokenizer, answer_len, rng))
            for _ in range(rows)
        ]
        warm = TuneSettings(n_tokens=20, steps=1, batch_size=rows, snapshots=())
        timed_settings = TuneSettings(n_tokens=20, steps=3, batch_size=rows, snapshots=())
        log = BackoffLog()
        logging.getLogger("softeval").addHandler(log)
        try:
            tune(model, tokenizer, pairs, warm)  # warm-up: kernels chosen, memory pooled
            reset_peak(device)
            seconds, _ = timed(device, partial(tune, model, tokenizer, pairs, timed_settings))
        finally:
            logging.getLogger("softeval").removeHandler(log)
        out[name] = {
            "rows": rows,
            "tokens_per_row": prompt_len + answer_len + 20,
            "seconds_per_step": round(seconds / timed_settings.steps, 4),
            "peak_memory_mb": peak_mb(device),
            "backoffs": len(log.messages),
        }
    return out


def forced_tune_backoff(model: Any, tokenizer: Any, device: str, rng: random.Random, batches: dict) -> dict[str, Any]:
    """One batch's gradient with memory capped below what the whole batch needs: the micro-batch
    halves and the loss (a mean over all answer tokens whatever the split) stays the same."""
    rows, prompt_len, answer_len = batches["math_batch8_2400"]
    pairs = [
        (text_of_tokens(tokenizer, prompt_len, rng), text_of_tokens(tokenizer, answer_len, rng)) for _ in range(rows)
    ]
    vectors = torch.nn.Parameter(model.get_input_embeddings().weight[:20].detach().float().clone())
    whole = backward_with_backoff(model, tokenizer, vectors, pairs, BatchSize(rows))
    whole_grad = vectors.grad.detach().float().clone()
    vectors.grad = None
    if not device.startswith("cuda"):
        micro = BatchSize(2)  # no memory cap on the CPU: the split itself is what is checked
        split = backward_with_backoff(model, tokenizer, vectors, pairs, micro)
        return _backoff_report(whole, split, whole_grad, vectors, micro.size, [], cap_mb=None)
    reset_peak(device)
    backward_with_backoff(model, tokenizer, vectors, pairs, BatchSize(rows))
    need = torch.cuda.max_memory_allocated() - torch.cuda.memory_allocated()
    vectors.grad = None
    cap = torch.cuda.memory_allocated() + need // 3
    log = BackoffLog()
    logging.getLogger("softeval").addHandler(log)
    total = torch.cuda.get_device_properties(0).total_memory
    torch.cuda.empty_cache()
    torch.cuda.set_per_process_memory_fraction(cap / total)
    micro = BatchSize(rows)
    try:
        split = backward_with_backoff(model, tokenizer, vectors, pairs, micro)
    finally:
        torch.cuda.set_per_process_memory_fraction(1.0)
        logging.getLogger("softeval").removeHandler(log)
    return _backoff_report(whole, split, whole_grad, vectors, micro.size, log.messages, cap_mb=round(cap / 2**20))


def _backoff_report(whole: float, split: float, whole_grad, vectors, size: int, messages, cap_mb) -> dict[str, Any]:
    grad_gap = float((vectors.grad.float() - whole_grad).abs().max() / whole_grad.abs().max().clamp(min=1e-12))
    vectors.grad = None
    return {"cap_mb": cap_mb, "micro_batch_after": size, "backoffs": len(messages), "loss_whole": round(whole, 5),
            "loss_split": round(split, 5), "loss_rel_gap": abs(whole - split) / max(abs(whole), 1e-12),
            "grad_rel_gap": grad_gap}  # fmt: skip


def forward_time(model: Any, device: str, run: Callable[[], Any]) -> tuple[float, float, int, Any]:
    """(whole seconds, seconds inside the model's forward, forward calls, run's result): where a
    decoding step's time goes. Each forward is synchronised, so the split is exact and the whole a
    little slower than unmeasured."""
    spent: list[float] = []
    original = model.forward

    def measured(*args: Any, **kwargs: Any) -> Any:
        synchronize(device)
        start = time.perf_counter()
        out = original(*args, **kwargs)
        synchronize(device)
        spent.append(time.perf_counter() - start)
        return out

    model.forward = measured
    try:
        seconds, out = timed(device, run)
    finally:
        del model.forward
    return seconds, sum(spent), len(spent), out


def decode_costs(
    model: Any, tokenizer: Any, device: str, rng: random.Random, new_tokens: int, profile: Path | None = None
) -> dict[str, Any]:
    """Milliseconds per decoding step of softeval's generator and of transformers' generate on the
    same left-padded prompts (~200 tokens), every row running its whole budget; and how much of a
    step each spends inside the model's forward."""
    out: dict[str, Any] = {}
    for batch in DECODE_BATCHES:
        prompts = [text_of_tokens(tokenizer, 150 + rng.randrange(100), rng) for _ in range(batch)]

        def ours(prompts: list[str] = prompts, batch: int = batch) -> list[Any]:
            return generate_greedy(
                model, tokenizer, prompts, stops=(NEVER,), max_new_tokens=new_tokens, batch_size=batch
            )

        def theirs(prompts: list[str] = prompts) -> Any:
            tokenizer.padding_side = "left"
            enc = tokenizer(prompts, return_tensors="pt", padding=True).to(device)
            return model.generate(**enc, max_new_tokens=new_tokens, min_new_tokens=new_tokens, do_sample=False,
                                  pad_token_id=tokenizer.pad_token_id)  # fmt: skip

        ours(prompts[:2])  # warm-up
        seconds, generations = timed(device, ours)
        steps = max(g.new_tokens for g in generations)
        their_seconds, _ = timed(device, theirs)
        whole, inside, calls, _ = forward_time(model, device, ours)
        reset_peak(device)
        out[f"batch{batch}"] = {
            "ms_per_step": round(1000 * seconds / steps, 2),
            "transformers_generate_ms_per_step": round(1000 * their_seconds / new_tokens, 2),
            "steps": steps,
            "rows_ended_early": sum(g.new_tokens < new_tokens for g in generations),
            "forward_share": round(inside / whole, 3),
            "forward_ms_per_call": round(1000 * inside / calls, 2),
        }
        if profile is not None and batch == DECODE_BATCHES[0]:
            write_profile(profile, device, lambda prompts=prompts: ours(prompts))
    return out


def write_profile(path: Path, device: str, run: Callable[[], Any]) -> None:
    """torch.profiler's tables of one generation (by host time and by device time), for the report."""
    from torch.profiler import ProfilerActivity, profile

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.startswith("cuda") else [])
    with profile(activities=activities) as prof:
        run()
        synchronize(device)
    averages = prof.key_averages()
    tables = [averages.table(sort_by="cpu_time_total", row_limit=30)]
    if device.startswith("cuda"):
        tables.append(averages.table(sort_by="cuda_time_total", row_limit=30))
    path.write_text("\n\n".join(tables))


def forced_decode_backoff(
    model: Any, tokenizer: Any, device: str, rng: random.Random, new_tokens: int
) -> dict[str, Any]:
    """Generation at batch 128 with memory capped so that 128 rows do not fit: the batch halves and
    the texts equal a run at the size it settled on."""
    prompts = [text_of_tokens(tokenizer, 200, rng) for _ in range(DECODE_BATCHES[-1])]
    kwargs = {"stops": (NEVER,), "max_new_tokens": new_tokens}
    if not device.startswith("cuda"):
        return {"not run": "no memory cap on the CPU"}
    reset_peak(device)
    generate_greedy(model, tokenizer, prompts[:16], batch_size=16, **kwargs)
    per_row = (torch.cuda.max_memory_allocated() - torch.cuda.memory_allocated()) / 16
    cap = torch.cuda.memory_allocated() + int(per_row * 40)  # room for ~40 rows, not 128 or 64
    total = torch.cuda.get_device_properties(0).total_memory
    log, size = BackoffLog(), BatchSize(len(prompts))
    logging.getLogger("softeval").addHandler(log)
    torch.cuda.empty_cache()
    torch.cuda.set_per_process_memory_fraction(cap / total)
    try:
        capped = generate_greedy(model, tokenizer, prompts, batch_size=size, **kwargs)
    finally:
        torch.cuda.set_per_process_memory_fraction(1.0)
        logging.getLogger("softeval").removeHandler(log)
    free = generate_greedy(model, tokenizer, prompts, batch_size=size.size, **kwargs)
    again = generate_greedy(model, tokenizer, prompts, batch_size=size.size, **kwargs)
    same = sum(a.text == b.text for a, b in zip(capped, free, strict=True))
    repeat = sum(a.text == b.text for a, b in zip(again, free, strict=True))
    # a random model's logits are near-ties everywhere: under a memory cap cuBLAS may pick other
    # kernels (less workspace), and one rounding flips a whole continuation; the uncapped repeat
    # says whether the same kernels give the same texts
    return {"cap_mb": round(cap / 2**20), "batch_after": size.size, "backoffs": len(log.messages),
            "rows_finished": sum(g.new_tokens == new_tokens or g.stop_reason == "eos" for g in capped),
            "texts_equal_to_uncapped_at_that_size": same, "uncapped_repeat_equal": repeat,
            "of": len(prompts)}  # fmt: skip


def scale_checks(scale: str, tokenizer: Any, device: str, profile: Path | None = None) -> dict[str, Any]:
    """Every measurement of the scale section, one dict for the report."""
    rng = random.Random(0)
    dtype = torch.bfloat16 if device.startswith("cuda") else torch.float32
    build_seconds, model = timed(device, lambda: build_model(scale, len(tokenizer), device, dtype))
    new_tokens = 64 if scale == "7b" else 8
    report: dict[str, Any] = {
        "shape": SHAPES[scale], "dtype": str(dtype), "vocab": len(tokenizer),
        "parameters_b": round(sum(p.numel() for p in model.parameters()) / 1e9, 3),
        "build_seconds": round(build_seconds, 1), "weights_mb": peak_mb(device),
    }  # fmt: skip
    batches = TUNE_BATCHES if scale == "7b" else TINY_BATCHES
    report["tune"] = tune_costs(model, tokenizer, device, rng, batches)
    report["tune_forced_backoff"] = forced_tune_backoff(model, tokenizer, device, rng, batches)
    report["decode"] = decode_costs(model, tokenizer, device, rng, new_tokens, profile)
    report["decode_forced_backoff"] = forced_decode_backoff(model, tokenizer, device, rng, new_tokens)
    with torch.no_grad():  # the loss is finite on the device's kernels (a NaN would poison tuning)
        batch = encode_batch(tokenizer, ["a b c"], [" d"])
        report["finite_loss"] = bool(torch.isfinite(answer_loss(model, None, batch)).item())
    return report
