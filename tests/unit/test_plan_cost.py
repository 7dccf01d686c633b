"""`softeval plan-cost`: the paper's GPU-hours from the plan, checked piece by piece by hand."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import transformers

from softeval.config import check_config, load_config_file
from softeval.data.tasks import merge_blocks
from softeval.plan_cost import (
    ASSUMED_7B,
    ASSUMED_32B,
    GPUS,
    Roofline,
    Shape,
    TaskLengths,
    gpu_jobs,
    job_cost,
    model_shape,
    plan_cost,
    units_per_task,
)
from softeval.schema import InputError

ROOT = Path(__file__).resolve().parents[2]
TASKS = ROOT / "config" / "tasks"


def paper_config(**overlay):
    config = load_config_file(ROOT / "config" / "config.yaml")
    config = merge_blocks(config, load_config_file(ROOT / "config" / "paper.yaml"))
    return check_config(merge_blocks(config, overlay), "paper", ROOT)


@pytest.mark.parametrize(
    ("cls", "extra"),
    [
        (transformers.LlamaConfig, {}),
        (transformers.LlamaConfig, {"num_key_value_heads": 2, "tie_word_embeddings": True}),
        (transformers.Qwen3Config, {"num_key_value_heads": 2, "head_dim": 96}),
    ],
)
def test_shape_counts_the_parameters_transformers_builds(cls, extra):
    cfg = dict(hidden_size=512, num_hidden_layers=3, num_attention_heads=8, intermediate_size=1376, vocab_size=3000)
    cfg.update(extra)
    with torch.device("meta"):
        model = transformers.AutoModelForCausalLM.from_config(cls(**cfg))
    params = sum(p.numel() for p in model.parameters())
    shape = Shape.from_config(cfg, "test")
    assert shape.params == pytest.approx(params, rel=0.005)  # norms are the only thing left out
    kv_heads = cfg.get("num_key_value_heads", 8)
    head_dim = cfg.get("head_dim", 64)
    assert shape.kv_bytes_per_token == 2 * 3 * kv_heads * head_dim * 2  # K and V, every layer, bf16


def test_published_shapes():
    assert ASSUMED_7B.params == pytest.approx(6.74e9, rel=0.001)  # Llama-2-7B
    assert ASSUMED_7B.kv_bytes_per_token == 512 * 1024
    assert ASSUMED_32B.params == pytest.approx(32.8e9, rel=0.005)  # Qwen3-32B


def test_a_local_config_json_is_read_and_nothing_is_downloaded(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    cfg = {"hidden_size": 256, "num_hidden_layers": 2, "num_attention_heads": 4, "vocab_size": 1000}
    (tmp_path / "config.json").write_text(json.dumps({"text_config": cfg}))
    assert model_shape(str(tmp_path), "main") == Shape.from_config(cfg, str(tmp_path / "config.json"))
    assert model_shape("nobody/not-cached-anywhere", "main") is ASSUMED_7B


def test_roofline_by_hand():
    roof = Roofline(GPUS["h100-sxm"], mfu=0.5, bandwidth_efficiency=0.5)
    assert roof.compute(989e12 * 0.5 * 10) == pytest.approx(10.0)
    shape = Shape(params=1e9, kv_bytes_per_token=1e5, source="test")
    # 100 steps x (2 GB of weights + 4 sequences x 500 tokens x 100 kB) at 1.675 TB/s
    assert roof.decode(100, shape, 4, 500) == pytest.approx(100 * (2e9 + 2e8) / 1.675e12)


def lengths(**change):
    base = dict(rows=100, prompt=50.0, shot=20.0, target=10.0, budget=32, option=5.0, options=4, source="test")
    return TaskLengths(**{**base, **change})


def test_one_job_by_hand():
    config = paper_config()
    roof = Roofline(GPUS["h100-sxm"], 0.4, 0.6)
    flop_s = 989e12 * 0.4
    n = ASSUMED_7B.params
    cost = job_cost(config, lengths(), True, ASSUMED_7B, roof, "hf", 256, 60.0).seconds
    assert units_per_task(config) == 7  # zero-shot, few-shot, soft prompt at 0, 10, 20, 40, 80
    assert cost["start"] == pytest.approx((2 + 1 / 7) * 60.0)  # evaluate[_soft_prompt]_closed; 1/7 of a tune job
    assert cost["tune"] == pytest.approx(4 * n * 80 * 8 * (10 + 50 + 10) / flop_s)
    prompts = 50 + (50 + 3 * 20) + 5 * (50 + 10)
    assert cost["prompts"] == pytest.approx(2 * n * 100 * prompts / flop_s)
    assert cost["options"] == pytest.approx(7 * 2 * n * 100 * 4 * 5 / flop_s)
    # HF: 4 batches of 32 (the last one short) decode for the whole budget, each step reading the weights
    steps = 4 * 32
    contexts = [50, 110] + [60] * 5
    expected = sum(roof.decode(steps, ASSUMED_7B, 32, c + 16) for c in contexts)
    assert cost["decode"] == pytest.approx(expected)


def test_vllm_is_bounded_by_its_kv_memory():
    config = paper_config()
    roof = Roofline(GPUS["h100-sxm"], 0.4, 0.6)
    long = lengths(rows=5000, budget=4000, prompt=100.0)
    hf = job_cost(config, long, False, ASSUMED_7B, roof, "hf", 256, 0.0).seconds["decode"]
    vllm = job_cost(config, long, False, ASSUMED_7B, roof, "vllm", 256, 0.0).seconds["decode"]
    unlimited = job_cost(config, long, False, ASSUMED_7B, roof, "vllm", 10**6, 0.0).seconds["decode"]
    assert vllm < hf
    assert unlimited == pytest.approx(vllm)  # memory, not the concurrency flag, binds: ~55 GB of KV at ~1 MB/token
    free = 80e9 * 0.85 - 2 * ASSUMED_7B.params
    expected = 0.0
    for prompt in [100, 100 + 3 * 20] + [100 + 10] * 5:  # zero-shot, few-shot, five soft-prompt steps
        context = prompt + 2000
        fits = int(free // (context * ASSUMED_7B.kv_bytes_per_token))
        expected += roof.decode(5000 * 4000 / fits, ASSUMED_7B, fits, context)
    assert vllm == pytest.approx(expected)


def test_the_harness_reading_is_costed_as_the_engines_run_it():
    """A task with harness_generation: HF decodes each batch until both readings end (the larger
    budget); vLLM continues softeval's own tokens where the harness reads further (the larger
    budget per row, never both)."""
    config = paper_config()
    roof = Roofline(GPUS["h100-sxm"], 0.4, 0.6)
    plain, harness = lengths(budget=32), lengths(budget=32, harness_budget=256)
    hf = job_cost(config, harness, False, ASSUMED_7B, roof, "hf", 256, 0.0).seconds["decode"]
    contexts = [50, 110] + [60] * 5
    assert hf == pytest.approx(sum(roof.decode(4 * 256, ASSUMED_7B, 32, c + 128) for c in contexts))
    vllm = job_cost(config, harness, False, ASSUMED_7B, roof, "vllm", 256, 0.0).seconds["decode"]
    assert vllm == pytest.approx(sum(roof.decode(100 * 256 / 100, ASSUMED_7B, 100, c + 128) for c in contexts))
    assert vllm > job_cost(config, plain, False, ASSUMED_7B, roof, "vllm", 256, 0.0).seconds["decode"]
    nq = {row["task"]: row for row in plan_cost(config, TASKS).rows}["nq_open"]
    assert nq["budget"] == 32  # the judge reads softeval's response; decoding runs to the harness's 256


def test_paper_plan_counts_the_workflows_gpu_jobs_and_every_task_is_costed():
    config = paper_config()
    plan = plan_cost(config, TASKS)
    assert (
        round(gpu_jobs(config) * 7 * 2 * 7) == 210
    )  # tests/workflow/test_profiles.py: the dry run's tune/evaluate* jobs
    assert [row["task"] for row in plan.rows] == config["tasks"]
    rows = {row["task"]: row for row in plan.rows}
    assert rows["triviaqa"]["rows"] == 17944 and rows["mmlu"]["rows"] == 14042 and rows["gsm8k"]["rows"] == 1319
    for row in plan.rows:
        assert 0 < row["vllm"].hours < row["hf"].hours  # vLLM decodes faster; everything else is shared
        assert row["hf"].seconds["judge"] == row["vllm"].seconds["judge"] > 0
    assert any("210 GPU jobs" in note for note in plan.notes)


def test_a_pilot_limit_and_a_rule_judge_cost_less():
    full = plan_cost(paper_config(), TASKS)
    pilot = plan_cost(paper_config(evaluation={"test_limit": 100, "judge": {"name": "rule"}}), TASKS)
    for big, small in zip(full.rows, pilot.rows, strict=True):
        assert small["rows"] == 100 and small["hf"].hours < big["hf"].hours
        assert "judge" not in small["hf"].seconds or small["hf"].seconds["judge"] == 0


def test_pilot_lengths_replace_the_estimates(tmp_path):
    folder = tmp_path / "generations" / "m" / "base" / "gsm8k"
    (folder / "soft_prompt").mkdir(parents=True)
    for unit, prompt in (("zero_shot", 300), ("few_shot", 900), ("soft_prompt/step0", 310)):
        rows = [{"id": str(i), "prompt_tokens": prompt, "new_tokens": 40 + i} for i in range(3)]
        (folder / f"{unit}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    config = paper_config(tasks=["gsm8k"])
    estimated = plan_cost(config, TASKS).rows[0]
    measured = plan_cost(config, TASKS, pilot=tmp_path).rows[0]
    assert "pilot run" in measured["lengths"]
    assert measured["hf"].seconds["prompts"] > estimated["hf"].seconds["prompts"]  # 300 > the file's 105
    with pytest.raises(InputError, match="no zero_shot generations of task mmlu"):
        plan_cost(paper_config(tasks=["gsm8k", "mmlu"]), TASKS, pilot=tmp_path)


def test_a_task_without_a_cost_block_says_how_to_fix_it(tmp_path):
    config = paper_config(tasks=["gsm8k"])
    task_dir = tmp_path / "tasks"
    task_dir.mkdir()
    text = (TASKS / "gsm8k.yaml").read_text()
    (task_dir / "gsm8k.yaml").write_text(text[: text.index("# For `softeval plan-cost`")])
    with pytest.raises(InputError, match=r"no `cost` block .* or pass --pilot"):
        plan_cost(copy.deepcopy(config), task_dir)
    with pytest.raises(InputError, match="unknown; one of a100-80gb"):
        plan_cost(config, TASKS, gpu="tpu")


def test_command_prints_the_table():
    out = subprocess.run(
        [sys.executable, "-m", "softeval", "plan-cost", "--configfile", "config/paper.yaml", "--gpu", "h200"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "| **all** |" in out and "NVIDIA H200" in out and "210 GPU jobs" in out


def hub_models(n: int, base_only: bool = False) -> list[dict]:
    """n checkpoints no cache knows (every shape the assumed 7B), with or without a post-trained twin."""
    return [
        {"name": f"m{i}", "base": {"id": f"org/m{i}"}, **({} if base_only else {"post": {"id": f"org/m{i}-it"}})}
        for i in range(n)
    ]


def test_five_base_only_checkpoints_cost_half_of_five_pairs():
    """Only the jobs the plan runs are costed: a model without a post-trained twin has no post jobs."""
    pairs = plan_cost(paper_config(models=hub_models(5)), TASKS)
    bases = plan_cost(paper_config(models=hub_models(5, base_only=True)), TASKS)
    # 7 tasks (3 closed): per model x role 1 tune job + 7 x (plain + soft prompt) evaluation jobs
    assert any(
        note.startswith("5 checkpoint models (5 with a post-trained twin), 10 model x role: 150 GPU jobs")
        for note in pairs.notes
    )
    assert any(
        note.startswith("5 checkpoint models (0 with a post-trained twin), 5 model x role: 75 GPU jobs")
        for note in bases.notes
    )
    for full, half in zip(pairs.rows, bases.rows, strict=True):
        for backend in ("hf", "vllm"):
            assert half[backend].hours == pytest.approx(full[backend].hours / 2)
            for phase, seconds in full[backend].seconds.items():
                assert half[backend].seconds[phase] == pytest.approx(seconds / 2)
    mixed = plan_cost(paper_config(models=hub_models(2) + hub_models(3, base_only=True)[2:]), TASKS)
    assert any(" 5 model x role: 75 GPU jobs" in note for note in mixed.notes)
    assert mixed.rows[0]["hf"].hours == pytest.approx(bases.rows[0]["hf"].hours)
