"""What every evaluation job needs: a frozen model, its task data, and the method's prompts."""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from tqdm import tqdm

from softeval.chunks import write_in_chunks
from softeval.data import load_split
from softeval.io import atomic_write_json
from softeval.methods import MethodPrompts, build_prompts, few_shot_examples
from softeval.provenance import provenance
from softeval.schema import InputError
from softeval.softprompt import load_prompt
from softeval.tasks import Task

HASHED_WEIGHTS_LIMIT = 200 * 2**20  # hash weights up to 200 MiB; above, trust the hub revision


def load_model(model_dir: Path | str, threads: int, trust_remote_code: bool = False) -> tuple[Any, Any]:
    """A frozen causal LM in eval mode and its tokenizer, from a Hugging Face directory."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    torch.set_num_threads(threads)
    path = Path(model_dir)
    if not (path / "config.json").is_file():
        raise InputError(f"{path}: not a model directory (no config.json); build or download the model first")
    tokenizer = AutoTokenizer.from_pretrained(path, trust_remote_code=trust_remote_code)
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token  # padding is always masked out
    model = AutoModelForCausalLM.from_pretrained(path, trust_remote_code=trust_remote_code)
    model.eval()
    for parameter in model.parameters():
        parameter.requires_grad_(False)
    return model, tokenizer


def model_identity(model_dir: Path | str, model: Any) -> dict[str, Any]:
    """Model id and revision for provenance: the weights' hash for small local models."""
    path = Path(model_dir)
    weights = sorted(path.glob("*.safetensors"))
    revision = getattr(model.config, "_commit_hash", None)
    if weights and sum(w.stat().st_size for w in weights) <= HASHED_WEIGHTS_LIMIT:
        digest = hashlib.sha256()
        for w in weights:
            digest.update(w.read_bytes())
        revision = f"sha256:{digest.hexdigest()[:16]}"
    return {"model": str(path), "revision": revision}


@dataclass(frozen=True)
class Unit:
    """A task's test examples and one method's prompts for them."""

    task: Task
    test: list[dict[str, Any]]
    prompts: MethodPrompts


def method_unit(task: Task, data_dir: Path | str, method: str, few_shot_k: int, seed: int) -> Unit:
    test = [dict(row) for row in load_split(data_dir, "test")]
    shots = []
    if method == "few_shot":
        shots = few_shot_examples([dict(row) for row in load_split(data_dir, "train")], few_shot_k, seed, task)
    return Unit(task, test, build_prompts(task, method, test, shots))


def meta_path(out: Path | str) -> Path:
    """The provenance file written beside a JSONL artifact."""
    out = Path(out)
    return out.with_name(out.stem + ".meta.json")


RowMaker = Callable[[Any, Any, Unit, list[tuple[dict[str, Any], str]], Any, "int | None"], list[dict[str, Any]]]


def write_method_outputs(
    *,
    job: str,
    model_dir: Path,
    task: Task,
    data_dir: Path,
    method: str,
    prompt_files: dict[int, Path],
    outs: dict[int | None, Path],
    settings: dict[str, Any],
    threads: int,
    make_rows: RowMaker,
) -> None:
    """Load the model once, then write each output (one per soft-prompt step) in resumable chunks.

    make_rows(model, tokenizer, unit, [(example, prompt)], vectors, step) gives a chunk's rows.
    """
    model, tokenizer = load_model(model_dir, threads)
    unit = method_unit(task, data_dir, method, settings["few_shot_k"], settings["seed"])
    identity = model_identity(model_dir, model)
    items = list(zip(unit.test, unit.prompts.prompts, strict=True))
    for step, out in outs.items():
        vectors, prompt_meta = load_prompt(prompt_files[step]) if step is not None else (None, {})
        fingerprint = {
            **identity,
            "job": job,
            "task": task.name,
            "task_version": task.version,
            "method": method,
            "step": step,
            "soft_prompt": prompt_meta.get("params_hash"),
            "settings": settings,
            "shots": unit.prompts.shot_ids,
        }
        start = time.perf_counter()
        label = f"{job} {method}" + (f" step {step}" if step is not None else "")
        with tqdm(total=len(items), desc=label, unit="ex", mininterval=5) as bar:

            def advance(n: int, bar: tqdm = bar, start: float = start) -> None:
                bar.update(n)
                bar.set_postfix(ex_per_s=f"{bar.n / (time.perf_counter() - start):.1f}")

            def produce(chunk: list[tuple[dict[str, Any], str]], vectors: Any = vectors, step: Any = step) -> list:
                return make_rows(model, tokenizer, unit, chunk, vectors, step)

            atomic_write_json(meta_path(out), provenance(fingerprint, seed=settings["seed"]))
            write_in_chunks(out, items, produce, fingerprint, settings["chunk_size"], on_chunk=advance)
