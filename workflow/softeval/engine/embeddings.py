"""A checkpoint's input-embedding module alone, for engines that take prompt embeddings (vLLM).

The vectors a model sees for its tokens are what its embedding *module* outputs, not the raw
table: Gemma multiplies by sqrt(hidden size) inside the module (transformers 5), so rows read
from `.weight` would be ~55x too small next to a soft prompt trained through the module. Loading
the whole 7B model on the CPU to call one layer costs minutes and ~30 GB; here the model is
built on the meta device (no memory), its embedding module alone is materialised on the CPU,
and only that one tensor is read from the safetensors files.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch
from safetensors import safe_open

from softeval.engine.models import DTYPES, ModelOptions, check_reference
from softeval.schema import InputError

INDEX = "model.safetensors.index.json"
SINGLE = "model.safetensors"


def load_input_embeddings(ref: str, options: ModelOptions) -> torch.nn.Module:
    """The checkpoint's input-embedding module on the CPU, in eval mode, weights frozen."""
    from transformers import AutoConfig, AutoModelForCausalLM

    ref = check_reference(ref)
    common = {"revision": options.revision, "trust_remote_code": options.trust_remote_code}
    config = AutoConfig.from_pretrained(ref, **common)
    with torch.device("meta"):
        skeleton = AutoModelForCausalLM.from_config(config, trust_remote_code=options.trust_remote_code)
    embed = skeleton.get_input_embeddings()
    name = next(n for n, module in skeleton.named_modules() if module is embed)
    weight = read_tensor(ref, options.revision, f"{name}.weight")
    embed.to_empty(device="cpu")
    skeleton._init_weights(embed)  # non-persistent buffers (Gemma's embed_scale) get their values
    dtype = weight.dtype if options.dtype == "auto" else DTYPES[options.dtype]
    with torch.no_grad():
        embed.weight = torch.nn.Parameter(weight.to(dtype), requires_grad=False)
    return embed.eval()


def read_tensor(ref: str, revision: str | None, key: str) -> torch.Tensor:
    """One tensor of a checkpoint (local directory or hub id), from the one file that holds it.
    A key saved under another prefix ("language_model.model.embed_tokens.weight") is matched by
    its longest common ending."""
    index = _fetch(ref, revision, INDEX)
    found: str | None = None
    if index is not None:
        weight_map: dict[str, str] = json.loads(index.read_text())["weight_map"]
        found = _match(key, list(weight_map), ref)
        path = _fetch(ref, revision, weight_map[found])
    else:
        path = _fetch(ref, revision, SINGLE)
    if path is None:
        raise InputError(f"{ref}: no {SINGLE} or {INDEX}; prompt embeddings need safetensors weights")
    with safe_open(str(path), framework="pt") as handle:
        return handle.get_tensor(found or _match(key, list(handle.keys()), ref))


def _match(key: str, keys: list[str], ref: str) -> str:
    if key in keys:
        return key
    tail = key.split(".")
    for n in range(len(tail) - 1, 1, -1):  # at least "<module>.weight"
        ending = "." + ".".join(tail[-n:])
        matches = [k for k in keys if k.endswith(ending)]
        if len(matches) == 1:
            return matches[0]
    raise InputError(f"{ref}: its weights hold no tensor {key!r} (the input embeddings); is this a causal LM?")


def _fetch(ref: str, revision: str | None, filename: str) -> Path | None:
    """A file of a local model directory, or of a hub repository (downloaded once into the hub
    cache); None when the checkpoint has no such file."""
    if Path(ref).is_dir():
        path = Path(ref) / filename
        return path if path.is_file() else None
    from huggingface_hub import hf_hub_download
    from huggingface_hub.errors import EntryNotFoundError

    try:
        return Path(hf_hub_download(ref, filename, revision=revision))
    except EntryNotFoundError:
        return None
