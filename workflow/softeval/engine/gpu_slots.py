"""GPU slots: pin each local GPU job to GPUs of its own.

Snakemake's `--resources gpu=N` keeps at most N GPUs' worth of jobs running, but it does not
tell a job *which* GPUs to use, so every job would pick GPU 0. Before touching CUDA, a job
that needs k GPUs takes k slot locks (one file lock per physical GPU, named by its UUID, in a
folder every job and every user on the machine shares), sets CUDA_VISIBLE_DEVICES to those GPUs'
integer indices with CUDA_DEVICE_ORDER=PCI_BUS_ID, and holds the locks until it exits: the
operating system releases them even after a kill.

- CUDA_VISIBLE_DEVICES holds integers, never UUIDs: vLLM reads each entry with int() and stops at
  engine start on "GPU-..." (vllm-project/vllm#13815, #20939). A GPU's index is its place in
  nvidia-smi's listing, which is PCI bus order, the order CUDA_DEVICE_ORDER=PCI_BUS_ID gives CUDA;
  the locks stay named by UUID, which no process's numbering changes. A GPU nvidia-smi does not
  list (a MIG instance named by its UUID) keeps its name: there is no integer for it.

- A container or notebook that already set CUDA_VISIBLE_DEVICES limits the choice to those GPUs;
  it does not switch the locks off (two jobs in one container would share GPU 0).
- Inside a SLURM job the scheduler has given the job its own GPUs (SLURM_JOB_ID is set): nothing
  is locked, as CUDA ids inside a job's cgroup are its own and would collide between jobs.
- nvidia-smi numbers GPUs in PCI bus order; CUDA's default is "fastest first", so the job also
  sets CUDA_DEVICE_ORDER=PCI_BUS_ID: an index means the GPU nvidia-smi shows, for this job's CUDA
  as for a user who writes one.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from softeval.schema import InputError

SLOTS_ENV = "SOFTEVAL_GPU_SLOTS"  # e.g. "0,1,2,3" (indices or UUIDs); default: every GPU nvidia-smi lists
LOCK_DIR_ENV = "SOFTEVAL_GPU_LOCK_DIR"
SHARED_LOCK_DIR = "softeval-gpu-slots"  # under the temp folder, one for all users of the machine
_held: list[IO[str]] = []  # open lock files: the locks live as long as the process


@dataclass(frozen=True)
class GPU:
    index: str  # nvidia-smi's index (PCI bus order)
    uuid: str  # the physical GPU, whatever any process's CUDA_VISIBLE_DEVICES calls it
    ordinal: str = ""  # CUDA's integer for it under CUDA_DEVICE_ORDER=PCI_BUS_ID ("": not listed, e.g. MIG)

    @property
    def visible_name(self) -> str:
        """What CUDA_VISIBLE_DEVICES holds for this GPU: its integer (vLLM parses entries with
        int()), or the name it was given where nvidia-smi does not list it (a MIG instance)."""
        return self.ordinal or self.uuid


def listed_gpus() -> list[GPU]:
    """The GPUs nvidia-smi lists (asked of nvidia-smi, so CUDA stays untouched)."""
    if shutil.which("nvidia-smi") is None:
        return []
    listing = subprocess.run(
        ["nvidia-smi", "--query-gpu=index,uuid", "--format=csv,noheader"],
        capture_output=True,
        text=True,
        check=False,
    )
    rows = [line.split(",") for line in listing.stdout.splitlines() if line.count(",") == 1]
    # nvidia-smi lists in PCI bus order: a GPU's place in the listing is CUDA's index for it under
    # CUDA_DEVICE_ORDER=PCI_BUS_ID (with no CUDA_VISIBLE_DEVICES), whatever number the listing shows
    return [GPU(index.strip(), uuid.strip(), str(place)) for place, (index, uuid) in enumerate(rows)]


def _pick(gpus: list[GPU], names: str) -> list[GPU]:
    """The GPUs a comma list names (indices or UUIDs), in its order; unknown names kept as they are
    (a MIG instance, or a machine without nvidia-smi): their lock is named after them."""
    by_name = {g.index: g for g in gpus} | {g.uuid: g for g in gpus}
    picked = [by_name.get(name.strip(), GPU(name.strip(), name.strip())) for name in names.split(",")]
    return [g for g in picked if g.index and g.index != "-1"]


def machine_gpus() -> list[GPU]:
    """The GPUs this job may use: nvidia-smi's list, narrowed by SOFTEVAL_GPU_SLOTS and by a
    CUDA_VISIBLE_DEVICES that a container or notebook set."""
    gpus = listed_gpus()
    if os.environ.get(SLOTS_ENV):
        gpus = _pick(gpus, os.environ[SLOTS_ENV])
    if "CUDA_VISIBLE_DEVICES" in os.environ:
        gpus = _pick(gpus, os.environ["CUDA_VISIBLE_DEVICES"]) if os.environ["CUDA_VISIBLE_DEVICES"].strip() else []
    return gpus


def lock_dir() -> Path:
    """The lock folder, shared by every user (sticky and world-writable, like /tmp itself)."""
    configured = os.environ.get(LOCK_DIR_ENV)
    path = Path(configured) if configured else Path(tempfile.gettempdir()) / SHARED_LOCK_DIR
    if not path.is_dir():
        path.mkdir(parents=True, exist_ok=True)
        if not configured:
            with contextlib.suppress(PermissionError):
                path.chmod(0o1777)
    return path


def acquire(count: int, poll_seconds: float = 1.0, timeout: float | None = None) -> list[str]:
    """Take `count` free GPU slots (waiting for them if needed) and make them the visible GPUs
    (CUDA_VISIBLE_DEVICES: their integer indices); returns their UUIDs, the names of the locks
    (empty when nothing was locked: no GPU, or a scheduler chose)."""
    if count <= 0 or "SLURM_JOB_ID" in os.environ:
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
            os.environ["CUDA_DEVICE_ORDER"] = "PCI_BUS_ID"
            os.environ["CUDA_VISIBLE_DEVICES"] = ",".join(g.visible_name for g in taken)
            return [g.uuid for g in taken]
        if deadline is not None and time.monotonic() > deadline:
            raise InputError(f"no {count} free GPU slots in {folder} after {timeout} s; is another run holding them?")
        time.sleep(poll_seconds)


def _open_lock(path: Path) -> IO[str]:
    """The lock file, readable and writable by every user (whoever created it first)."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    with contextlib.suppress(PermissionError):
        os.fchmod(fd, 0o666)  # the umask took the group and other bits away
    return os.fdopen(fd, "a+")


def _try_take(folder: Path, gpus: list[GPU], count: int) -> list[GPU]:
    handles: list[tuple[GPU, IO[str]]] = []
    for gpu in gpus:
        handle = _open_lock(folder / f"{gpu.uuid}.lock")
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
