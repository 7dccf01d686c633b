"""cpu_kernels through the workflow: under portable a zoo model's bytes do not depend on which code
path the machine would pick (emulated by the capability ATen is told to use)."""

from __future__ import annotations

import hashlib
import shutil

import pytest
import torch
import yaml

from tests.workflow.test_workflow import TINY, snakemake


@pytest.mark.integration
@pytest.mark.skipif(torch.backends.cpu.get_cpu_capability() not in ("AVX2", "AVX512"), reason="needs a CPU with AVX2")
def test_zoo_bytes_do_not_depend_on_the_cpu_capability_under_portable(tmp_path, monkeypatch):
    """Each job inherits the environment snakemake was started with; under portable the workflow
    replaces the capability setting, under native it is the machine's (here: what it is told)."""
    digests: dict[tuple[str, str], str] = {}
    for mode in ("native", "portable"):
        config = {**yaml.safe_load(TINY.read_text()), "cpu_kernels": mode}
        configfile = tmp_path / f"{mode}.yaml"
        configfile.write_text(yaml.safe_dump(config))
        for capability in ("default", "avx2"):
            monkeypatch.setenv("ATEN_CPU_CAPABILITY", capability)
            shutil.rmtree(tmp_path / "run" / "results" / "zoo" / "atlas", ignore_errors=True)
            result = snakemake(tmp_path / "run", "--cores", "1", "results/zoo/atlas/base", configfile=configfile)
            assert result.returncode == 0, result.stderr[-2000:]
            weights = tmp_path / "run" / "results" / "zoo" / "atlas" / "base" / "model.safetensors"
            digests[mode, capability] = hashlib.sha256(weights.read_bytes()).hexdigest()
    assert digests["native", "default"] != digests["native", "avx2"], "the test no longer tells paths apart"
    assert digests["portable", "default"] == digests["portable", "avx2"]
