"""Provenance stamped on every artifact: what made it, with which parameters and versions."""

from __future__ import annotations

import hashlib
import json
import os
import platform
import subprocess
from functools import cache
from importlib import metadata
from pathlib import Path
from typing import Any

import softeval
from softeval import cpu_kernels
from softeval.shipped import PACKAGE, workflow_root

# Set by the Snakefile for its jobs: the config files (path, sha256) and --config overrides.
CONFIG_ENV = "SOFTEVAL_CONFIG"

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


def file_sha256(path: Path | str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


@cache
def code_version() -> dict[str, Any]:
    """The code that made an artifact: the checkout's commit and whether its tree had changes
    (a reviewer can then check out exactly that code), or the installed package's version."""
    root = workflow_root()
    if root != PACKAGE / "_workflow" and (root / ".git").exists():
        try:
            commit = subprocess.run(
                ["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True, check=True, timeout=10
            ).stdout.strip()
            status = subprocess.run(
                ["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
                capture_output=True,
                text=True,
                check=True,
                timeout=10,
            ).stdout
            return {"commit": commit, "dirty": bool(status.strip())}
        except (OSError, subprocess.SubprocessError):
            pass
    return {"installed": softeval.__version__}


def cpu_model() -> str:
    """The processor's name (Linux: /proc/cpuinfo), which decides a CPU run's last bits."""
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine() -> dict[str, Any]:
    threads = None
    torch = __import__("sys").modules.get("torch")  # only when the job imported it: no import for this
    if torch is not None:
        threads = torch.get_num_threads()
    return {
        "cpu": cpu_model(),
        "cores": os.cpu_count(),
        "torch_threads": threads,
        "cpu_kernels": cpu_kernels.in_effect(),
    }


def run_context() -> dict[str, Any]:
    """What made this run, beyond its parameters: the code, the config files, the machine. It
    is recorded in JSON metadata only, never in a tensor file's bytes (a prompt's bytes stay
    the same across commits and machines that compute the same numbers)."""
    try:
        config = json.loads(os.environ.get(CONFIG_ENV, "null"))
    except json.JSONDecodeError:
        config = None
    return {"code": code_version(), "config": config, "machine": machine()}


def provenance(params: dict[str, Any], seed: int | None = None, **extra: Any) -> dict[str, Any]:
    """Provenance block; `params` are the settings that determine the artifact's content."""
    return {
        "params": params,
        "params_hash": params_hash(params),
        "seed": seed,
        "versions": package_versions(),
        "cpu_kernels": cpu_kernels.in_effect(),
        "run": run_context(),
        **extra,
    }
