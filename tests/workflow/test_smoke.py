"""The real-task path end to end, as a user with base checkpoints runs it: `softeval run` from a
regular (non-editable) install, in an empty folder outside the checkout, on tests/configs/smoke.yaml
(the seven real benchmark task files over the fixtures read as a local mirror, two random
Llama-style models with a 32k-token tokenizer trained locally, chat templates for post-trained
roles; offline, on CPU); then one more model, and only its jobs run."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import pytest
import yaml
from safetensors import safe_open
from transformers import AutoTokenizer

from tests.conftest import ROOT, tasks_with_short_harness_readings
from tests.workflow.test_workflow import planned_jobs, snakemake

pytestmark = pytest.mark.integration
SMOKE = ROOT / "tests" / "configs" / "smoke.yaml"
# CI runs tests/configs/smoke.yaml on four of its seven tasks; tests/workflow/test_real_small.py runs the other
# three through the workflow on a real model, so every real task file passes through snakemake in CI while
# each job's start-up (~6 s of imports on 2 cores) is paid about half as often.
TASKS = ["gsm8k", "triviaqa", "mmlu", "arc_challenge"]
# The fixtures' test rows: triviaqa repeats one question as its validation split does (web and
# wikipedia files).
TEST_ROWS = {"gsm8k": 10, "triviaqa": 11, "mmlu": 10, "arc_challenge": 10}
CLOSED = ["mmlu", "arc_challenge"]
# What a source distribution holds (setup.py copies the workflow's files into the package).
SOURCE = ("pyproject.toml", "setup.py", "MANIFEST.in", "README.md", "Snakefile", "workflow", "config", "envs")
# The flags laid over the config file; the test workers already fill the cores (smoke.yaml: one thread a job).
FLAGS = ["--tasks", ",".join(TASKS), "--mirror", str(ROOT / "tests" / "fixtures"), "--out", "ranking", "--cores", "2"]
# The random models never write gsm8k's or triviaqa's stop strings, so the harness's reading of each
# response went on to 256 tokens: half of the run's generation. Here it stops at 48 (--task-dir, a copy
# of the shipped task files, which the wheel's own are checked to equal); the harness's reading itself is
# compared with lm-evaluation-harness in tests/unit/engine/test_real_model.py.
HARNESS_TOKENS = 48


@dataclass(frozen=True)
class SmokeRun:
    folder: Path  # where the user ran `softeval run`
    env: dict[str, str]  # the installed package first on the path
    flags: list[str]  # FLAGS and the task folder
    first: subprocess.CompletedProcess[str]

    @property
    def results(self) -> Path:
        return self.folder / "ranking" / "results"


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> dict[str, str]:
    """softeval installed as a wheel would be, into a folder of its own put first on the path."""
    source = tmp_path_factory.mktemp("source")
    for name in SOURCE:
        if (ROOT / name).is_dir():
            ignore = shutil.ignore_patterns("__pycache__", "*.egg-info", "build")
            shutil.copytree(ROOT / name, source / name, ignore=ignore)
        else:
            shutil.copy2(ROOT / name, source / name)
    site = tmp_path_factory.mktemp("site")
    pip = [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation"]
    subprocess.run([*pip, "--target", str(site), str(source)], check=True, timeout=300)
    return {**os.environ, "PYTHONPATH": str(site), "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}


def softeval(env: dict[str, str], cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "softeval", *args]
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=1200)


@pytest.fixture(scope="module")
def smoke(installed, tmp_path_factory) -> SmokeRun:
    shipped = yaml.safe_load(SMOKE.read_text())["tasks"]
    assert set(TASKS) < set(shipped) and len(shipped) == 7  # --tasks picks four of the config's seven
    folder = tmp_path_factory.mktemp("user")
    tasks = tasks_with_short_harness_readings(folder / "tasks", ["gsm8k", "triviaqa"], HARNESS_TOKENS)
    flags = [*FLAGS, "--task-dir", str(tasks)]
    first = softeval(installed, folder, "run", "--configfile", str(SMOKE), *flags)
    assert first.returncode == 0, first.stderr[-3000:]
    return SmokeRun(folder, installed, flags, first)


@pytest.fixture(scope="module")
def smoke_run(smoke) -> Path:
    return smoke.results


def jobs_run(log: Path) -> list[tuple[str, str]]:
    """(rule, wildcards) of every job a run's Snakemake output shows starting."""
    jobs, rule = [], None
    for line in log.read_text().splitlines():
        if match := re.match(r"^(?:local)?rule (\w+):", line):
            rule = match[1]
            jobs.append((rule, ""))
        elif rule and (match := re.match(r"^\s+wildcards: (.*)$", line)):
            jobs[-1] = (rule, match[1])
    return jobs


def test_the_installed_package_runs_from_an_empty_folder(smoke):
    probe = "import json, softeval.shipped as s; print(json.dumps([s.__file__, str(s.workflow_root())]))"
    found = subprocess.run(
        [sys.executable, "-c", probe], cwd=smoke.folder, env=smoke.env, capture_output=True, text=True, check=True
    )
    where = json.loads(found.stdout)
    assert not where[0].startswith(str(ROOT)) and where[1].endswith("softeval/_workflow"), where
    shipped = sorted((Path(where[1]) / "config" / "tasks").glob("*.yaml"))  # what --task-dir replaced
    assert [p.name for p in shipped] == sorted(p.name for p in (ROOT / "config" / "tasks").glob("*.yaml"))
    assert all(p.read_bytes() == (ROOT / "config" / "tasks" / p.name).read_bytes() for p in shipped)
    assert "rand-a" in smoke.first.stdout and "rand-b" in smoke.first.stdout  # the leaderboard, printed
    assert re.search(r"^\d+/\d+ jobs, ", smoke.first.stderr, re.M)  # the status line
    config = yaml.safe_load((smoke.folder / "ranking" / "config.yaml").read_text())
    assert config["tasks"] == TASKS and config["data"]["mirror"] == str(ROOT / "tests" / "fixtures")
    assert Path(config["task_dir"]).resolve() == Path(smoke.flags[smoke.flags.index("--task-dir") + 1]).resolve()


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


def test_a_rerun_has_nothing_to_do(smoke):
    again = softeval(smoke.env, smoke.folder, "run", "--configfile", str(SMOKE), *smoke.flags, "--", "-n")
    assert again.returncode == 0, again.stderr[-3000:]
    assert "Nothing to be done" in (smoke.folder / "ranking" / "logs" / "softeval-run.log").read_text()


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


def test_adding_a_model_runs_only_its_jobs(smoke, tmp_path):
    """Last in the module (it changes the run): a third model, base only, as a checkpoint with no
    post-trained version is given; its jobs and the report's run, no other model's file changes."""
    config = yaml.safe_load(SMOKE.read_text())
    third = {**config["models"][0], "name": "rand-c", "description": "random weights, seed 3"}
    config["models"].append({**third, "random": {**third["random"], "seed": 3}, "post": False})
    (tmp_path / "three.yaml").write_text(yaml.safe_dump(config))
    out = smoke.folder / "ranking"
    evidence = out / "results" / "scores" / "rand-a" / "base" / "triviaqa" / "zero_shot.jsonl"
    stamp = evidence.stat().st_mtime_ns

    three = str(tmp_path / "three.yaml")
    added = softeval(smoke.env, smoke.folder, "run", "--configfile", three, *smoke.flags, "--tensorboard", "tb")
    assert added.returncode == 0, added.stderr[-3000:]
    ran = jobs_run(out / "logs" / "softeval-run.log")
    per_model = [(rule, w) for rule, w in ran if "model=" in w]
    assert per_model and all("model=rand-c" in w for _, w in per_model), per_model
    shared = {rule for rule, w in ran if "model=" not in w}
    report = {"aggregate", "tables", "figures", "claims", "calibration", "export_lm_eval", "timings", "all"}
    assert shared <= report, shared
    assert evidence.stat().st_mtime_ns == stamp
    assert not (out / "results" / "generations" / "rand-c" / "post").exists()  # base only: no post role
    board = pd.read_csv(out / "results" / "tables" / "leaderboard.csv")
    assert sorted(set(board["model"])) == ["rand-a", "rand-b", "rand-c"]
    # the lm-evaluation-harness files, one per model and role (rand-c has no post role)
    lm_eval = sorted(p.name for p in (out / "results" / "lm_eval").iterdir())
    assert lm_eval == [f"results_{m}{r}.json" for m in ("rand-a", "rand-b") for r in ("", ".post")] + [
        "results_rand-c.json"
    ]
    harness = json.loads((out / "results" / "lm_eval" / "results_rand-c.json").read_text())
    assert {"results", "configs", "versions", "n-samples", "config"} <= set(harness)
    assert harness["n-samples"]["mmlu"]["effective"] == TEST_ROWS["mmlu"]
    # TensorBoard, read back: the leaderboard's strict accuracy of each base model
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(str(smoke.folder / "tb" / "rand-c" / "base")).Reload()
    scalars = {tag: events.Scalars(tag)[-1].value for tag in events.Tags()["scalars"]}
    rand_c = board[(board["model"] == "rand-c") & (board["task"] == "mmlu")].iloc[0]
    assert scalars["leaderboard/mmlu/strict"] == pytest.approx(rand_c["strict"], abs=1e-4)
