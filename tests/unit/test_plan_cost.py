"""`softeval plan-cost`: the paper's GPU-hours from the plan, checked piece by piece by hand."""

from __future__ import annotations

import copy
import json
import shutil
import subprocess
import sys
from dataclasses import replace
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
    MEASURED,
    VLLM_ENGINE_START_S,
    Roofline,
    Shape,
    TaskLengths,
    gpu_jobs,
    hf_step_floor,
    job_cost,
    judge_cost,
    judge_templates,
    model_shape,
    plan_cost,
    run_plan,
    units_per_task,
)
from softeval.schema import InputError

ROOT = Path(__file__).resolve().parents[2]
TASKS = ROOT / "config" / "tasks"
CASCADE_RUN = ROOT / "tests" / "data" / "cascade-run"
# `softeval plan-cost --configfile config/paper.yaml` (H100 SXM, 40 % MFU, 60 % bandwidth): GPU-hours
# by bound and backend. The old model (every row to its budget, no cascade, no per-step overhead)
# said 196 (HF) / 151 (vLLM); HF decoding is now priced at the 145.8 ms a step an H200 measured, with
# continuous batching and every row of a unit in flight (static batches per chunk: 805.2), vLLM with
# engine calls of VLLM_WINDOW prompts (chunks of 256, each drained: 32.3 realistic).
PAPER_TOTALS = {
    ("realistic", "hf"): 128.4,
    ("realistic", "vllm"): 19.5,
    ("upper", "hf"): 1179.2,
    ("upper", "vllm"): 63.8,
}


def paper_config(**overlay):
    config = load_config_file(ROOT / "config" / "config.yaml")
    config = merge_blocks(config, load_config_file(ROOT / "config" / "paper.yaml"))
    return check_config(merge_blocks(config, overlay), "paper", ROOT)


def paper_plan(**overlay):
    """The run plan of paper_config(**overlay): what the cost functions count units and jobs from."""
    return run_plan(paper_config(**overlay), TASKS)


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
    assert shape.layers == 3  # each step launches every layer's kernels (the HF step floor)


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


PROMPTS = [50, 110] + [60] * 5  # zero-shot, few-shot (3 shots of 20), soft prompt (10 vectors) at 5 steps


def test_one_job_by_hand():
    plan = paper_plan()
    roof = Roofline(GPUS["h100-sxm"], 0.4, 0.6)
    flop_s = 989e12 * 0.4
    n = ASSUMED_7B.params
    cost = job_cost(plan, lengths(), True, ASSUMED_7B, roof, "hf", 256, 60.0).seconds
    assert units_per_task(plan) == 7  # zero-shot, few-shot, soft prompt at 0, 10, 20, 40, 80
    assert cost["start"] == pytest.approx(3 / 7 * 60.0)  # a task's seventh of evaluate, evaluate_soft_prompt, tune
    assert cost["tune"] == pytest.approx(4 * n * 80 * 8 * (10 + 50 + 10) / flop_s)
    prompts = 50 + (50 + 3 * 20) + 5 * (50 + 10)
    assert cost["prompts"] == pytest.approx(2 * n * 100 * prompts / flop_s)
    assert cost["options"] == pytest.approx(7 * 2 * n * 100 * 4 * 5 / flop_s)
    # HF: 4 batches of 32 (the last one short) decode for the whole budget; a 7B step's bytes take
    # ~7 ms at batch 32 on an H100, its overhead 145.8 ms (measured on an H200): the overhead binds
    assert hf_step_floor(ASSUMED_7B) == pytest.approx(0.1458)
    for prompt in PROMPTS:
        assert roof.decode(1, ASSUMED_7B, 32, prompt + 16) < hf_step_floor(ASSUMED_7B) / 10
    assert cost["decode"] == pytest.approx(7 * 4 * 32 * 0.1458)


def test_an_hf_step_bound_by_its_bytes_reads_the_weights_once_and_each_rows_cache():
    plan = paper_plan()
    roof = Roofline(GPUS["h100-sxm"], 0.4, 0.6)
    heavy = Shape(params=2e11, kv_bytes_per_token=1e6, source="test", layers=1)  # bytes, not launches, bind
    decode = job_cost(plan, lengths(), False, heavy, roof, "hf", 256, 0.0).seconds["decode"]
    # 128 steps read the weights; 100 rows x 32 tokens each read a cache of prompt + 16 tokens
    expected = sum(roof.bytes(128 * 4e11 + 100 * 32 * (p + 16) * 1e6) for p in PROMPTS)
    assert decode == pytest.approx(expected)


def test_vllm_is_bounded_by_its_kv_memory_and_starts_an_engine_per_evaluation_job():
    plan = paper_plan()
    roof = Roofline(GPUS["h100-sxm"], 0.4, 0.6)
    long = lengths(rows=5000, budget=4000, prompt=100.0)
    hf = job_cost(plan, long, False, ASSUMED_7B, roof, "hf", 256, 60.0).seconds
    vllm = job_cost(plan, long, False, ASSUMED_7B, roof, "vllm", 256, 60.0).seconds
    unlimited = job_cost(plan, long, False, ASSUMED_7B, roof, "vllm", 10**6, 60.0).seconds["decode"]
    assert vllm["decode"] < hf["decode"]
    assert unlimited == pytest.approx(vllm["decode"])  # memory, not the concurrency flag, binds
    free = 80e9 * 0.85 - 2 * ASSUMED_7B.params
    expected = 0.0
    for prompt in [100, 100 + 3 * 20] + [100 + 10] * 5:
        fits = int(free // ((prompt + 2000) * ASSUMED_7B.kv_bytes_per_token))  # ~50 sequences of ~1 GB
        steps = 5000 * 4000 / fits  # more than 20 chunks of 256 drained to their 4000th token
        expected += roof.bytes(steps * 2 * ASSUMED_7B.params + 5000 * 4000 * (prompt + 2000) * 512 * 1024)
    assert vllm["decode"] == pytest.approx(expected)
    # a task's seventh of the model x role's two engines (evaluate, evaluate_soft_prompt: every task in each)
    assert vllm["start"] - hf["start"] == pytest.approx(2 * VLLM_ENGINE_START_S / 7)
    assert 60 <= VLLM_ENGINE_START_S <= 120


def test_the_harness_reading_is_costed_as_the_engines_run_it():
    """A task with harness_generation: HF decodes each batch until both readings end (the larger
    budget); vLLM continues softeval's own tokens where the harness reads further (the larger
    budget per row, never both)."""
    config = paper_config()
    plan = run_plan(config, TASKS)
    roof = Roofline(GPUS["h100-sxm"], 0.4, 0.6)
    plain, harness = lengths(budget=32), lengths(budget=32, harness_budget=256)
    hf = job_cost(plan, harness, False, ASSUMED_7B, roof, "hf", 256, 0.0).seconds["decode"]
    assert hf == pytest.approx(7 * 4 * 256 * hf_step_floor(ASSUMED_7B))
    vllm = job_cost(plan, harness, False, ASSUMED_7B, roof, "vllm", 256, 0.0).seconds["decode"]
    kv = ASSUMED_7B.kv_bytes_per_token
    expected = sum(roof.bytes(256 * 2 * ASSUMED_7B.params + 100 * 256 * (p + 128) * kv) for p in PROMPTS)
    assert vllm == pytest.approx(expected)
    assert vllm > job_cost(plan, plain, False, ASSUMED_7B, roof, "vllm", 256, 0.0).seconds["decode"]
    nq = {row["task"]: row for row in plan_cost(config, TASKS).rows}["nq_open"]
    assert nq["budget"] == 32  # the judge reads softeval's response; decoding runs to the harness's 256


def test_realistic_lengths_stop_rows_and_a_batch_waits_for_its_slowest():
    """Rows end after their measured lengths; an HF chunk drains to its slowest row: the
    larger budget when one of its rows is cut at both readings' budgets, softeval's when one is cut
    at softeval's, else the longest row that ended."""
    plan = paper_plan()
    roof = Roofline(GPUS["h100-sxm"], 0.4, 0.6)
    ends = lengths(budget=400, ended_mean=10.0, ended_max=40.0, response=8.0)
    assert ends.decoded("realistic") == 10 and ends.slowest("realistic", 32) == 40
    assert ends.decoded("upper") == ends.slowest("upper", 32) == 400
    assert ends.response_tokens("realistic") == 8 and ends.response_tokens("upper") == 400
    hf = job_cost(plan, ends, False, ASSUMED_7B, roof, "hf", 256, 0.0, "realistic").seconds["decode"]
    # continuous batching: 100 rows of 10 tokens through 32 slots, 7/8 of them busy on average, then
    # the last rows drain to the slowest (40): 35.7 + 30 steps a unit, where static batches of 32
    # waited for each batch's slowest: 4 x 40
    steps = 100 * 10 / (32 * 7 / 8) + (40 - 10)
    assert hf == pytest.approx(7 * steps * hf_step_floor(ASSUMED_7B))
    assert steps < 4 * 40
    some_cut = replace(ends, length_share=0.02)
    cut = 1 - 0.98**32  # a batch of 32 holds a row cut at its budget about half the time
    assert some_cut.slowest("realistic", 32) == pytest.approx(cut * 400 + (1 - cut) * 40)
    assert some_cut.decoded("realistic") == pytest.approx(0.02 * 400 + 0.98 * 10)
    assert some_cut.response_tokens("realistic") == pytest.approx(0.02 * 400 + 0.98 * 8)
    # a row whose harness reading (256 tokens) is cut too decodes the larger budget
    harness = lengths(budget=32, harness_budget=256, ended_mean=6.0, ended_max=20.0, length_share=0.05)
    harness = replace(harness, harness_cut_share=0.03)
    assert harness.decoded("realistic") == pytest.approx(0.03 * 256 + 0.02 * 32 + 0.95 * 6)
    both, none = 1 - 0.97**32, 0.95**32
    assert harness.slowest("realistic", 32) == pytest.approx(both * 256 + (1 - both - none) * 32 + none * 20)
    unmeasured = lengths(budget=400)  # no run measured it: rows end after the task file's target length
    assert unmeasured.decoded("realistic") == unmeasured.slowest("realistic", 32) == 10


def judge_plan(name="openai", cascade=True):
    return paper_plan(evaluation={"judge": {"name": name, "model": "Qwen/Qwen3-32B", "cascade": cascade}})


def test_the_cascade_sends_the_llm_only_the_measured_share():
    roof = Roofline(GPUS["h100-sxm"], 0.4, 0.6)
    shares = lengths(knowledge_share=0.3, format_share=0.1)
    closed_on = judge_cost(judge_plan(), shares, True, roof)
    closed_off = judge_cost(judge_plan(cascade=False), shares, True, roof)
    assert closed_on == pytest.approx(0.1 * closed_off)  # closed tasks: format only
    on, off = (
        judge_cost(judge_plan(), shares, False, roof),
        judge_cost(judge_plan(cascade=False), shares, False, roof),
    )
    assert off > closed_off > 0  # open tasks: knowledge and format, each prompt as the closed task's format one
    assert on == pytest.approx(0.3 * (off - closed_off) + 0.1 * closed_off)
    # the paper config's judge is the cascade, at the shares the run measured
    config = paper_config()
    assert config["evaluation"]["judge"]["cascade"] is True
    rows = {row["task"]: row for row in plan_cost(config, TASKS).rows}
    for task, m in MEASURED.items():
        assert rows[task]["measured"]
        assert rows[task]["judge_share"] == {"knowledge": m["knowledge_share"], "format": m["format_share"]}


def test_a_judge_server_computes_the_shared_instruction_once():
    """vLLM's prefix caching: each request of a kind starts with the same instruction, computed
    once; the hf judge computes every prompt whole."""
    roof = Roofline(GPUS["h100-sxm"], 0.4, 0.6)
    templates = judge_templates(paper_config())
    assert 50 < templates["knowledge"].prefix < 100 and 15 < templates["knowledge"].rest < 50
    plain = lengths(knowledge_share=1.0, format_share=1.0)
    server, local = judge_cost(judge_plan(), plain, True, roof), judge_cost(judge_plan("hf"), plain, True, roof)
    requests = 100 * 7
    assert local - server == pytest.approx(roof.compute(2 * ASSUMED_32B.params * requests * templates["format"].prefix))


def fixture_measurement():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import cascade_share
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    return cascade_share


def test_the_stored_measurement_is_the_scripts_on_its_run():
    """plan_cost.MEASURED is what benchmarks/cascade_share.py computes on the run it names
    (tests/data/cascade-run: that run's score and generation files, the fields it reads)."""
    cascade_share = fixture_measurement()
    assert cascade_share.measure(CASCADE_RUN) == MEASURED
    assert set(MEASURED) == set(paper_config()["tasks"])
    # zero-shot, few-shot and the tuned soft prompt, base and post: 60 rows (66: 11-row fixtures)
    assert {m["units"] for m in MEASURED.values()} == {6}
    assert {m["rows"] for m in MEASURED.values()} == {60, 66}
    # the cascade: on SmolLM2-135M the rule is certain of about half the verdicts, the LLM gets the rest
    assert cascade_share.overall(MEASURED) == pytest.approx(0.509, abs=0.001)


def test_the_script_refuses_a_run_judged_through_the_cascade(tmp_path):
    cascade_share = fixture_measurement()
    shutil.copytree(CASCADE_RUN, tmp_path / "run")
    path = next((tmp_path / "run" / "scores").rglob("*.jsonl"))
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    rows[0]["judge"] = "openai:Qwen/Qwen3-32B"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(SystemExit, match="needs the rule judge's own verdicts"):
        cascade_share.measure(tmp_path / "run")


def test_both_bounds_on_the_paper_config():
    plan = plan_cost(paper_config(), TASKS)
    for row in plan.rows:
        for backend in ("hf", "vllm"):
            realistic, upper = row["realistic"][backend], row["upper"][backend]
            assert 0 < realistic.hours <= upper.hours
            for phase in ("start", "tune", "prompts", "options"):  # the bounds differ in lengths only
                assert realistic.seconds.get(phase) == upper.seconds.get(phase)
        assert row["upper"]["vllm"].seconds["decode"] < row["upper"]["hf"].seconds["decode"]
        assert row["realistic"]["hf"].seconds["judge"] == row["realistic"]["vllm"].seconds["judge"] > 0
    totals = {(b, e): round(plan.total(b, e), 1) for b in ("realistic", "upper") for e in ("hf", "vllm")}
    assert totals == PAPER_TOTALS


def test_paper_plan_counts_the_workflows_gpu_jobs_and_every_task_is_costed():
    config = paper_config()
    plan = plan_cost(config, TASKS)
    assert (
        round(gpu_jobs(run_plan(config, TASKS)) * 7 * 2 * 7) == 42
    )  # tests/workflow/test_profiles.py: the dry run's tune/evaluate* jobs
    assert [row["task"] for row in plan.rows] == config["tasks"]
    rows = {row["task"]: row for row in plan.rows}
    assert rows["triviaqa"]["rows"] == 17944 and rows["mmlu"]["rows"] == 14042 and rows["gsm8k"]["rows"] == 1319
    assert any("42 GPU jobs" in note for note in plan.notes)


def test_a_pilot_limit_and_a_rule_judge_cost_less():
    full = plan_cost(paper_config(), TASKS)
    pilot = plan_cost(paper_config(evaluation={"test_limit": 100, "judge": {"name": "rule"}}), TASKS)
    for big, small in zip(full.rows, pilot.rows, strict=True):
        for bound in ("realistic", "upper"):
            assert small["rows"] == 100 and small[bound]["hf"].hours < big[bound]["hf"].hours
            assert small[bound]["hf"].seconds.get("judge", 0) == 0


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
    assert measured["upper"]["hf"].seconds["prompts"] > estimated["upper"]["hf"].seconds["prompts"]  # 300 > 105
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
    assert "| **all** |" in out and "NVIDIA H200" in out and "42 GPU jobs" in out
    assert "### Realistic lengths" in out and "### Upper bound: every row decodes to its token budget" in out
    assert "GPU-hours: realistic lengths **" in out and "rule-first cascade" in out
    assert "share measured by benchmarks/cascade_share.py" in out and "prefix caching" in out


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
        note.startswith("5 checkpoint models (5 with a post-trained twin), 10 model x role: 30 GPU jobs")
        for note in pairs.notes
    )
    assert any(
        note.startswith("5 checkpoint models (0 with a post-trained twin), 5 model x role: 15 GPU jobs")
        for note in bases.notes
    )
    for full, half in zip(pairs.rows, bases.rows, strict=True):
        for bound in ("realistic", "upper"):
            for backend in ("hf", "vllm"):
                assert half[bound][backend].hours == pytest.approx(full[bound][backend].hours / 2)
                for phase, seconds in full[bound][backend].seconds.items():
                    assert half[bound][backend].seconds[phase] == pytest.approx(seconds / 2)
    mixed = plan_cost(paper_config(models=hub_models(2) + hub_models(3, base_only=True)[2:]), TASKS)
    assert any(" 5 model x role: 15 GPU jobs" in note for note in mixed.notes)
    assert mixed.rows[0]["upper"]["hf"].hours == pytest.approx(bases.rows[0]["upper"]["hf"].hours)
