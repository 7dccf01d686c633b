"""Loading the model under evaluation: a local directory or a hub id, on the right device.

A job receives the model reference (directory or hub id) and its options as JSON: revision,
dtype, device_map, trust_remote_code (off unless the model entry opts in) and chat_template
(post-trained models only). Weights are frozen and in eval mode: nothing here ever trains them.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from safetensors import SafetensorError

from softeval.engine.gguf import SOURCE_RECORD
from softeval.engine.weights import weight_files, weights_digest
from softeval.schema import InputError

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}
HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")


@dataclass(frozen=True)
class ModelOptions:
    """How to load one checkpoint (one model entry's role)."""

    revision: str | None = None
    dtype: str = "auto"  # auto = float32 on CPU, the checkpoint's own dtype on GPU
    device_map: str | None = None  # "auto" spreads a large model over the visible GPUs
    trust_remote_code: bool = False
    chat_template: bool = False
    bin_weights: bool = False  # a checkpoint without safetensors: read its .bin files (torch.load, weights only)

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> ModelOptions:
        data = dict(data or {})
        known = set(cls.__dataclass_fields__)
        unknown = sorted(set(data) - known)
        if unknown:
            raise InputError(f"model options: unknown key {unknown[0]!r}; use {', '.join(sorted(known))}")
        return cls(**data)


def device() -> torch.device:
    """CUDA when present (the first visible GPU: the GPU-slot lock sets which), else CPU."""
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def resolve_dtype(name: str, on_gpu: bool) -> Any:
    if name == "auto":
        return "auto" if on_gpu else torch.float32
    if name not in DTYPES:
        raise InputError(f"model options: dtype {name!r} is unknown; use auto, {', '.join(DTYPES)}")
    return DTYPES[name]


def check_reference(ref: str) -> str:
    """A model is an existing local directory or a hub id (owner/name); nothing else is loaded."""
    path = Path(ref)
    if path.exists():
        if not (path / "config.json").is_file():
            raise InputError(f"{path}: not a model directory (no config.json); build or download the model first")
        return str(path)
    if not HUB_ID.match(ref):
        raise InputError(
            f"{ref}: neither a local model directory nor a hub id like 'owner/name'; fix the model's id in the config"
        )
    return ref


# Hub kernels off: with the `kernels` package installed (a dependency of transformers 5.25),
# from_pretrained on a GPU swaps layers for code it downloads from the Hub at load time, unasked:
# on an offline GPU node the model does not load at all (seen on an H200), the code is remote code
# no model entry opted in to, and its numerics are not the model's own.
NO_HUB_KERNELS: dict[str, Any] = {"use_kernels": False}


def load_model(ref: Path | str, threads: int, options: ModelOptions | None = None) -> tuple[Any, Any]:
    """A frozen causal LM in eval mode and its tokenizer, on the GPU when there is one.

    On a GPU the weights load straight onto it (device_map), never first into CPU memory (a 7B
    model in bf16 is 15 GB of host RAM and a copy); `device_map: auto` spreads a larger one."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    options = options or ModelOptions()
    torch.set_num_threads(threads)
    ref = check_reference(str(ref))
    on_gpu = torch.cuda.is_available()
    common = {"revision": options.revision, "trust_remote_code": options.trust_remote_code}
    dtype = resolve_dtype(options.dtype, on_gpu)
    try:
        tokenizer = AutoTokenizer.from_pretrained(ref, **common)
        model = AutoModelForCausalLM.from_pretrained(
            ref,
            dtype=dtype,
            device_map=(options.device_map or str(device())) if on_gpu else None,
            # safetensors only, unless the entry opts in to .bin files (None: safetensors first)
            use_safetensors=None if options.bin_weights else True,
            **NO_HUB_KERNELS,
            **common,
        )
    except (OSError, ValueError, SafetensorError) as err:  # SafetensorError: a truncated or corrupt file
        reason = (str(err).splitlines() or [type(err).__name__])[0]
        if not options.bin_weights and _ships_bin_only(ref):
            raise InputError(
                f"{ref}: the checkpoint has .bin weights and no safetensors; set bin_weights: true in the model "
                "entry to read them (torch.load with weights_only), or convert it to safetensors"
            ) from None
        raise InputError(
            f"{ref}: cannot load the model ({reason}); download or convert it again, or fix the model's id"
        ) from None
    check_finite(model, ref)
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token  # padding is always masked out
    model.eval()
    for parameter in model.parameters():
        parameter.requires_grad_(False)
    if options.chat_template and not tokenizer.chat_template:
        raise InputError(
            f"{ref}: the model entry asks for its chat template (chat_template: true) but the tokenizer has "
            "none; set chat_template: false for this role"
        )
    return model, tokenizer


def _ships_bin_only(ref: str) -> bool:
    """A local directory with pytorch_model*.bin files and no safetensors (hub ids: not asked)."""
    path = Path(ref)
    return path.is_dir() and any(path.glob("pytorch_model*.bin")) and not any(path.glob("*.safetensors"))


def check_finite(model: Any, ref: Path | str) -> None:
    """Weights with a NaN or infinity (a bad conversion, a diverged checkpoint) would give empty
    or garbage generations that get scored as results: stop instead, naming the tensor."""
    for name, parameter in model.named_parameters():
        if parameter.device.type == "meta":  # offloaded by device_map: checked by whoever loads it
            continue
        if not torch.isfinite(parameter).all():
            raise InputError(
                f"{ref}: weight {name} has non-finite values (NaN or inf); the checkpoint is corrupt, "
                "replace it with a good copy"
            )


def input_device(model: Any) -> torch.device:
    """Where inputs go: the device of the input embeddings (the first shard under device_map)."""
    return model.get_input_embeddings().weight.device


def model_identity(ref: Path | str, model: Any, options: ModelOptions | None = None) -> dict[str, Any]:
    """Model id and revision for provenance: the resolved hub commit for a hub id; for a local
    directory the content hash of its weights (cached: softeval.engine.weights), any size."""
    path = Path(ref)
    revision = getattr(model.config, "_commit_hash", None) or (options.revision if options else None)
    weights = weight_files(path) if path.is_dir() else []
    converted = path / SOURCE_RECORD if path.is_dir() else None
    if converted is not None and converted.is_file():  # a converted GGUF file: the file's hash names the weights
        revision = f"gguf-sha256:{json.loads(converted.read_text())['sha256'][:16]}"
    elif weights:  # the weights' content, whatever the hub revision or directory name says
        revision = f"sha256:{weights_digest(path)[:16]}"
    identity: dict[str, Any] = {"model": str(ref), "revision": revision}
    if options is not None:
        identity["model_options"] = {
            "dtype": options.dtype,
            "device_map": options.device_map,
            "chat_template": options.chat_template,
            "trust_remote_code": options.trust_remote_code,
        }
    return identity
