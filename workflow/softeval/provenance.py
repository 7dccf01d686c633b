"""Provenance stamped on every artifact: what made it, with which parameters and versions."""

from __future__ import annotations

import hashlib
import json
import platform
from importlib import metadata
from typing import Any

import softeval
from softeval import cpu_kernels

PACKAGES = ("torch", "transformers", "tokenizers", "datasets", "safetensors")


def params_hash(params: Any) -> str:
    """A short stable hash of the parameters that made an artifact."""
    blob = json.dumps(params, sort_keys=True, separators=(",", ":")).encode()
    return hashlib.sha256(blob).hexdigest()[:16]


def package_versions() -> dict[str, str]:
    versions = {"python": platform.python_version(), "softeval": softeval.__version__}
    for name in PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = "not installed"
    return versions


def provenance(params: dict[str, Any], seed: int | None = None, **extra: Any) -> dict[str, Any]:
    """Provenance block; `params` are the settings that determine the artifact's content."""
    return {
        "params": params,
        "params_hash": params_hash(params),
        "seed": seed,
        "versions": package_versions(),
        "cpu_kernels": cpu_kernels.in_effect(),
        **extra,
    }
