"""A soft prompt as a PEFT prompt-tuning adapter, both ways: the tune job exports every prompt for
`peft.PeftModel.from_pretrained`, and a prompt trained by PEFT can be read in. PEFT is imported
only when called.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
from safetensors import safe_open
from safetensors.torch import save_file

from softeval.io import atomic_directory
from softeval.schema import InputError


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
