"""The GPU-slot lock hands vLLM integer device indices (issue 41, item 2).

vLLM reads CUDA_VISIBLE_DEVICES entry by entry with int() (vllm/platforms/cuda.py,
device_id_to_physical_device_id; vllm-project/vllm#13815, #20939): a job whose variable holds
"GPU-<uuid>" stops at engine start. Every local `backend: vllm` job takes the lock first, so the
variable must hold the integers CUDA numbers the GPUs by under CUDA_DEVICE_ORDER=PCI_BUS_ID
(nvidia-smi's listing order), while the locks stay named by UUID. nvidia-smi is a stand-in script
on PATH, as in test_scale.py.
"""

from __future__ import annotations

import os

import pytest

from softeval.engine import gpu_slots

LISTING = "0, GPU-aaaa\n1, GPU-bbbb\n2, GPU-cccc\n"


@pytest.fixture
def three_gpus(tmp_path, monkeypatch):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    smi = bin_dir / "nvidia-smi"
    smi.write_text(f"#!/bin/sh\nprintf '{LISTING.replace(chr(10), chr(92) + 'n')}'\n")
    smi.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv(gpu_slots.LOCK_DIR_ENV, str(tmp_path / "locks"))
    for name in ("CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "SLURM_JOB_ID", gpu_slots.SLOTS_ENV):
        monkeypatch.delenv(name, raising=False)
    yield tmp_path / "locks"
    for handle in gpu_slots._held:
        handle.close()
    gpu_slots._held.clear()


def vllm_device_ids() -> list[int]:
    """What vLLM does with the variable before its engine starts."""
    return [int(x) for x in os.environ["CUDA_VISIBLE_DEVICES"].split(",")]


def test_the_stub_lists_three_gpus(three_gpus):
    assert [(g.index, g.uuid) for g in gpu_slots.listed_gpus()] == [
        ("0", "GPU-aaaa"),
        ("1", "GPU-bbbb"),
        ("2", "GPU-cccc"),
    ]


def test_cuda_visible_devices_holds_integers_that_vllm_can_parse(three_gpus, monkeypatch):
    assert gpu_slots.acquire(1) == ["GPU-aaaa"]  # the lock's name: the UUID
    assert os.environ["CUDA_VISIBLE_DEVICES"] == "0" and os.environ["CUDA_DEVICE_ORDER"] == "PCI_BUS_ID"
    assert vllm_device_ids() == [0]
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES")
    assert gpu_slots.acquire(2) == ["GPU-bbbb", "GPU-cccc"]
    assert vllm_device_ids() == [1, 2]
    assert sorted(p.name for p in three_gpus.iterdir()) == ["GPU-aaaa.lock", "GPU-bbbb.lock", "GPU-cccc.lock"]


def test_gpus_named_by_uuid_become_their_indices(three_gpus, monkeypatch):
    """A container that named its GPUs by UUID, or SOFTEVAL_GPU_SLOTS by UUID: still integers."""
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "GPU-cccc,GPU-bbbb")
    assert gpu_slots.acquire(1) == ["GPU-cccc"]
    assert vllm_device_ids() == [2]
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES")
    monkeypatch.setenv(gpu_slots.SLOTS_ENV, "GPU-bbbb")
    assert gpu_slots.acquire(1) == ["GPU-bbbb"]
    assert vllm_device_ids() == [1]


def test_a_gpu_held_by_uuid_is_still_locked_when_named_by_index(three_gpus, monkeypatch):
    """Locks are per physical GPU: an index and the UUID of the same GPU meet at the same lock."""
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "GPU-bbbb")
    assert gpu_slots.acquire(1) == ["GPU-bbbb"]
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1")
    with pytest.raises(gpu_slots.InputError, match="no 1 free GPU slots"):
        gpu_slots.acquire(1, poll_seconds=0.05, timeout=0.2)
