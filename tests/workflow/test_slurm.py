"""A real cluster: a small config run to the end on a single-node SLURM (.ci/slurm-up) through
`--profile workflow/profiles/slurm` and the official executor plugin, equal to the local run.

The model jobs ask for a GPU (evaluation.resources.gpu: 1) as on a GPU cluster: the profile sends
them to the `gpu` partition, SLURM schedules them on its one (count-only) GPU and sets
CUDA_VISIBLE_DEVICES, and softeval's GPU-slot lock must stay out of the way; with no CUDA device
the jobs compute on the CPU, so their results must be the local run's, byte for byte (timing
records aside). CI starts the cluster; elsewhere the test is skipped when no SLURM answers.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time

import pytest
import yaml

from tests.conftest import ROOT
from tests.kill import differing, results_digest
from tests.workflow.test_workflow import copy_checkout, planned_jobs, snakemake_command

pytestmark = pytest.mark.integration
PROFILE = ROOT / "workflow" / "profiles" / "slurm"


def slurm_is_up() -> bool:
    if shutil.which("sinfo") is None:
        return False
    listing = subprocess.run(["sinfo", "-h", "-o", "%P %t"], capture_output=True, text=True, check=False)
    return listing.returncode == 0 and "gpu idle" in listing.stdout.replace("*", "")


if not slurm_is_up():
    if os.environ.get("CI"):  # CI starts the cluster: a missing one is a failure, not a skip
        pytest.fail("no single-node SLURM answers; .ci/slurm-up should have started it", pytrace=False)
    pytest.skip("no SLURM cluster here (bash .ci/slurm-up starts one, as root)", allow_module_level=True)
pytest.importorskip("snakemake_executor_plugin_slurm")


@pytest.fixture(scope="module")
def cluster_config(tmp_path_factory):
    """tests/configs/smoke.yaml on one lettered task (its evaluate jobs also score options; jobs
    over several tasks are run by other tests), one base model (a second model, or its twin, would
    only repeat the same jobs through the same scheduler), a small tokenizer, and GPU model jobs."""
    config = yaml.safe_load((ROOT / "tests" / "configs" / "smoke.yaml").read_text())
    config["tasks"] = ["mmlu"]
    config["models"] = [{**config["models"][0], "post": False}]
    config["data"]["mirror"] = str(ROOT / "tests" / "fixtures")
    for model in config["models"]:
        model["random"]["vocab_size"] = 1000
    config["evaluation"]["resources"] = {"gpu": 1, "mem_mb": 2000, "runtime": 20, "cpus": 1}
    path = tmp_path_factory.mktemp("cluster-config") / "cluster.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def user_command(workdir, *args, configfile) -> tuple[list[str], dict[str, str]]:
    """Snakemake as a user runs it: the config file laid over config/config.yaml. (The tests'
    --replace-workflow-config does not reach the jobs SLURM starts, which would then read a
    config the main process never saw.)"""
    command, env = snakemake_command(workdir, *args, configfile=configfile)
    command.remove("--replace-workflow-config")
    return command, env


def test_a_slurm_run_finishes_and_equals_the_local_run(cluster_config, tmp_path):
    """The local run goes on beside the cluster's, in a checkout of its own (paths outside the
    provenance's `run` block do not name the folder): the cluster's jobs mostly wait for the
    scheduler's status checks, so the two take little more than the cluster run alone."""
    local_dir = copy_checkout(tmp_path / "local")
    command, env = user_command(local_dir, "--cores", "2", configfile=cluster_config)
    with open(tmp_path / "local.log", "w") as local_log:
        local = subprocess.Popen(command, stdout=local_log, stderr=subprocess.STDOUT, env=env, text=True)
        try:
            done, log = cluster_run(copy_checkout(tmp_path / "cluster"), cluster_config)
        finally:
            local_code = local.wait(timeout=1500)
    assert local_code == 0, (tmp_path / "local.log").read_text()[-3000:]
    assert done.returncode == 0, log[-4000:]
    local_files = results_digest(local_dir / "results")
    submitted = re.findall(r"has been submitted with SLURM jobid (\d+)", log)
    # every job but the target rule `all` went through sbatch, the report's rules as one group job
    planned = planned_jobs(log)
    grouped = sum(planned[rule] for rule in yaml.safe_load((PROFILE / "config.yaml").read_text())["groups"])
    assert planned["all"] == 1 and grouped > 1, planned
    # all planned jobs, less `all` and the grouped ones, plus the one group job
    assert len(submitted) == sum(planned.values()) - 1 - grouped + 1, log[-2000:]
    assert "Group job report (" in log, log[-2000:]

    # the scheduler's own record: model jobs on the gpu partition with one GPU, the rest on cpu
    for rule, partition in (("tune", "gpu"), ("evaluate", "gpu"), ("judge", "cpu")):
        assert f"slurm_partition={partition}" in block_of(log, rule), rule
    # the rule judge holds no GPU (gpu=0: the profile's partition choice reads it)
    assert resources_of(log, "tune")["gpu"] == "1" and resources_of(log, "judge").get("gpu", "0") == "0"
    cluster_files = results_digest(tmp_path / "cluster" / "results")
    assert len(local_files) > 50
    assert differing(cluster_files, local_files) == []


def cluster_run(workdir, configfile) -> tuple[subprocess.CompletedProcess[str], str]:
    command, env = user_command(
        workdir,
        "--profile",
        str(PROFILE),
        "--jobs",
        "4",
        "--slurm-status-command",
        "squeue",  # no accounting database on the test cluster (sacct needs one)
        "--slurm-init-seconds-before-status-checks",
        "2",
        "--seconds-between-status-checks",
        "2",  # (10 by default) the small cluster's jobs take seconds, and each stage waits for a check
        "--latency-wait",
        "5",
        "--retries",
        "0",
        configfile=configfile,
    )
    start = time.monotonic()
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=1500)
    print(f"cluster run: {time.monotonic() - start:.0f} s")
    return done, done.stdout + done.stderr


def resources_of(log: str, rule: str) -> dict[str, str]:
    """The resources line of the first job of `rule` in Snakemake's log, as a dict."""
    found = re.search(rf"^(?:local)?rule {rule}:\n(?:    .*\n)*?    resources: (.*)$", log, re.M)
    assert found, rule
    return dict(item.split("=", 1) for item in found[1].split(", ") if "=" in item)


def block_of(log: str, rule: str) -> str:
    """The first job block of `rule` in Snakemake's log."""
    return next(b for b in log.split("\n\n") if re.search(rf"^(?:local)?rule {rule}:", b, re.M))
