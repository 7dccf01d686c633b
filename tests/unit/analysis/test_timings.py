"""The timings table: benchmark files read back, per-rule sums, the critical path."""

from __future__ import annotations

import itertools
import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from softeval.analysis.timings import (
    JobTime,
    critical_path,
    parse_path,
    read_benchmark,
    rule_rows,
    write_timings,
)
from softeval.plan import Plan
from softeval.schema import InputError
from tests.conftest import ROOT

UPSTREAM = Plan.upstream()

PATTERNS = {
    "build_world": "results/benchmarks/build_world.tsv",
    "train_tokenizer": "results/benchmarks/train_tokenizer.tsv",
    "prepare_task": "results/benchmarks/prepare_task/{task}.tsv",
    "pretrain": "results/benchmarks/pretrain/{model}.tsv",
    "posttrain": "results/benchmarks/posttrain/{model}.tsv",
    "tune": "results/benchmarks/tune/{model}/{role}.tsv",
    "evaluate": "results/benchmarks/evaluate/{model}/{role}/{task}.tsv",
    "evaluate_closed": "results/benchmarks/evaluate_closed/{model}/{role}/{task}.tsv",
    "judge": "results/benchmarks/judge/{model}/{role}/{task}.tsv",
    "aggregate": "results/benchmarks/aggregate.tsv",
}
HEADER = "s\th:m:s\tmax_rss\tmax_vms\tmax_uss\tmax_pss\tio_in\tio_out\tmean_load\tcpu_time\n"


def bench(root: Path, relative: str, seconds: float, rss: str = "100.5", cpu: str = "2.5") -> Path:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(HEADER + f"{seconds}\t0:00:01\t{rss}\t1\t1\t1\t0\t0\t50\t{cpu}\n")
    return path


def job(rule: str, seconds: float, **wildcards: str) -> JobTime:
    return JobTime(rule, wildcards, seconds, None, None)


def test_a_path_gives_its_rule_and_wildcards():
    assert parse_path("results/benchmarks/evaluate/atlas/base/world_numeric.tsv", PATTERNS) == (
        "evaluate",
        {"model": "atlas", "role": "base", "task": "world_numeric"},
    )
    assert parse_path("/x/results/benchmarks/evaluate_closed/a/post/t.tsv", PATTERNS)[0] == "evaluate_closed"
    assert parse_path("results/benchmarks/aggregate.tsv", PATTERNS) == ("aggregate", {})
    with pytest.raises(InputError, match="no rule's benchmark pattern"):
        parse_path("results/benchmarks/nothing/x.tsv", PATTERNS)


def test_the_critical_path_follows_a_models_roles():
    """posttrain (role post) follows its model's pretrain (role base); a post-role job follows
    posttrain, a base-role job pretrain only; other models' jobs are not ancestors."""
    jobs = [
        job("build_world", 1),
        job("train_tokenizer", 2),
        job("prepare_task", 1, task="t"),
        job("pretrain", 100, model="a"),
        job("pretrain", 60, model="b"),
        job("posttrain", 10, model="a"),
        job("posttrain", 10, model="b"),
        job("evaluate", 5, model="a", role="base", task="t"),
        job("evaluate", 30, model="b", role="post", task="t"),
        job("evaluate", 50, model="b", role="base", task="t"),
        job("judge", 3, model="a", role="base", task="t"),
        job("judge", 3, model="b", role="post", task="t"),
        job("judge", 3, model="b", role="base", task="t"),
        job("aggregate", 4),
    ]
    path = critical_path(jobs, UPSTREAM)
    # a's chain: 1 + 2 + 100 + 5 + 3 + 4 = 115; b post: 1 + 2 + 60 + 10 + 30 + 3 + 4 = 110; b base: 120
    assert [j.label for j in path] == [
        "build_world",
        "train_tokenizer",
        "pretrain model=b",
        "evaluate model=b role=base task=t",
        "judge model=b role=base task=t",
        "aggregate",
    ]
    assert sum(j.seconds for j in path) == 120
    for before, after in itertools.pairwise(path):
        assert before.rule in UPSTREAM[after.rule]


def test_rule_rows_sum_count_and_place_the_critical_path(tmp_path):
    files = [
        bench(tmp_path, PATTERNS["prepare_task"].format(task="t"), 2.0),
        bench(tmp_path, PATTERNS["evaluate"].format(model="a", role="base", task="t"), 10.0, rss="300"),
        bench(tmp_path, PATTERNS["evaluate"].format(model="b", role="base", task="t"), 20.0, rss="NA", cpu="NA"),
        bench(tmp_path, PATTERNS["evaluate"].format(model="c", role="base", task="t"), 40.0, rss="250"),
        bench(tmp_path, PATTERNS["judge"].format(model="c", role="base", task="t"), 1.5),
    ]
    jobs = [read_benchmark(f, PATTERNS) for f in files]
    rows = {row["rule"]: row for row in rule_rows(jobs, critical_path(jobs, UPSTREAM))}
    assert rows["evaluate"] == {
        "rule": "evaluate",
        "jobs": 3,
        "total_s": 70.0,
        "median_s": 20.0,
        "max_s": 40.0,
        "cpu_s": 5.0,  # the job that ended before a sample counts nothing
        "max_rss_mb": 300.0,
        "critical_path_jobs": 1,
        "critical_path_s": 40.0,
    }
    assert rows["judge"]["critical_path_s"] == 1.5 and rows["prepare_task"]["critical_path_jobs"] == 1
    write_timings(files, PATTERNS, UPSTREAM, tmp_path / "timings.csv", tmp_path / "timings.md")
    table = pd.read_csv(tmp_path / "timings.csv")
    assert list(table["rule"]) == ["evaluate", "prepare_task", "judge"]  # the costliest first
    text = (tmp_path / "timings.md").read_text()
    assert "5 jobs, 74 s of job time" in text and "Critical path: 3 jobs, 44 s" in text
    assert "| 2 | evaluate model=c role=base task=t | 40.0 |" in text


def test_a_corrupt_benchmark_file_is_named(tmp_path):
    broken = tmp_path / PATTERNS["aggregate"]
    broken.parent.mkdir(parents=True)
    broken.write_text("not a benchmark\n")
    with pytest.raises(InputError, match=r"aggregate\.tsv: not a Snakemake benchmark file.*delete it and rerun"):
        read_benchmark(broken, PATTERNS)


def rule_graph(configfile: Path, workdir: Path) -> dict[str, set[str]]:
    """Snakemake's own rule graph of a config: each rule's direct upstream rules."""
    command = [sys.executable, "-m", "snakemake", "-s", str(ROOT / "Snakefile"), "-d", str(workdir)]
    command += ["--configfile", str(configfile), "--replace-workflow-config", "--rulegraph"]
    dot = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    names = {m[1]: m[2] for m in re.finditer(r"^\s*(\d+)\[label = \"(\w+)\"", dot, re.M)}
    graph: dict[str, set[str]] = {name: set() for name in names.values()}
    for a, b in re.findall(r"^\s*(\d+) -> (\d+)", dot, re.M):
        graph[names[b]].add(names[a])
    return graph


def ancestors(graph: dict[str, set[str]], rule: str) -> set[str]:
    found, todo = set(), list(graph.get(rule, ()))
    while todo:
        up = todo.pop()
        if up not in found:
            found.add(up)
            todo.extend(graph.get(up, ()))
    return found


@pytest.mark.parametrize("config", ["tests/configs/tiny.yaml", "tests/configs/smoke.yaml", "config/paper.yaml"])
def test_the_declared_dependencies_are_snakemakes(tmp_path, config):
    """Every rule-graph edge is declared (directly or through a declared chain), and every
    declared upstream rule present in the run is a true ancestor, so no job gets a false parent."""
    graph = rule_graph(ROOT / config, tmp_path)
    graph.pop("all", None)
    graph.pop("timings", None)
    declared = {rule: {up for up in UPSTREAM[rule] if up in graph} for rule in graph}
    for rule, ups in graph.items():
        assert ups <= ancestors(declared, rule) | {"timings"}, (rule, ups - ancestors(declared, rule))
        assert declared[rule] <= ancestors(graph, rule), (rule, declared[rule] - ancestors(graph, rule))
