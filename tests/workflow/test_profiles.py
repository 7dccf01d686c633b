"""The execution profiles: every rule they name exists, and on SLURM every GPU job goes to the
GPU partition (a profile keyed by a renamed rule silently sends it to the default partition)."""

from __future__ import annotations

import re

import pytest
import yaml

from softeval.plan_cost import plan_cost
from tests.conftest import ROOT
from tests.unit.test_plan_cost import paper_config
from tests.workflow.test_workflow import snakemake

PROFILES = sorted((ROOT / "workflow" / "profiles").glob("*/config.yaml"))
GPU_RULES = {"tune", "evaluate", "evaluate_closed", "evaluate_soft_prompt", "evaluate_soft_prompt_closed"}


def workflow_rules() -> set[str]:
    """Every rule the workflow can define (`rule x:` and `use rule y as x`), under any config."""
    names: set[str] = set()
    for path in [ROOT / "Snakefile", *sorted((ROOT / "workflow" / "rules").glob("*.smk"))]:
        text = path.read_text()
        names |= set(re.findall(r"^\s*rule (\w+):", text, re.M))
        names |= set(re.findall(r"^\s*use rule \w+ as (\w+)", text, re.M))
    return names


def planned_resources(stdout: str) -> list[tuple[str, dict[str, str]]]:
    """(rule, resources) of every job of a dry run."""
    jobs = []
    for block in stdout.split("\n\n"):
        rule = re.search(r"^(?:local)?rule (\w+):", block, re.M)
        line = re.search(r"^\s*resources: (.*)$", block, re.M)
        if rule and line:
            pairs = (item.split("=", 1) for item in line[1].split(", "))
            jobs.append((rule[1], {k: v for k, v in pairs}))
    return jobs


def test_the_rule_list_is_read_from_the_workflow():
    rules = workflow_rules()
    assert GPU_RULES | {"judge", "prepare_task", "pretrain", "aggregate", "all"} <= rules
    assert "generate" not in rules and "loglik_soft_prompt" not in rules  # the names the old profile used


@pytest.mark.parametrize("profile", PROFILES, ids=[p.parent.name for p in PROFILES])
def test_every_rule_a_profile_names_exists(profile):
    settings = yaml.safe_load(profile.read_text())
    named = set(settings.get("set-resources", {})) | set(settings.get("set-threads", {}))
    assert named <= workflow_rules(), f"{profile}: no such rule {sorted(named - workflow_rules())}"


def test_the_slurm_profile_sends_every_gpu_job_to_the_gpu_partition(tmp_path):
    pytest.importorskip("snakemake_executor_plugin_slurm")
    profile = ROOT / "workflow" / "profiles" / "slurm"
    result = snakemake(tmp_path, "-n", "--profile", str(profile), configfile=ROOT / "config" / "paper.yaml")
    assert result.returncode == 0, result.stderr[-2000:]
    jobs = planned_resources(result.stdout)
    model_jobs = [(rule, res) for rule, res in jobs if rule in GPU_RULES]
    assert len(model_jobs) == 7 * 2 * (7 * 2 + 1)  # evaluate + evaluate_soft_prompt per task, one tune
    assert "210 GPU jobs" in " ".join(plan_cost(paper_config(), ROOT / "config" / "tasks").notes)  # plan-cost agrees
    assert {rule for rule, _ in model_jobs} == GPU_RULES
    for rule, res in model_jobs:
        assert res.get("slurm_partition") == "gpu" and res.get("gpu") == "1", (rule, res)
        assert res["mem_mb"] == "64000" and res["runtime"] == "360"
    for rule, res in jobs:  # no job asks for a GPU on the CPU partition, and no CPU job takes a GPU node
        wants_gpu = int(res.get("gpu", "0")) > 0
        assert (res.get("slurm_partition") == "gpu") == wants_gpu, (rule, res)
    assert "slurm_extra" not in result.stdout
