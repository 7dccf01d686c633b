"""A tuned prompt's file: safetensors (never pickle) with its provenance as string metadata, written
atomically and checked when read back (a corrupt prompt would otherwise be scored as a result).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import torch
from safetensors import safe_open
from safetensors.torch import save_file

from softeval.io import atomic_file
from softeval.schema import InputError

PROMPT_KEY = "prompt"


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
