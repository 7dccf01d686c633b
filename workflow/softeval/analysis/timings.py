"""Where a run's time went: Snakemake's benchmark files as one row per rule, and the critical path.

Every rule writes a benchmark file (`benchmark:`; seconds, max RSS and CPU time of its job).
The per-rule table says which stage costs what; the critical path is the chain of dependent
jobs with the largest summed time, the least wall time the run could take on unlimited cores.
Dependencies are the rules' (softeval.plan.RULES, passed by the rule; a test checks them against
Snakemake's rule graph): a job depends on the jobs of its upstream rules whose wildcards agree
with its own.
"""

from __future__ import annotations

import csv
import re
import statistics
from dataclasses import dataclass
from graphlib import TopologicalSorter
from pathlib import Path
from typing import Any

from softeval.names import BASE, POST
from softeval.schema import InputError

# Each rule's upstream rules (softeval.plan.RULES; the timings rule passes them): a job depends on
# the jobs of its upstream rules whose wildcards agree with its own.
Upstream = dict[str, tuple[str, ...]] | dict[str, list[str]]
# Wildcards a rule's jobs have without naming them: which role of a zoo model they make.
IMPLIED = {"pretrain": {"role": BASE}, "posttrain": {"role": POST}}


@dataclass(frozen=True)
class JobTime:
    rule: str
    wildcards: dict[str, str]
    seconds: float
    max_rss_mb: float | None
    cpu_seconds: float | None

    @property
    def label(self) -> str:
        return self.rule + "".join(f" {k}={v}" for k, v in self.wildcards.items())


def _number(value: str) -> float | None:
    try:
        return float(value)
    except ValueError:
        return None  # "NA": the job ended before a sample was taken


def read_benchmark(path: Path, patterns: dict[str, str]) -> JobTime:
    """One job's record: the rule and wildcards from its path, the numbers from the file's last row
    (a rerun of the job rewrites the file)."""
    rule, wildcards = parse_path(path, patterns)
    with open(path, encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle, delimiter="\t"))
    if not rows or "s" not in rows[-1]:
        raise InputError(f"{path}: not a Snakemake benchmark file (no row with an 's' column); delete it and rerun")
    last = rows[-1]
    seconds = _number(last["s"])
    if seconds is None:
        raise InputError(f"{path}: the 's' column is {last['s']!r}, not a number; delete it and rerun")
    return JobTime(rule, wildcards, seconds, _number(last.get("max_rss", "NA")), _number(last.get("cpu_time", "NA")))


def parse_path(path: Path | str, patterns: dict[str, str]) -> tuple[str, dict[str, str]]:
    """Which rule's pattern a benchmark path matches, and its wildcards."""
    text = Path(path).as_posix()
    for rule, pattern in patterns.items():
        regex = re.escape(pattern).replace(r"\{", "{").replace(r"\}", "}")
        regex = re.sub(r"\{(\w+)\}", r"(?P<\1>[^/]+)", regex)
        match = re.search(regex + "$", text)
        if match:
            return rule, match.groupdict()
    raise InputError(f"{path}: no rule's benchmark pattern matches this path")


def _agree(parent: JobTime, child: JobTime) -> bool:
    """The parent's and the child's wildcards agree; an implied wildcard counts against a named
    one only (a posttrain job, role post, follows the pretrain job, role base, of its model)."""
    a, b = {**IMPLIED.get(parent.rule, {}), **parent.wildcards}, {**IMPLIED.get(child.rule, {}), **child.wildcards}
    shared = (set(parent.wildcards) | set(child.wildcards)) & set(a) & set(b)
    return all(a[key] == b[key] for key in shared)


def critical_path(jobs: list[JobTime], upstream: Upstream) -> list[JobTime]:
    """The chain of dependent jobs with the largest summed seconds, first job first."""
    unknown = sorted({job.rule for job in jobs} - set(upstream))
    if unknown:
        raise InputError(f"no dependencies known for rule {unknown[0]} (softeval.plan.RULES)")
    by_rule: dict[str, list[int]] = {}
    for i, job in enumerate(jobs):
        by_rule.setdefault(job.rule, []).append(i)
    best: dict[int, float] = {}
    before: dict[int, int | None] = {}
    for rule in TopologicalSorter(upstream).static_order():  # upstream rules first
        for i in by_rule.get(rule, []):
            parents = [p for up in upstream[rule] for p in by_rule.get(up, []) if _agree(jobs[p], jobs[i])]
            parent = max(parents, key=lambda p: best[p], default=None)
            before[i] = parent
            best[i] = jobs[i].seconds + (best[parent] if parent is not None else 0.0)
    if not best:
        return []
    end: int | None = max(best, key=lambda i: best[i])
    path = []
    while end is not None:
        path.append(jobs[end])
        end = before[end]
    return path[::-1]


def rule_rows(jobs: list[JobTime], path: list[JobTime]) -> list[dict[str, Any]]:
    """One row per rule, the costliest first: jobs, total/median/max seconds, CPU seconds, max RSS,
    and the rule's share of the critical path."""
    rows = []
    for rule in sorted({job.rule for job in jobs}):
        mine = [job for job in jobs if job.rule == rule]
        seconds = [job.seconds for job in mine]
        rss = [job.max_rss_mb for job in mine if job.max_rss_mb is not None]
        cpu = [job.cpu_seconds for job in mine if job.cpu_seconds is not None]
        on_path = [job for job in path if job.rule == rule]
        rows.append(
            {
                "rule": rule,
                "jobs": len(mine),
                "total_s": round(sum(seconds), 1),
                "median_s": round(statistics.median(seconds), 1),
                "max_s": round(max(seconds), 1),
                "cpu_s": round(sum(cpu), 1) if cpu else None,
                "max_rss_mb": round(max(rss), 1) if rss else None,
                "critical_path_jobs": len(on_path),
                "critical_path_s": round(sum(job.seconds for job in on_path), 1),
            }
        )
    return sorted(rows, key=lambda row: -row["total_s"])


def write_timings(
    benchmarks: list[Path], patterns: dict[str, str], upstream: Upstream, out_csv: Path, out_md: Path
) -> None:
    """results/tables/timings.csv (per rule) and timings.md (the same, the critical path, totals)."""
    import pandas as pd

    from softeval.io import atomic_write_text

    jobs = [read_benchmark(Path(p), patterns) for p in benchmarks]
    path = critical_path(jobs, upstream)
    table = pd.DataFrame(
        rule_rows(jobs, path),
        columns=[
            "rule",
            "jobs",
            "total_s",
            "median_s",
            "max_s",
            "cpu_s",
            "max_rss_mb",
            "critical_path_jobs",
            "critical_path_s",
        ],
    )
    atomic_write_text(out_csv, table.to_csv(index=False))
    total = sum(job.seconds for job in jobs)
    longest = sum(job.seconds for job in path)
    lines = [
        "# Where the run's time went",
        "",
        f"{len(jobs)} jobs, {total:.0f} s of job time in all (each job's wall time, from its Snakemake "
        f"benchmark file under results/benchmarks/). Critical path: {len(path)} jobs, {longest:.0f} s "
        "(the least wall time on unlimited cores). Timings vary between runs and machines; they are "
        "not part of the reproducible results.",
        "",
        table.astype(object).where(table.notna(), "").to_markdown(index=False),  # unsampled: empty
        "",
        "## Critical path",
        "",
        "| # | job | s |",
        "|---|---|---|",
        *(f"| {i} | {job.label} | {job.seconds:.1f} |" for i, job in enumerate(path, 1)),
        "",
    ]
    atomic_write_text(out_md, "\n".join(lines))
