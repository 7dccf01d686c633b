"""The real-task path end to end (tests/configs/smoke.yaml): the seven real benchmark task files over
the fixtures read as a local mirror, two random Llama-style models with a 32k-token tokenizer
trained locally, chat templates for post-trained roles — through snakemake, offline, on CPU."""

from __future__ import annotations

import json
import subprocess
import sys

import pandas as pd
import pytest
import yaml
from safetensors import safe_open
from transformers import AutoTokenizer

from tests.conftest import ROOT
from tests.workflow.test_workflow import planned_jobs, snakemake

pytestmark = pytest.mark.integration
SMOKE = ROOT / "tests" / "configs" / "smoke.yaml"
# CI runs tests/configs/smoke.yaml on four of its seven tasks; tests/unit/engine/test_real_model.py runs the other three
# through the workflow on a real model, so every real task file passes through snakemake in CI while
# each job's start-up (~4 s of imports on 2 cores) is paid about half as often.
TASKS = ["gsm8k", "triviaqa", "mmlu", "arc_challenge"]
# The fixtures' test rows: triviaqa repeats one question as its validation split does (web and
# wikipedia files).
TEST_ROWS = {"gsm8k": 10, "triviaqa": 11, "mmlu": 10, "arc_challenge": 10}
CLOSED = ["mmlu", "arc_challenge"]


@pytest.fixture(scope="module")
def smoke_config(tmp_path_factory):
    config = yaml.safe_load(SMOKE.read_text())
    assert set(TASKS) < set(config["tasks"]) and len(config["tasks"]) == 7
    config["tasks"] = TASKS
    path = tmp_path_factory.mktemp("smoke-config") / "smoke.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


@pytest.fixture(scope="module")
def smoke_run(tmp_path_factory, smoke_config):
    workdir = tmp_path_factory.mktemp("smoke")
    result = snakemake(workdir, "--cores", "2", configfile=smoke_config)
    assert result.returncode == 0, result.stderr[-3000:]
    return workdir / "results"


def rows(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_real_tasks_come_from_the_mirror_with_provenance(smoke_run):
    for task in TASKS:
        meta = json.loads((smoke_run / "data" / task / "meta.json").read_text())
        test = meta["provenance"]["params"]["data"]["test"]
        assert test["source"] == "mirror" and test["file"].endswith(f"fixtures/{task}/test.jsonl")
        assert len(test["sha256"]) == 64 and meta["counts"]["test"] == TEST_ROWS[task]


def test_random_models_have_a_real_size_vocabulary_and_post_models_a_chat_template(smoke_run):
    base = AutoTokenizer.from_pretrained(smoke_run / "random" / "rand-a" / "base")
    post = AutoTokenizer.from_pretrained(smoke_run / "random" / "rand-a" / "post")
    assert len(base) == 32000 and base("x")["input_ids"][0] == base.bos_token_id
    assert not base.chat_template and post.chat_template
    for model in ("rand-a", "rand-b"):
        with safe_open(str(smoke_run / "softprompts" / model / "base" / "gsm8k" / "prompt.safetensors"), "pt") as f:
            assert f.get_tensor("prompt").shape == (10, 64)


def test_prompts_follow_the_role_and_the_few_shot_source(smoke_run):
    post = rows(smoke_run / "generations" / "rand-b" / "post" / "gsm8k" / "zero_shot.jsonl")
    base = rows(smoke_run / "generations" / "rand-b" / "base" / "gsm8k" / "zero_shot.jsonl")
    assert all(r["prompt"].startswith("<|im_start|>user\nSolve the math problem step by step.") for r in post)
    assert all(r["prompt"].endswith("<|im_start|>assistant\n") for r in post)
    assert all(
        "<|im_start|>" not in r["prompt"] and r["prompt"].startswith("Solve the math problem step by step.")
        for r in base
    )
    assert len(post) == 10 and {r["stop_reason"] for r in post} <= {"eos", "stop", "length"}
    mmlu = rows(smoke_run / "generations" / "rand-a" / "base" / "mmlu" / "few_shot.jsonl")
    shots = mmlu[0]["prompt"]  # an elementary_mathematics question: the subject's first three dev questions
    assert shots.count("Question:") == 4 and "What is 2 + 2?" in shots and "What is 3 x 3?" in shots
    assert "Nitrogen" not in shots  # another subject's dev question
    assert "Energy is measured in" in mmlu[2]["prompt"] and mmlu[2]["prompt"].count("Question:") == 3  # physics: 2


def test_closed_tasks_score_every_listed_option(smoke_run):
    arc = rows(smoke_run / "loglik" / "rand-a" / "post" / "arc_challenge" / "soft_prompt" / "step4.jsonl")
    assert [len(r["logliks"]) for r in arc][:4] == [4, 4, 3, 5]
    assert arc[2]["options"] == ["A. shark", "B. whale", "C. trout"] and arc[2]["label"] == 1


def test_scores_tables_and_claims_cover_every_model_task_and_method(smoke_run):
    scores = pd.read_csv(smoke_run / "tables" / "scores.csv")
    assert set(scores["task"]) == set(TASKS) and set(scores["model"]) == {"rand-a", "rand-b"}
    assert set(scores["method"]) == {"zero_shot", "few_shot", "soft_prompt"}
    assert (scores["n"] == scores["task"].map(TEST_ROWS)).all()
    swap = pd.read_csv(smoke_run / "tables" / "swap_distance.csv")
    assert set(swap["task"]) >= set(TASKS)
    assert "distance_to_truth" not in pd.read_csv(smoke_run / "tables" / "consensus.csv").columns  # no zoo truth
    assert (smoke_run / "tables" / "claims.md").read_text().startswith("# The paper's claims")
    for task in CLOSED:
        verdicts = rows(smoke_run / "scores" / "rand-b" / "base" / task / "zero_shot.jsonl")
        assert all(isinstance(v["knowledge"], bool) and "knowledge_normalized" in v for v in verdicts)


def test_review_shows_every_accepted_answer(smoke_run):
    command = [sys.executable, "-m", "softeval", "review", "--results", str(smoke_run), "--model", "rand-a"]
    command += ["--role", "post", "--task", "triviaqa", "--method", "zero_shot", "--limit", "1"]
    shown = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    assert "gold     | 'Paris'" in shown and "aliases  | 'Paris, France', 'City of Light'" in shown


def test_a_rerun_has_nothing_to_do(smoke_run, smoke_config):
    result = snakemake(smoke_run.parent, "-n", configfile=smoke_config)
    assert result.returncode == 0 and "Nothing to be done" in result.stdout + result.stderr


def test_the_paper_config_plans_offline(tmp_path):
    result = snakemake(tmp_path, "-n", "-p", configfile=ROOT / "config" / "paper.yaml")
    assert result.returncode == 0, result.stderr[-2000:]
    jobs = planned_jobs(result.stdout)
    units = 7 * 2 * 7
    assert jobs["judge"] == units and jobs["tune"] == 7 * 2  # one tune job per model x role, every task
    assert jobs["evaluate"] == jobs["evaluate_soft_prompt"] == 7 * 2  # per model x role, every task in one job
    assert jobs["timings"] == 1 and sum(jobs.values()) == result.stdout.count("benchmark: ") + 2  # all, timings
    assert "pretrain" not in jobs and "zoo_report" not in jobs
    assert "gpu=1, runtime=360, mem_mb=64000" in result.stdout
    assert "--model meta-llama/Llama-3.1-8B-Instruct" in result.stdout and '"chat_template": true' in result.stdout
    # a lettered task's shared block (include: _lettered_choice.yaml) is an input of its jobs
    for rule in ("prepare_task", "judge"):
        job = next(b for b in result.stdout.split("\n\n") if f"rule {rule}:" in b and "task=mmlu" in b)
        assert "config/tasks/_lettered_choice.yaml" in job, rule
    evaluate = next(b for b in result.stdout.split("\n\n") if "rule evaluate:" in b)
    assert "config/tasks/_lettered_choice.yaml" in evaluate and "results/loglik/" in evaluate
    tune = next(b for b in result.stdout.split("\n\n") if "rule tune:" in b)
    assert "config/tasks/_lettered_choice.yaml" in tune and "config/tasks/mmlu.yaml" in tune
    gsm8k = next(b for b in result.stdout.split("\n\n") if "rule prepare_task:" in b and "gsm8k.yaml" in b)
    assert "_lettered_choice.yaml" not in gsm8k
