"""The hardware side of plan-cost: the GPUs, a model's shape and the roofline that turns work into seconds.

Prompt processing, option scoring, tuning and the judge's prompts are compute-bound at a stated
fraction of the GPU's peak (`Roofline.compute`); decoding is bound by memory bandwidth
(`Roofline.bytes`) and, on the HF backend, by its per-step overhead (`hf_step_floor`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class GPU:
    """Peak dense bf16 throughput and memory bandwidth from the vendor's data sheet."""

    name: str
    tflops: float
    bandwidth_tb_s: float
    memory_gb: float


GPUS = {
    "a100-80gb": GPU("NVIDIA A100 80GB SXM", 312.0, 2.039, 80.0),
    "h100-sxm": GPU("NVIDIA H100 SXM", 989.0, 3.35, 80.0),
    "h200": GPU("NVIDIA H200", 989.0, 4.8, 141.0),
}

# HF decoding is bound by its per-step overhead, not its bytes: eager PyTorch launches ~40 kernels
# per decoder layer each step, and softeval's loop reads the new tokens back for its stop checks (a
# sync). Measured on one H200 (benchmarks/gpu_check.py --scale 7b, benchmarks/README.md "On one
# H200", 2026-12-04): a 32-layer Llama-2-7B-shaped model decodes at 145.8 ms a step at batch 32
# and 150.6 at batch 128 in softeval's loop (transformers' own `generate`: 44.7 and 71.0), where
# the step's bytes take ~4 ms at batch 32. A step takes at least this much a layer, whatever its
# bytes (the host's time, so the same on every GPU).
HF_STEP_S_PER_LAYER = 145.8e-3 / 32
HF_STEP_FIXED_S = 0.0
# Continuous batching refills a batch when a quarter of its slots are free: between 3/4 and all of
# them hold a row, 7/8 on average.
HF_IN_FLIGHT = 7 / 8
# vLLM's engine start (weights, KV-cache profiling, CUDA-graph capture, torch.compile): 1-2 minutes;
# each evaluation job under `backend: vllm` starts one (softeval.jobs.evaluate)
VLLM_ENGINE_START_S = 90.0


@dataclass(frozen=True)
class Shape:
    """What the roofline needs of a model: parameters, KV-cache bytes per token (bf16) and layers."""

    params: float
    kv_bytes_per_token: float
    source: str
    layers: int = 32

    @classmethod
    def from_config(cls, cfg: dict[str, Any], source: str) -> Shape:
        hidden, layers = cfg["hidden_size"], cfg["num_hidden_layers"]
        heads = cfg["num_attention_heads"]
        head_dim = cfg.get("head_dim") or hidden // heads
        kv_dim = cfg.get("num_key_value_heads", heads) * head_dim
        attention = hidden * heads * head_dim * 2 + hidden * kv_dim * 2
        mlp = 3 * hidden * cfg.get("intermediate_size", 4 * hidden)
        embeddings = cfg["vocab_size"] * hidden * (1 if cfg.get("tie_word_embeddings") else 2)
        return cls(layers * (attention + mlp) + embeddings, 2 * layers * kv_dim * 2, source, layers)


# Llama-2-7B's shape: what a 7B-class model is assumed to be when its config.json is not at hand.
ASSUMED_7B = Shape.from_config(
    {
        "hidden_size": 4096,
        "num_hidden_layers": 32,
        "num_attention_heads": 32,
        "intermediate_size": 11008,
        "vocab_size": 32000,
    },
    "assumed 7B (Llama-2-7B shape; its config.json is not cached here)",
)


# Qwen3-32B's shape (its published config.json): the judge when its own config.json is not at hand.
ASSUMED_32B = Shape.from_config(
    {
        "hidden_size": 5120,
        "num_hidden_layers": 64,
        "num_attention_heads": 64,
        "num_key_value_heads": 8,
        "head_dim": 128,
        "intermediate_size": 25600,
        "vocab_size": 151936,
    },
    "assumed 32B (Qwen3-32B shape; its config.json is not cached here)",
)


def model_shape(ref: str, revision: str, assumed: Shape = ASSUMED_7B) -> Shape:
    """The shape from the model's config.json: a local directory, or the Hugging Face cache
    (never downloads); the 7B assumption where neither has it."""
    local = Path(ref) / "config.json"
    path: Any = local if local.is_file() else None
    if path is None:
        try:
            from huggingface_hub import try_to_load_from_cache

            found = try_to_load_from_cache(ref, "config.json", revision=revision)
            path = Path(found) if isinstance(found, str) else None
        except ImportError:  # pragma: no cover - transformers depends on huggingface_hub
            path = None
    if path is None:
        return assumed
    cfg = json.loads(path.read_text(encoding="utf-8"))
    return Shape.from_config(cfg.get("text_config", cfg), f"{path}")


@dataclass(frozen=True)
class Roofline:
    """Seconds for compute-bound token work and for memory-bound decoding on one GPU."""

    gpu: GPU
    mfu: float
    bandwidth_efficiency: float

    def compute(self, flops: float) -> float:
        return flops / (self.gpu.tflops * 1e12 * self.mfu)

    def bytes(self, count: float) -> float:
        return count / (self.gpu.bandwidth_tb_s * 1e12 * self.bandwidth_efficiency)

    def decode(self, steps: float, shape: Shape, sequences: float, context: float) -> float:
        """`steps` decoding steps, each reading the weights (bf16) and `sequences` KV caches of
        `context` tokens on average."""
        return self.bytes(steps * (2 * shape.params + sequences * context * shape.kv_bytes_per_token))


def hf_step_floor(shape: Shape) -> float:
    """The least time an HF decoding step takes: its kernel launches (HF_STEP_S_PER_LAYER)."""
    return shape.layers * HF_STEP_S_PER_LAYER + HF_STEP_FIXED_S
