"""The prepared GPU check (benchmarks/gpu_check.py, `make gpu-check`) runs its checks on the CPU
here, so the script a GPU machine runs once is known to work and to judge what it measures."""

from __future__ import annotations

import json
import sys

from tests.conftest import ROOT

sys.path.insert(0, str(ROOT / "benchmarks"))
import gpu_check


def test_the_gpu_check_passes_on_the_cpu_and_writes_its_report(tiny_model_dir, tmp_path):
    out = tmp_path / "gpu_check.json"
    status = gpu_check.main(["--device", "cpu", "--model", str(tiny_model_dir), "--examples", "4", "--out", str(out)])
    report = json.loads(out.read_text())
    assert status == 0 and report["failures"] == []
    real = report["real_model"]
    assert real["plain"]["batched==single"] and real["soft_prompt"]["cache==no_cache"]
    assert real["vllm"] == "not run: vLLM needs a GPU" and real["tune_seconds_per_step"] > 0
    assert report["gemma"]["module_scale"] == 16.0 and report["gemma"]["init_through_module"]


def test_a_failed_invariant_fails_the_check():
    report = {
        "real_model": {
            "plain": {"batched==single": False, "cache==no_cache": True},
            "soft_prompt": {"batched==single": True, "cache==no_cache": True},
            "options": {"prompt_cache==whole_rows": True},
        },
        "gemma": {"init_through_module": True, "vllm_embeddings_through_module": True, "module_scale": 1.0,
                  "expected_scale": 16.0},
    }  # fmt: skip
    assert gpu_check.failures(report) == ["plain batched==single", "gemma module scale"]
