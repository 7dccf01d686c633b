"""Which CPU code paths a job's float kernels take: the machine's own, or one every x86-64 machine has.

A float sum depends on its order, and the order depends on the code path a library picks for
the machine it runs on: ATen's vectorised kernels dispatch on the CPU's capability (AVX2,
AVX-512), MKL's BLAS on the CPU's model and vendor. The same seed, torch build and thread count
then give different last bits on different machines, and 2,000 pre-training steps amplify them
into different models (and different tables). `portable` pins both paths before a job starts:

- ATen: `ATEN_CPU_CAPABILITY=avx2`, the AVX2 kernels, which every x86-64 CPU since about 2015
  has (on one without AVX2, ATen falls back to what the CPU has, and the bytes differ);
- MKL: conditional numerical reproducibility, `MKL_CBWR=COMPATIBLE` (the SSE2 branch: the only
  one MKL honours on non-Intel CPUs; its AVX2 branch falls back to automatic dispatch there),
  with a fixed thread count (`MKL_DYNAMIC`/`OMP_DYNAMIC` off; every job sets its threads).

The cost, measured on a 2-core AMD EPYC (AVX-512) machine, pre-training a zoo model: 1.8x the
time of the native paths (docs/reproducing.md).
"""

from __future__ import annotations

import os
from collections.abc import MutableMapping

MODES = ("native", "portable")
PORTABLE = {
    "ATEN_CPU_CAPABILITY": "avx2",
    "MKL_CBWR": "COMPATIBLE",
    "MKL_DYNAMIC": "FALSE",
    "OMP_DYNAMIC": "FALSE",
}


def pin(mode: str, environ: MutableMapping[str, str] = os.environ) -> None:
    """Set the environment every job inherits (before any job imports torch).

    `native` leaves the environment as it is: a user's own settings stay."""
    if mode not in MODES:
        raise ValueError(f"cpu_kernels must be one of {', '.join(MODES)}, not {mode!r}")
    if mode == "portable":
        environ.update(PORTABLE)


def in_effect() -> dict[str, str]:
    """What this process runs under, for an artifact's provenance (only the keys that are set)."""
    return {key: os.environ[key] for key in PORTABLE if key in os.environ}
