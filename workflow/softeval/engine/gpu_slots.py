"""GPU slots: pin each local GPU job to GPUs of its own.

Snakemake's `--resources gpu=N` keeps at most N GPUs' worth of jobs running, but it does not
tell a job *which* GPUs to use, so every job would pick GPU 0. Before touching CUDA, a job
that needs k GPUs takes k slot locks (one file lock per GPU, in a folder every job on the
machine shares), sets CUDA_VISIBLE_DEVICES to those GPUs, and holds the locks until it
exits: the operating system releases them even after a kill. Where a scheduler already
chose the GPUs (SLURM sets CUDA_VISIBLE_DEVICES), nothing is locked.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import IO

from softeval.schema import InputError

SLOTS_ENV = "SOFTEVAL_GPU_SLOTS"  # e.g. "0,1,2,3"; default: every GPU nvidia-smi lists
LOCK_DIR_ENV = "SOFTEVAL_GPU_LOCK_DIR"
_held: list[IO[str]] = []  # open lock files: the locks live as long as the process


def machine_gpus() -> list[str]:
    """The GPUs this machine has, as CUDA ids (asked of nvidia-smi, so CUDA stays untouched)."""
    configured = os.environ.get(SLOTS_ENV)
    if configured:
        return [slot.strip() for slot in configured.split(",") if slot.strip()]
    if shutil.which("nvidia-smi") is None:
        return []
    listing = subprocess.run(["nvidia-smi", "--list-gpus"], capture_output=True, text=True, check=False)
    return [str(i) for i, line in enumerate(listing.stdout.splitlines()) if line.startswith("GPU ")]


def lock_dir() -> Path:
    path = Path(os.environ.get(LOCK_DIR_ENV) or Path(tempfile.gettempdir()) / f"softeval-gpu-slots-{os.getuid()}")
    path.mkdir(parents=True, exist_ok=True)
    return path


def acquire(count: int, poll_seconds: float = 1.0, timeout: float | None = None) -> list[str]:
    """Take `count` free GPU slots (waiting for them if needed) and make them the visible GPUs."""
    if count <= 0 or "CUDA_VISIBLE_DEVICES" in os.environ:
        return []
    gpus = machine_gpus()
    if not gpus:
        return []  # no GPU here: the job runs on CPU
    if count > len(gpus):
        raise InputError(f"the job needs {count} GPUs but this machine has {len(gpus)}; lower the model's gpu resource")
    folder = lock_dir()
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        taken = _try_take(folder, gpus, count)
        if taken:
            os.environ["CUDA_VISIBLE_DEVICES"] = ",".join(taken)
            return taken
        if deadline is not None and time.monotonic() > deadline:
            raise InputError(f"no {count} free GPU slots in {folder} after {timeout} s; is another run holding them?")
        time.sleep(poll_seconds)


def _try_take(folder: Path, gpus: list[str], count: int) -> list[str]:
    handles: list[tuple[str, IO[str]]] = []
    for gpu in gpus:
        handle = (folder / f"gpu{gpu}.lock").open("a+")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            handle.close()
            continue
        handles.append((gpu, handle))
        if len(handles) == count:
            _held.extend(h for _, h in handles)
            return [g for g, _ in handles]
    for _, handle in handles:  # not enough free: give back what was taken, try again later
        fcntl.flock(handle, fcntl.LOCK_UN)
        handle.close()
    return []
