"""The prepared GPU check (benchmarks/gpu_check.py, `make gpu-check`) runs its checks on the CPU
here, so the script a GPU machine runs once is known to work and to judge what it measures."""

from __future__ import annotations

import json
import sys

from tests.conftest import ROOT

sys.path.insert(0, str(ROOT / "benchmarks"))
import gpu_check

CHATML = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def chat_tokenizer_dir(model_dir, out):
    """The tiny model's tokenizer with a ChatML template and its end-of-turn token."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    tokenizer.add_special_tokens({"additional_special_tokens": ["<|im_start|>", "<|im_end|>"]})
    tokenizer.chat_template = CHATML
    tokenizer.save_pretrained(out)
    return out, tokenizer.convert_tokens_to_ids("<|im_end|>")


def test_the_gpu_check_passes_on_the_cpu_and_writes_its_report(tiny_model_dir, tmp_path):
    out = tmp_path / "gpu_check.json"
    chat_dir, im_end = chat_tokenizer_dir(tiny_model_dir, tmp_path / "chat")
    argv = ["--device", "cpu", "--model", str(tiny_model_dir), "--examples", "4", "--out", str(out)]
    profile = tmp_path / "profile.txt"
    status = gpu_check.main([*argv, "--chat-tokenizer", str(chat_dir), "--scale", "tiny", "--profile", str(profile)])
    report = json.loads(out.read_text())
    assert status == 0 and report["failures"] == []
    real = report["real_model"]
    for path in ("plain", "soft_prompt"):
        assert real[path]["batched==single"] and real[path]["cache==no_cache"]
        assert real[path]["shared_prefix==whole_prompt"] and real[path]["second_reading==own_runs"]
    assert real["vllm"] == "not run: vLLM needs a GPU" and real["tune_seconds_per_step"] > 0
    assert real["bf16"]["option_choice_agreement"] >= gpu_check.BF16_MIN_OPTION_AGREEMENT
    assert report["chat"] == {"end_of_turn": [im_end], "batched==single": True, "stops_at_end_of_turn": True}
    assert report["judge"]["device==cpu"] and report["judge"]["of"] == 4
    assert report["gemma"]["module_scale"] == 16.0 and report["gemma"]["init_through_module"]
    scale = report["scale"]
    assert scale["tune_forced_backoff"]["micro_batch_after"] == 2  # the split is exercised on the CPU too
    assert scale["tune_forced_backoff"]["loss_rel_gap"] < 1e-5
    assert set(scale["decode"]) == {"batch32", "batch128"} and scale["decode"]["batch32"]["steps"] == 8
    assert 0 < scale["decode"]["batch32"]["forward_share"] <= 1 and "aten::" in profile.read_text()


def test_a_failed_invariant_fails_the_check():
    real = {
        "plain": {"batched==single": False, "cache==no_cache": True, "second_reading==own_runs": True},
        "soft_prompt": {"batched==single": True, "cache==no_cache": True, "shared_prefix==whole_prompt": True},
        "options": {"prompt_cache==whole_rows": True},
        "bf16": {"option_choice_agreement": 0.5, "option_gap_per_token_vs_fp32": 0.01},
    }
    gemma = {"init_through_module": True, "vllm_embeddings_through_module": True, "module_scale": 1.0,
             "expected_scale": 16.0}  # fmt: skip
    scale = {
        "tune_forced_backoff": {"loss_rel_gap": 0.0, "grad_rel_gap": 0.5},
        "decode_forced_backoff": {"backoffs": 0, "batch_after": 128, "rows_finished": 128, "of": 128},
        "finite_loss": True,
    }
    report = {"real_model": real, "gemma": gemma, "judge": {"device==cpu": False}, "scale": scale}
    assert gpu_check.failures(report) == [
        "plain batched==single",
        "bf16 option choices agree with fp32",
        "hf judge on the device == the CPU",
        "gemma module scale",
        "tuning back-off keeps the loss",
        "generation back-off happens and finishes",
    ]


def test_a_crashed_section_is_reported_and_the_others_still_run():
    report: dict = {}

    def broken():
        raise RuntimeError("CUDA error: an illegal memory access was encountered")

    gpu_check.section(report, "scale", broken)
    gemma = {"module_scale": 16.0, "expected_scale": 16.0, "init_through_module": True,
             "vllm_embeddings_through_module": True}  # fmt: skip
    gpu_check.section(report, "gemma", lambda: gemma)
    assert report["scale"] == {"error": "RuntimeError: CUDA error: an illegal memory access was encountered"}
    assert gpu_check.failures(report) == ["scale crashed"]
