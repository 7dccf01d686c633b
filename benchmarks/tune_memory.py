"""Soft-prompt tuning at the paper's setting (80 steps, batch 8): step time and peak memory,
with and without gradient checkpointing, in the same run.

Runs on the GPU when there is one (peak = torch.cuda.max_memory_allocated), else on CPU (peak
= the process's maximum resident set). The model is a randomly initialised Llama/Qwen-style
config of real architecture (speed and memory do not depend on trained weights), or any
checkpoint with --model.

    python benchmarks/tune_memory.py                                  # ~0.5B Qwen2.5-shaped model
    python benchmarks/tune_memory.py --model Qwen/Qwen2.5-7B --dtype bfloat16
    python benchmarks/tune_memory.py --layers 2 --width 256 --steps 4 # quick CPU check
"""

from __future__ import annotations

import argparse
import resource
import statistics
import time

import torch
from transformers import AutoModelForCausalLM, Qwen2Config

from softeval.engine.batching import IGNORE, TokenBatch
from softeval.engine.softprompt import answer_loss, enable_checkpointing, freeze


def build(args: argparse.Namespace) -> torch.nn.Module:
    dtype = getattr(torch, args.dtype)
    if args.model:
        return AutoModelForCausalLM.from_pretrained(args.model, dtype=dtype, use_safetensors=True)
    config = Qwen2Config(
        vocab_size=args.vocab,
        hidden_size=args.width,
        intermediate_size=args.ffn or int(5.4 * args.width),
        num_hidden_layers=args.layers,
        num_attention_heads=max(1, args.width // 64),
        num_key_value_heads=max(1, args.width // 448),
        tie_word_embeddings=True,
    )
    torch.manual_seed(0)
    return AutoModelForCausalLM.from_config(config, dtype=dtype)


def peak_mib(device: torch.device) -> float:
    if device.type == "cuda":
        return torch.cuda.max_memory_allocated(device) / 2**20
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**10


def run(model: torch.nn.Module, args: argparse.Namespace, device: torch.device, checkpointing: bool) -> dict:
    freeze(model)
    if checkpointing:
        enable_checkpointing(model)
    vocab = model.get_input_embeddings().weight.shape[0]
    generator = torch.Generator().manual_seed(0)
    ids = torch.randint(0, vocab, (args.batch, args.prompt_len + args.answer_len), generator=generator)
    labels = torch.full_like(ids, IGNORE)
    labels[:, -args.answer_len :] = ids[:, -args.answer_len :]
    batch = TokenBatch(ids, torch.ones_like(ids), labels)
    table = model.get_input_embeddings().weight
    vectors = torch.nn.Parameter(table[: args.n_tokens].detach().float().clone())
    optimizer = torch.optim.AdamW([vectors], lr=0.1)
    if device.type == "cuda":
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats(device)
    times = []
    for _ in range(args.steps):
        start = time.perf_counter()
        loss = answer_loss(model, vectors, batch)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        if device.type == "cuda":
            torch.cuda.synchronize()
        times.append(time.perf_counter() - start)
    if checkpointing:
        getattr(model, "activation_checkpointing_disable", model.gradient_checkpointing_disable)()
    freeze(model)
    return {"step_ms": 1000 * statistics.median(times[1:] or times), "peak_mib": peak_mib(device), "loss": loss.item()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", help="a hub id or model directory instead of the random config")
    parser.add_argument("--vocab", type=int, default=151936)
    parser.add_argument("--width", type=int, default=896)
    parser.add_argument("--ffn", type=int, default=4864)
    parser.add_argument("--layers", type=int, default=24)
    parser.add_argument("--dtype", default="bfloat16")
    parser.add_argument("--steps", type=int, default=80)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--prompt-len", type=int, default=256)
    parser.add_argument("--answer-len", type=int, default=16)
    parser.add_argument("--n-tokens", type=int, default=10)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = build(args).to(device)
    params = sum(p.numel() for p in model.parameters()) / 1e6
    print(f"model {args.model or 'random Qwen2-style'}: {params:.0f} M parameters, {args.dtype}, {device}")
    print(
        f"{args.steps} steps, batch {args.batch} x {args.prompt_len + args.answer_len} tokens, {args.n_tokens} vectors"
    )
    plain = run(model, args, device, checkpointing=False)
    checked = run(model, args, device, checkpointing=True)
    for name, result in (("plain", plain), ("gradient checkpointing", checked)):
        print(
            f"{name:>24}: {result['step_ms']:8.1f} ms/step, peak {result['peak_mib']:9.1f} MiB, "
            f"loss {result['loss']:.4f}"
        )
    print(
        f"checkpointing: {checked['step_ms'] / plain['step_ms']:.2f}x time, "
        f"{checked['peak_mib'] / plain['peak_mib']:.2f}x peak memory (CPU peak is the process maximum)"
    )


if __name__ == "__main__":
    main()
