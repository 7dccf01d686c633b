"""Your own task file and data beside a hub task in one workflow (snakemake)."""

from __future__ import annotations

import json
import shutil

import pytest

from tests.unit.data.test_real_tasks import FIXTURES, OWN_TASK, TASK_DIR
from tests.workflow.test_workflow import snakemake


@pytest.mark.integration
def test_a_local_task_mixes_with_hub_tasks_in_one_workflow(tmp_path):
    """Your own task file and data beside a hub task (read from the mirror): planned and prepared
    by snakemake, the local files as inputs of their prepare job."""
    tasks = tmp_path / "tasks"
    (tasks / "data").mkdir(parents=True)
    rows = [{"q": "Capital of France?", "a": ["Paris", "Paris, France"]}, {"q": "Capital of Peru?", "a": ["Lima"]}]
    for split in ("train", "test"):
        (tasks / "data" / f"{split}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (tasks / "capitals.yaml").write_text(OWN_TASK.format(suffix="jsonl"))
    shutil.copy(TASK_DIR / "triviaqa.yaml", tasks / "triviaqa.yaml")
    config = tmp_path / "own.yaml"
    config.write_text(
        f"task_dir: {tasks}\ntasks: [capitals, triviaqa]\n"
        f"data: {{source: mirror, mirror: {FIXTURES}}}\nevaluation: {{test_limit: 1}}\n"
        "models:\n  - name: mine\n    random: {}\n"
    )
    work = tmp_path / "work"
    work.mkdir()
    targets = ["results/data/capitals/meta.json", "results/data/triviaqa/meta.json"]
    result = snakemake(work, "--cores", "1", *targets, configfile=config)
    assert result.returncode == 0, result.stderr[-3000:]
    capitals = [json.loads(line) for line in (work / "results/data/capitals/test.jsonl").read_text().splitlines()]
    assert len(capitals) == 1 and capitals[0]["answer"] in ("Paris", "Lima")
    assert json.loads((work / "results/data/triviaqa/meta.json").read_text())["test_total"] == 11
    (tasks / "data" / "test.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows[:1]))
    plan = snakemake(work, "-n", *targets, configfile=config)
    assert "prepare_task" in plan.stdout and "wildcards: task=capitals" in plan.stdout  # a changed file reruns
    assert "wildcards: task=triviaqa" not in plan.stdout
