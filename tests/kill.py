"""Killing a workflow run as a user's Ctrl-\\ or a cluster's OOM killer would, and comparing what
is left after the resume with an uninterrupted run."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

# Fields that say how long something took, and the provenance's `run` block (which code, config
# files and machine made the file: a cluster job names its config files as its executor passed
# them): the only ones allowed to differ between two runs of the same results.
TIMING_KEYS = frozenset({"wall_seconds", "tune_seconds", "model_load_seconds", "run"})


def without_timing(data: Any) -> Any:
    if isinstance(data, dict):
        return {k: without_timing(v) for k, v in data.items() if k not in TIMING_KEYS}
    if isinstance(data, list):
        return [without_timing(v) for v in data]
    return data


def file_digest(path: Path) -> str:
    if path.suffix == ".json":
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except ValueError:
            pass
        else:
            return "json:" + hashlib.sha256(json.dumps(without_timing(data), sort_keys=True).encode()).hexdigest()
    return hashlib.sha256(path.read_bytes()).hexdigest()


def results_digest(root: Path) -> dict[str, str]:
    """Every file under `root` (hidden ones too: a leftover chunk folder is a difference), by
    relative path, with JSON files compared without their timing fields and the timing files
    (Snakemake's benchmark files, the timings table) by their presence only."""
    return {
        str(p.relative_to(root)): "timing" if is_timing(p.relative_to(root)) else file_digest(p)
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def is_timing(relative: Path) -> bool:
    return relative.parts[0] == "benchmarks" or relative.as_posix().startswith("tables/timings.")


def differing(found: dict[str, str], expected: dict[str, str]) -> list[str]:
    """The files that are missing, extra or different, each with which."""
    return sorted(
        [f"missing {name}" for name in expected.keys() - found.keys()]
        + [f"extra {name}" for name in found.keys() - expected.keys()]
        + [f"changed {name}" for name in found.keys() & expected.keys() if found[name] != expected[name]]
    )


def process_tree(root: int) -> list[int]:
    """`root` and every process descended from it (read from /proc: jobs may leave the group)."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    tree, todo = [], [root]
    while todo:
        pid = todo.pop()
        tree.append(pid)
        todo += children.get(pid, [])
    return tree


def signal_tree(process: subprocess.Popen, signum: int) -> list[int]:
    """Send `signum` to the process group at once, then to every process below `process` that
    left it (found in /proc while they are still its descendants); the pids signalled."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signum)
    pids = process_tree(process.pid)
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signum)
    return pids


def kill_tree(process: subprocess.Popen) -> None:
    """SIGKILL the process group and anything below it, as an out-of-memory killer would. The
    tree is stopped first, so that no process is reparented (and lost) while it is walked."""
    pids = signal_tree(process, signal.SIGSTOP)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    process.wait()


def run_until(
    command: list[str],
    env: dict[str, str],
    trigger: Callable[[], bool],
    log: Path,
    timeout: float = 900,
    poll: float = 0.1,
) -> bool:
    """Run `command` in its own process group (output to `log`) and kill it the moment
    `trigger()` holds. True when it was killed; False when it ended first, with exit status 0.

    When `trigger()` first holds, the whole tree is stopped (SIGSTOP) and `trigger()` asked
    again: a state that lasts milliseconds (a job's first chunk, before the job writes its
    final file) is killed only if it still holds, and the run goes on (SIGCONT) otherwise."""
    with log.open("w") as handle:
        process = subprocess.Popen(command, env=env, stdout=handle, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + timeout
        try:
            while process.poll() is None:
                if trigger():
                    signal_tree(process, signal.SIGSTOP)
                    if trigger():
                        kill_tree(process)
                        return True
                    signal_tree(process, signal.SIGCONT)
                if time.monotonic() > deadline:
                    raise TimeoutError(" ".join(command))
                time.sleep(poll)
        except BaseException:  # a failing trigger or the deadline: leave no (stopped) process behind
            kill_tree(process)
            raise
    assert process.returncode == 0, log.read_text()[-3000:]
    return False
