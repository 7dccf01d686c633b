"""Integration: the workflow through `snakemake` on a tiny config in a temporary folder."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml
from filelock import FileLock
from safetensors.torch import load_file, save_file
from transformers import AutoModelForCausalLM, AutoTokenizer

from tests.conftest import ROOT
from tests.kill import differing, results_digest, run_until

pytestmark = pytest.mark.integration
TINY = ROOT / "tests" / "configs" / "tiny.yaml"


def snakemake_command(workdir: Path, *args: str, configfile: Path = TINY) -> tuple[list[str], dict[str, str]]:
    """Run in `workdir`, with its own Snakefile when it is a checkout, else the repository's;
    `configfile` alone, not laid over a checkout's config/config.yaml."""
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    snakefile = workdir / "Snakefile" if (workdir / "Snakefile").exists() else ROOT / "Snakefile"
    command = [sys.executable, "-m", "snakemake", "-s", str(snakefile), "-d", str(workdir)]
    return [*command, "--configfile", str(configfile), "--replace-workflow-config", *args], env


def snakemake(workdir: Path, *args: str, configfile: Path = TINY) -> subprocess.CompletedProcess[str]:
    command, env = snakemake_command(workdir, *args, configfile=configfile)
    return subprocess.run(command, capture_output=True, text=True, env=env, timeout=900)


def planned_jobs(output: str) -> dict[str, int]:
    """Job counts from the 'Job stats' table of a dry run."""
    table = output.split("Job stats:")[1].split("total")[0]
    return {m[1]: int(m[2]) for m in re.finditer(r"^(\w+)\s+(\d+)$", table, re.M)}


def copy_checkout(dest: Path) -> Path:
    """The workflow's files as a user's checkout holds them, to run from inside it."""
    dest.mkdir(parents=True, exist_ok=True)
    for name in ("Snakefile", "workflow", "config", "envs"):
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, dest / name, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
        else:
            shutil.copy2(ROOT / name, dest / name)
    return dest


# What an uninterrupted run of the tiny config made, file by file (taken before any test changes it).
REFERENCE: dict[str, str] = {}


def tiny_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A checkout whose config/config.yaml is tests/configs/tiny.yaml, run to the end: made once
    per test session, every pytest-xdist worker included (a file lock; the folder is shared), and
    never changed afterwards. A module that changes its run works on a copy (`copy_run`)."""
    base = tmp_path_factory.getbasetemp()
    root = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    run = root / "tiny-run"
    with FileLock(str(root / "tiny-run.lock")):
        if not (root / "tiny-run.finished").exists():
            shutil.rmtree(run, ignore_errors=True)
            copy_checkout(run)
            shutil.copy2(TINY, run / "config" / "config.yaml")
            result = snakemake(run, "--cores", "2")
            assert result.returncode == 0, result.stderr[-3000:]
            (root / "tiny-run.finished").write_text("")
    return run


def copy_run(run: Path, dest: Path) -> Path:
    """A finished run copied whole (Snakemake's records in .snakemake/ too, so nothing reruns)."""
    shutil.copytree(run, dest, symlinks=True)
    return dest


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory):
    workdir = copy_run(tiny_run(tmp_path_factory), tmp_path_factory.mktemp("run") / "softeval")
    REFERENCE.update(results_digest(workdir / "results"))
    return workdir


def test_no_result_file_has_another_mode_than_the_umask_gives(finished_run):
    mask = os.umask(0o022)
    os.umask(mask)
    wrong = {
        str(p.relative_to(finished_run)): oct(stat.S_IMODE(p.stat().st_mode))
        for p in (finished_run / "results").rglob("*")
        if p.is_file() and stat.S_IMODE(p.stat().st_mode) != 0o666 & ~mask
    }
    assert not wrong


def test_zoo_report_numbers(finished_run):
    table = pd.read_csv(finished_run / "results" / "tables" / "zoo.csv")
    assert sorted(zip(table["model"], table["role"], strict=True)) == [
        ("atlas", "base"),
        ("atlas", "post"),
        ("pocket", "base"),
        ("pocket", "post"),
    ]
    config = yaml.safe_load(TINY.read_text())
    for model in config["models"]:
        rows = table[table["model"] == model["name"]]
        assert (rows["coverage"] == model["zoo"]["coverage"]).all()
        assert (rows["format_exposure"] == model["zoo"]["format_exposure"]).all()
        for role, row in rows.set_index("role").iterrows():
            probe = json.loads((finished_run / "results" / "probes" / model["name"] / f"{role}.json").read_text())
            assert row["knowledge"] == pytest.approx(probe["knowledge_mean"], abs=1e-4)
            assert row["zero_shot_format_world_numeric"] == pytest.approx(
                probe["zero_shot_format"]["world_numeric"], abs=1e-4
            )
    numeric = table.drop(columns=["model", "role", "size", "rank_knowledge", "rank_zero_shot"])
    assert ((numeric >= 0) & (numeric <= 1)).all().all()
    for _, rows in table.groupby("role"):
        assert sorted(rows["rank_knowledge"]) == sorted(rows["rank_zero_shot"]) == [1, 2]
        best = rows.sort_values("rank_knowledge").iloc[0]
        assert best["knowledge"] == rows["knowledge"].max()
    assert (finished_run / "results" / "tables" / "zoo.md").read_text().count("\n") == 6


def test_models_are_standard_hugging_face_directories(finished_run):
    for model in ("atlas", "pocket"):
        for role in ("base", "post"):
            path = finished_run / "results" / "zoo" / model / role
            tokenizer = AutoTokenizer.from_pretrained(path)
            lm = AutoModelForCausalLM.from_pretrained(path)
            ids = tokenizer("The capital of", return_tensors="pt")["input_ids"]
            assert lm(input_ids=ids).logits.shape == (1, ids.shape[1], len(tokenizer))


def test_examples_behind_the_report_are_kept(finished_run):
    examples = finished_run / "results" / "probes" / "atlas" / "base.jsonl"
    rows = [json.loads(line) for line in examples.read_text().splitlines()]
    assert {r["probe"] for r in rows} == {"cloze", "zero_shot"}
    assert all("prompt" in r and "response" in r for r in rows)


def test_rerun_does_nothing(finished_run):
    result = snakemake(finished_run, "-n", "--cores", "1")
    assert result.returncode == 0
    assert "Nothing to be done" in result.stdout + result.stderr


# Where the kill test kills the remaking of pocket's half of the tiny run: the moment a new file
# matching the pattern appears (and still exists once the run is stopped: see tests/kill.py).
KILL_POINTS = [
    "zoo/pocket/base/model.safetensors",  # pocket's base model is written, its twin is not
    "softprompts/pocket/*/*/prompt.safetensors",  # a prompt is tuned, the job tunes the next task's
    "generations/pocket/**/.*.parts/00000.jsonl",  # a generation job has written its first chunk
    "scores/pocket/*/*/*.jsonl",  # the first verdicts are written
]


def remove_pocket(results: Path) -> list[Path]:
    """Delete everything pocket's jobs made (its zoo models, probes, prompts, generations, option
    scores, verdicts and benchmark records) and the whole report (tables, figures, harness files),
    leaving the world, the tasks' data, the tokenizer and atlas's files; the paths removed."""
    removed = [p for p in results.rglob("*") if "pocket" in p.name and not any("pocket" in q.name for q in p.parents)]
    removed += [results / name for name in ("tables", "figures", "lm_eval")]
    for path in removed:
        shutil.rmtree(path) if path.is_dir() else path.unlink()
    return removed


def test_killed_runs_resume_to_the_uninterrupted_results(finished_run, tmp_path_factory, tmp_path):
    """A copy of the finished tiny run with pocket's half and the report deleted is remade, and
    SIGKILLed as a whole process tree at four points (a zoo model written, a prompt tuned, a
    generation's first chunk, the first verdicts) and once during a forced rerun of judging; after
    each, it resumes as docs/troubleshooting.md says (unlock, then --rerun-incomplete). Every file
    under results/ is then what the uninterrupted run made, timing fields aside. (Atlas's jobs are
    the same code as pocket's: remaking half of the run tests the resume at every stage at half
    the cost of a second whole run.)"""
    workdir = copy_run(tiny_run(tmp_path_factory), tmp_path / "killed")
    results = workdir / "results"
    removed = remove_pocket(results)
    assert len(removed) >= 15 and not (results / "zoo" / "pocket").exists()
    assert differing(results_digest(results), REFERENCE)  # the half to remake is gone
    attempts: list[Path] = []

    def resume(*extra: str, trigger=None) -> bool:
        assert snakemake(workdir, "--unlock").returncode == 0
        command, env = snakemake_command(workdir, "--cores", "2", "--rerun-incomplete", *extra)
        attempts.append(tmp_path / f"attempt{len(attempts)}.log")
        # a chunk file lives ~5-50 ms before its job writes the whole file: look every 10 ms
        return run_until(command, env, trigger or (lambda: False), attempts[-1], poll=0.01)

    def appears(pattern: str):
        before = set(results.glob(pattern))
        return lambda: any(p not in before for p in results.glob(pattern))

    killed = []
    for pattern in KILL_POINTS:
        killed.append(resume(trigger=appears(pattern)))
        assert list(results.glob(pattern)), pattern  # what the kill caught was left behind
    assert killed == [True] * len(KILL_POINTS)  # each kill landed before the run ended
    first = attempts[0].read_text()  # the zoo is remade for pocket only
    assert "rule pretrain:" in first and "model=pocket" in first and "model=atlas" not in first
    assert not resume()
    assert differing(results_digest(results), REFERENCE) == []

    verdicts = "scores/**/*.jsonl"
    total = len(list(results.glob(verdicts)))
    assert resume("--forcerun", "judge", trigger=lambda: len(list(results.glob(verdicts))) < total)
    assert len(list(results.glob(verdicts))) < total  # the forced job had removed its old outputs
    assert not resume()
    assert differing(results_digest(results), REFERENCE) == []


def test_new_weights_in_a_local_model_directory_rerun_that_model_only(finished_run, tmp_path):
    """Two checkpoints given as local directories (the tiny zoo's, copied): rewriting one role's
    weights file plans exactly its jobs and what follows; provenance names the weights by hash."""
    models = tmp_path / "models"
    config = {**yaml.safe_load(TINY.read_text()), "tasks": ["world_numeric"], "models": []}
    config["evaluation"] = {**config["evaluation"], "methods": ["zero_shot"]}
    # one thread a job (a checkpoint's jobs default to 4, capped at --cores): the test workers fill the cores
    config["evaluation"]["resources"] = {"gpu": 0, "mem_mb": 2000, "runtime": 30, "cpus": 1}
    for name in ("atlas", "pocket"):
        entry: dict = {"name": name}
        for role in ("base", "post"):
            shutil.copytree(finished_run / "results" / "zoo" / name / role, models / f"{name}-{role}")
            entry[role] = {"id": str(models / f"{name}-{role}"), "chat_template": False}
        config["models"].append(entry)
    (tmp_path / "local.yaml").write_text(yaml.safe_dump(config))
    workdir = tmp_path / "run"
    result = snakemake(workdir, "--cores", "2", configfile=tmp_path / "local.yaml")
    assert result.returncode == 0, result.stderr[-3000:]

    weights = models / "atlas-base" / "model.safetensors"
    meta = json.loads((workdir / "results/generations/atlas/base/world_numeric/zero_shot.meta.json").read_text())
    assert meta["params"]["revision"] == f"sha256:{hashlib.sha256(weights.read_bytes()).hexdigest()[:16]}"

    tensors = load_file(weights)
    first = sorted(tensors)[0]
    tensors[first] = tensors[first] + 0.01  # new weights (same bytes would be no change to Snakemake)
    save_file(tensors, weights, metadata={"format": "pt"})
    plan = snakemake(workdir, "-n", "--cores", "1", configfile=tmp_path / "local.yaml")
    assert plan.returncode == 0, plan.stderr[-2000:]
    assert planned_jobs(plan.stdout) == {
        "evaluate": 1,
        "judge": 1,
        "aggregate": 1,
        "export_lm_eval": 1,
        "tables": 1,
        "figures": 1,
        "claims": 1,
        "calibration": 1,
        "timings": 1,
        "all": 1,
    }
    assert "model=atlas, role=base" in plan.stdout and "role=post" not in plan.stdout


def test_a_moved_checkout_reruns_nothing(finished_run, tmp_path):
    """Recorded inputs are relative to the checkout, so a copy elsewhere is as finished."""
    moved = tmp_path / "moved"
    shutil.copytree(finished_run, moved, symlinks=True)
    result = snakemake(moved, "-n", "--cores", "1")
    assert result.returncode == 0, result.stderr[-2000:]
    assert "Nothing to be done" in result.stdout + result.stderr, result.stdout[-2000:]


def test_adding_a_model_plans_only_its_jobs(finished_run, tmp_path):
    config = yaml.safe_load(TINY.read_text())
    config["models"].append({"name": "gamma", "zoo": {"coverage": 0.7, "format_exposure": 0.2, "size": "mini"}})
    (tmp_path / "more.yaml").write_text(yaml.safe_dump(config))
    result = snakemake(finished_run, "-n", "--cores", "1", configfile=tmp_path / "more.yaml")
    assert result.returncode == 0, result.stderr[-2000:]
    jobs = planned_jobs(result.stdout)
    roles, tasks = 2, len(config["tasks"])
    assert jobs == {
        "pretrain": 1,
        "posttrain": 1,
        "probe_zoo_model": 1,  # both roles in one job
        "tune": roles,  # every task's prompt in one job per role
        "evaluate": roles,  # zero-shot and few-shot on every task in one job per role
        "evaluate_soft_prompt": roles,  # every snapshot step of every task in one job per role
        "judge": roles * tasks,
        "zoo_report": 1,
        "aggregate": 1,
        "export_lm_eval": 1,
        "tables": 1,
        "figures": 1,
        "claims": 1,
        "calibration": 1,
        "timings": 1,
        "all": 1,
    }
    assert "model=gamma" in result.stdout and "model=atlas" not in result.stdout


def test_adding_a_task_reruns_each_models_tune_and_evaluation_jobs_once(finished_run, tmp_path):
    """What README.md says adding a (non-world) task reruns: its data, one tune and two evaluation
    jobs per model x role (each covers every task), every unit's judging, and the report."""
    config = yaml.safe_load(TINY.read_text())
    config["tasks"].append("arc_challenge")
    config["data"] = {"source": "mirror", "mirror": str(ROOT / "tests" / "fixtures")}
    (tmp_path / "more.yaml").write_text(yaml.safe_dump(config))
    result = snakemake(finished_run, "-n", "--cores", "1", configfile=tmp_path / "more.yaml")
    assert result.returncode == 0, result.stderr[-2000:]
    pairs = 2 * 2  # models x roles
    assert planned_jobs(result.stdout) == {
        "prepare_task": 1,
        "tune": pairs,
        "evaluate": pairs,
        "evaluate_soft_prompt": pairs,
        "judge": pairs * len(config["tasks"]),
        "aggregate": 1,
        "export_lm_eval": 1,
        "tables": 1,
        "figures": 1,
        "claims": 1,
        "calibration": 1,
        "timings": 1,
        "all": 1,
    }


def test_evaluation_artifacts(finished_run):
    """Soft prompts, generations, option scores and verdicts for every unit; the table matches them."""
    results = finished_run / "results"
    config = yaml.safe_load(TINY.read_text())
    steps = [0, 80]
    table = pd.read_csv(results / "tables" / "scores.csv", dtype={"step": "Int64"})
    assert len(table) == 2 * 2 * len(config["tasks"]) * (2 + len(steps))
    for model in ("atlas", "pocket"):
        for role in ("base", "post"):
            for task in config["tasks"]:
                unit = f"{model}/{role}/{task}"
                prompts = results / "softprompts" / unit
                assert {p.name for p in prompts.iterdir()} >= {
                    "prompt.safetensors",
                    "curve.csv",
                    "meta.json",
                    "peft",
                    *(f"step{s}.safetensors" for s in steps),
                }
                assert len((prompts / "curve.csv").read_text().splitlines()) == 1 + 80
                test_ids = [
                    json.loads(x)["id"] for x in (results / "data" / task / "test.jsonl").read_text().splitlines()
                ]
                for name in ["zero_shot", "few_shot", *(f"soft_prompt/step{s}" for s in steps)]:
                    generations = [json.loads(x) for x in (results / "generations" / unit / f"{name}.jsonl").open()]
                    scores = [json.loads(x) for x in (results / "scores" / unit / f"{name}.jsonl").open()]
                    assert [g["id"] for g in generations] == [s["id"] for s in scores] == test_ids
                    assert [g["response"] for g in generations] == [s["response"] for s in scores]
                    method, _, step = name.partition("/step")
                    row = table[
                        (table["model"] == model)
                        & (table["role"] == role)
                        & (table["task"] == task)
                        & (table["method"] == method)
                        & (table["step"].astype("string").fillna("") == step)
                    ]
                    assert len(row) == 1 and int(row["n"].iloc[0]) == len(test_ids)
                    for metric in ("knowledge", "format", "strict"):
                        expected = sum(s[metric] for s in scores) / len(scores)
                        assert row[metric].iloc[0] == pytest.approx(expected, abs=1e-4)
                    if task == "world_choice":
                        options = [json.loads(x) for x in (results / "loglik" / unit / f"{name}.jsonl").open()]
                        assert [s["knowledge"] for s in scores] == [o["chosen"] == o["label"] for o in options]


def test_publication_tables_figures_and_claims(finished_run):
    tables, figures = finished_run / "results" / "tables", finished_run / "results" / "figures"
    for name in ("swap_distance", "score_gap", "knowledge_format", "consensus", "unit_checks", "claims"):
        for ext in ("csv", "md", "tex"):
            assert (tables / f"{name}.{ext}").stat().st_size > 0, f"{name}.{ext}"
    for name in ("tuning_curve", "method_scores", "swap_distance", "score_gap"):
        assert (figures / f"{name}.png").stat().st_size > 0 and (figures / f"{name}.pdf").stat().st_size > 0
    swap = pd.read_csv(tables / "swap_distance.csv")
    assert set(swap["method"]) == {"zero_shot", "few_shot", "soft_prompt"}
    assert ((swap["distance_min"] <= swap["distance"]) & (swap["distance"] <= swap["distance_max"])).all()
    per_task = swap[swap["task"] != "all tasks"]
    assert len(per_task) == 4 * 3 and (per_task["distance_max"] <= 1).all()  # two models: one pair
    agreement = pd.read_csv(tables / "judge_validation.csv").set_index("label")
    assert (agreement["accuracy"] >= 0.95).all() and (agreement["n"] >= 150).all()
    claims = pd.read_csv(tables / "claims.csv")
    assert sorted(set(claims["claim"])) == [1, 2, 3, 4, 5]
    assert set(claims["verdict"]) <= {"holds", "not shown", "refuted", "not applicable"}  # caveats: own column
    # a closed task (world_choice) and an open one (world_numeric): claim 1 per kind, with the choice spread
    parts = set(claims["part"])
    assert {"closed tasks: knowledge flat", "open tasks: knowledge flat"} <= parts
    flat = claims[claims["part"] == "closed tasks: knowledge flat"]["evidence"].iloc[0]
    assert "choices collapsed onto one option" in flat
    # the claims re-checked on the run's controls: one row per declared expectation, every control run
    calibration = pd.read_csv(tables / "calibration.csv")
    assert len(calibration) == 15 and set(calibration["claim"]) == {1, 2, 3, 4, 5}
    assert set(calibration["agrees"]) <= {"yes", "no", "cannot tell"} and (calibration["agrees"] != "cannot tell").all()
    untuned = calibration[(calibration["control"] == "untuned_prompt") & (calibration["claim"] == 1)]
    assert untuned["obtained"].iloc[0] in {"not shown", "refuted"}  # tuning undone: format cannot climb
    assert "testable expectations met" in (tables / "calibration.md").read_text()
    checks = pd.read_csv(tables / "unit_checks.csv")
    assert {"choice_entropy_step80", "choice_collapsed", "vs_zero_shot", "p_knowledge_change"} <= set(checks.columns)
    assert pd.read_parquet(tables / "scores.parquet").shape[0] == len(pd.read_csv(tables / "scores.csv"))


def test_the_report_shows_the_timings_table(finished_run, tmp_path):
    """Every job wrote its benchmark file; the timings table reads them all and is in the HTML report."""
    results = finished_run / "results"
    benchmarks = sorted(results.glob("benchmarks/**/*.tsv"))
    table = pd.read_csv(results / "tables" / "timings.csv")
    assert table["jobs"].sum() == len(benchmarks) and set(table["rule"]) >= {"pretrain", "tune", "judge"}
    assert set(table["rule"]) >= {"evaluate", "evaluate_soft_prompt"}
    assert (table["total_s"] >= table["max_s"]).all() and table["critical_path_s"].sum() > 0
    report = tmp_path / "report.html"
    result = snakemake(finished_run, "--report", str(report))
    assert result.returncode == 0, result.stderr[-2000:]
    html = report.read_text(encoding="utf-8", errors="replace")
    # the leaderboard in a category of its own, named first on the report's front page
    assert "timings.csv" in html and "leaderboard.csv" in html and "Start with" in html


def test_review_shows_the_examples_behind_a_cell(finished_run):
    command = [sys.executable, "-m", "softeval", "review", "--results", str(finished_run / "results")]
    listing = subprocess.run([*command, "--model", "atlas"], capture_output=True, text=True, check=True)
    assert "world_choice" in listing.stdout and "soft_prompt" in listing.stdout
    cell = [*command, "--model", "pocket", "--task", "world_numeric", "--method", "few_shot", "--limit", "2"]
    shown = subprocess.run(cell, capture_output=True, text=True, check=True)
    assert shown.stdout.count("--- world_numeric-test-") == 2 and "gold     |" in shown.stdout


def test_switching_the_judge_reruns_only_judging_and_what_follows(finished_run, tmp_path):
    config = yaml.safe_load(TINY.read_text())
    config["evaluation"]["judge"] = {"name": "hf", "model": "results/zoo/atlas/base"}
    (tmp_path / "judge.yaml").write_text(yaml.safe_dump(config))
    result = snakemake(finished_run, "-n", "--cores", "1", configfile=tmp_path / "judge.yaml")
    assert result.returncode == 0, result.stderr[-2000:]
    assert planned_jobs(result.stdout) == {
        "judge": 2 * 2 * len(config["tasks"]),
        "judge_validation": 1,
        "aggregate": 1,
        "export_lm_eval": 1,
        "tables": 1,
        "figures": 1,
        "claims": 1,
        "calibration": 1,
        "timings": 1,
        "all": 1,
    }
    # And it runs: the zoo's own atlas model judges behind the rule cascade, one unit's judge job and
    # the judge's validation (the other 15 judge jobs are the same command on other files)
    unit = "results/scores/pocket/base/world_numeric/few_shot.jsonl"
    targets = (unit, "results/tables/judge_validation.csv")
    result = snakemake(finished_run, "--cores", "2", *targets, configfile=tmp_path / "judge.yaml")
    assert result.returncode == 0, result.stderr[-3000:]
    assert planned_jobs(result.stdout + result.stderr) == {"judge": 1, "judge_validation": 1}
    scores = [json.loads(x) for x in (finished_run / unit).open()]
    assert {s["judge"] for s in scores} <= {"rule", "hf:results/zoo/atlas/base"} and any(
        s["judge"] == "hf:results/zoo/atlas/base" for s in scores
    )
    agreement = pd.read_csv(finished_run / "results" / "tables" / "judge_validation.csv")
    assert set(agreement["judge"]) == {"cascade(hf:results/zoo/atlas/base)"} and (agreement["n"] >= 150).all()
    assert sum(p.stat().st_size for p in (finished_run / "results" / "judge_cache").glob("*.jsonl")) > 0


def test_the_analysis_replays_from_the_outputs_and_a_broken_judge_fails(finished_run, tmp_path):
    """verify's deterministic layer (softeval.analysis.replay): the run's outputs packed, the
    analysis rerun on them in a scratch checkout with no model job allowed, every scores file and
    table the same bytes; a judge whose format check says yes to everything (world_phrase's
    pattern) changes that task's scores and the tables, and the comparison names them."""
    from softeval.analysis import replay

    archive = tmp_path / "outputs.tar.gz"
    replay.pack(finished_run / "results", archive)
    # what the uninterrupted run computed (REFERENCE: taken before test_switching_the_judge rejudged a unit)
    expected = {name: REFERENCE[name] for name in replay.computed_digests(finished_run / "results")}
    # 2 models x 2 roles x 4 tasks, each 4 units (zero-shot, few-shot, steps 0 and 80); 9 tables
    assert len(expected) == 64 + 9 and "tables/claims.csv" in expected and "tables/calibration.csv" in expected
    assert replay.replay(archive, finished_run) == expected

    broken = tmp_path / "broken"
    broken.mkdir()
    for name in replay.CHECKOUT:
        source = finished_run / name
        (shutil.copytree if source.is_dir() else shutil.copy2)(source, broken / name)
    task = broken / "config" / "tasks" / "world_phrase.yaml"
    original = "pattern: '[^\\s.!?,;:]+(?: [^\\s.!?,;:]+){0,3}'"
    assert original in task.read_text()
    task.write_text(task.read_text().replace(original, "pattern: '(?s).*'"))
    rows = {item: (shown, same) for item, _, shown, same in replay.compare(expected, replay.replay(archive, broken))}
    scores = next(item for item in rows if item.startswith("scores/"))
    assert not rows[scores][1] and "world_phrase" in rows[scores][0]
    assert not rows["tables/knowledge_format.csv"][1]


def test_one_model_warns_at_planning_that_rankings_need_two(tmp_path):
    config = yaml.safe_load(TINY.read_text())
    config["models"] = config["models"][:1]
    (tmp_path / "one.yaml").write_text(yaml.safe_dump(config))
    result = snakemake(tmp_path, "-n", "--cores", "1", configfile=tmp_path / "one.yaml")
    assert result.returncode == 0, result.stderr[-2000:]
    assert "one model (atlas): its scores are computed, but rankings need at least two models" in result.stderr


def test_default_config_plans_the_full_zoo(tmp_path):
    result = snakemake(tmp_path, "-n", "--cores", "2", configfile=ROOT / "config" / "config.yaml")
    assert result.returncode == 0, result.stderr[-2000:]
    jobs = planned_jobs(result.stdout)
    n_models = len(yaml.safe_load((ROOT / "config" / "config.yaml").read_text())["models"])
    assert jobs["pretrain"] == jobs["posttrain"] == n_models
    assert jobs["probe_zoo_model"] == n_models  # both roles in one job
    assert jobs["prepare_task"] == 4 and jobs["build_world"] == jobs["train_tokenizer"] == 1
    assert jobs["judge"] == 2 * n_models * 4 and jobs["tune"] == 2 * n_models  # a tune job per model x role
    assert jobs["evaluate"] == jobs["evaluate_soft_prompt"] == 2 * n_models  # per model x role, every task
    # every job but `all` and `timings` writes a benchmark file, and timings reads each of them
    assert sum(jobs.values()) == result.stdout.count("benchmark: ") + 2


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        (lambda c: c["zoo"]["pretrain"].update(stepz=3), "unknown key 'zoo.pretrain.stepz'"),
        (lambda c: c["world"].update(n_entities="many"), "key 'world.n_entities' must be of type integer"),
        (lambda c: c["tasks"].append("gsm9k"), "key 'tasks[4]' is 'gsm9k'"),
        (lambda c: c["evaluation"]["tune"].update(snapshots=[0, 99]), "key 'evaluation.tune.snapshots' has step 99"),
    ],
)
def test_bad_config_stops_before_any_job(tmp_path, edit, expected):
    config = yaml.safe_load(TINY.read_text())
    edit(config)
    expect_one_line_error(tmp_path, config, expected, str(tmp_path / "bad.yaml"))


def test_task_file_missing_a_field_stops_before_any_job(tmp_path):
    task_dir = tmp_path / "tasks"
    shutil.copytree(ROOT / "config" / "tasks", task_dir)
    broken = yaml.safe_load((task_dir / "world_choice.yaml").read_text())
    del broken["answer"]["extract"]
    (task_dir / "world_choice.yaml").write_text(yaml.safe_dump(broken))
    config = {**yaml.safe_load(TINY.read_text()), "task_dir": str(task_dir)}
    expect_one_line_error(tmp_path, config, "missing key 'answer.extract'", str(task_dir / "world_choice.yaml"))


def expect_one_line_error(tmp_path, config, expected, names_file):
    (tmp_path / "bad.yaml").write_text(yaml.safe_dump(config))
    result = snakemake(tmp_path, "--cores", "1", configfile=tmp_path / "bad.yaml")
    assert result.returncode != 0
    lines = [line for line in result.stderr.splitlines() if expected in line]
    assert len(lines) == 1 and names_file in lines[0]
    assert "config/config.yaml" not in lines[0]  # replaced by --replace-workflow-config: not the source
    assert not (tmp_path / "results").exists()


def test_a_broken_line_in_the_judge_validation_set_stops_at_planning(tmp_path):
    checkout = copy_checkout(tmp_path / "checkout")
    validation = checkout / "config" / "judges" / "validation.jsonl"
    lines = validation.read_text().splitlines()
    validation.write_text("\n".join([*lines[:3], '{"id": "x", "task": ', *lines[3:]]) + "\n")
    result = snakemake(checkout, "-n", "--cores", "1")
    assert result.returncode != 0
    output = result.stdout + result.stderr
    errors = [line for line in output.splitlines() if "validation.jsonl:4" in line]
    assert len(errors) == 1 and "not JSON" in errors[0] and "fix the line" in errors[0], output[-2000:]
    assert "Traceback" not in output
