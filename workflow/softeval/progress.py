"""What a running workflow is doing, for the terminal: jobs done of planned, an ETA, and the
progress bar of each long job (tune, evaluate) read from its log.

Snakemake sends a job's output to its log file, where the job's tqdm bar lands; a user watching
`softeval run` would otherwise see nothing for the minutes a tuning job takes. This module only
reads: Snakemake's own lines (fed to `Progress.feed`) and the running jobs' log files.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from pathlib import Path

DONE = re.compile(r"^(\d+) of (\d+) steps \((\d+)%\) done")
JOB_START = re.compile(r"^(?:local)?(?:rule|checkpoint) (\w+):")
FIELD = re.compile(r"^\s+(jobid|log|wildcards): (.*)$")
FINISHED = re.compile(r"^Finished job(?:id)?:? (\d+)")
# tqdm's bar as it lands in a log: "tune:  45%|####5     | 36/80 [00:10<00:12,  3.50step/s]"
TQDM = re.compile(
    r"(?P<desc>[^\r\n|]*?):?\s+\d+%\|[^|]*\|\s*(?P<n>\d+)/(?P<total>\d+) \[(?P<spent>[\d:]+)<(?P<left>[\d:?]+)"
)


@dataclass
class Job:
    rule: str
    wildcards: str = ""
    log: str = ""


@dataclass
class Progress:
    """Snakemake's progress as read from its output, and the running jobs' own bars."""

    workdir: Path
    start: float = field(default_factory=time.monotonic)
    done: int = 0
    total: int = 0
    running: dict[str, Job] = field(default_factory=dict)
    _pending: Job | None = None

    def feed(self, line: str) -> None:
        """Take one line of Snakemake's output."""
        if match := DONE.match(line):
            self.done, self.total = int(match[1]), int(match[2])
        elif match := JOB_START.match(line):
            self._pending = Job(match[1])
        elif (match := FIELD.match(line)) and self._pending is not None:
            key, value = match[1], match[2].strip()
            if key == "jobid":
                self.running[value] = self._pending
            elif key == "log":
                self._pending.log = value.split(",")[0].strip()
            else:
                self._pending.wildcards = value
        elif match := FINISHED.match(line):
            self.running.pop(match[1], None)

    def eta(self, now: float | None = None) -> float | None:
        """Seconds left if the remaining jobs take as long on average as the finished ones (None
        before one has finished)."""
        if not self.done or not self.total:
            return None
        spent = (now if now is not None else time.monotonic()) - self.start
        return spent * (self.total - self.done) / self.done

    def job_bar(self, job: Job) -> str | None:
        """The last progress bar in a job's log: 'n/total, <left> left'."""
        if not job.log:
            return None
        try:
            with open(self.workdir / job.log, "rb") as handle:
                handle.seek(0, 2)
                handle.seek(max(0, handle.tell() - 4096))
                tail = handle.read().decode("utf-8", "replace")
        except OSError:
            return None
        bars = list(TQDM.finditer(tail))
        if not bars:
            return None
        bar = bars[-1]
        desc = bar["desc"].strip()
        return f"{desc + ' ' if desc else ''}{bar['n']}/{bar['total']}, {bar['left']} left"

    def line(self, now: float | None = None) -> str:
        """One status line: jobs done of planned, elapsed, ETA, and each running job's bar."""
        now = now if now is not None else time.monotonic()
        parts = [f"{self.done}/{self.total or '?'} jobs", f"{clock(now - self.start)} elapsed"]
        left = self.eta(now)
        if left is not None:
            parts.append(f"~{clock(left)} left")
        jobs = []
        for job in self.running.values():
            label = job.rule + (f" {shorten(job.wildcards)}" if job.wildcards else "")
            bar = self.job_bar(job)
            jobs.append(f"{label}: {bar}" if bar else label)
        return ", ".join(parts) + (" | " + "; ".join(jobs) if jobs else "")


def shorten(wildcards: str) -> str:
    """'model=a, role=base, task=mmlu' -> 'a/base/mmlu'."""
    return "/".join(part.split("=", 1)[-1] for part in wildcards.split(", "))


def clock(seconds: float) -> str:
    seconds = int(max(0, seconds))
    hours, rest = divmod(seconds, 3600)
    return f"{hours}:{rest // 60:02d}:{rest % 60:02d}" if hours else f"{rest // 60}:{rest % 60:02d}"
