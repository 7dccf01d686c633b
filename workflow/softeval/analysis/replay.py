"""verify's deterministic layer: what is computed from the models' outputs, recomputed and compared.

Model outputs differ between machines (their weights do); what the workflow computes from them
does not: judging, aggregation, the tables, the claims and their calibration are integers,
seeded numpy and fixed formatting. A published record therefore ships one run's per-example
outputs (its generations, option log-likelihoods, data splits and the zoo's truth table, packed
by `pack`) with the sha256 of what the run computed from them; `replay` runs the workflow's own
rules on them in a scratch checkout, no model job allowed, and `computed_digests` of the result is
compared with the record byte for byte. A judge, aggregation or claim logic that changed fails here, on any
machine, whatever the zoo.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

from softeval.schema import InputError

# What a run's analysis starts from (results-relative globs), shipped in the archive.
OUTPUTS = (
    "world/world.json",
    "data/*/*.jsonl",
    "data/*/meta.json",
    "generations/**/*.jsonl",
    "generations/**/*.meta.json",
    "loglik/**/*.jsonl",
    "loglik/**/*.meta.json",
    "tables/zoo.csv",
    "tables/zoo.md",
)
# What the analysis computes from them, compared byte for byte.
COMPUTED = (
    "scores/**/*.jsonl",
    "tables/scores.csv",
    "tables/leaderboard.csv",
    "tables/swap_distance.csv",
    "tables/score_gap.csv",
    "tables/knowledge_format.csv",
    "tables/consensus.csv",
    "tables/unit_checks.csv",
    "tables/claims.csv",
    "tables/calibration.csv",
)
# The rules a replay may run: none of them loads a model under evaluation. Rules outside this list
# leave Snakemake's graph, so their shipped outputs (world, splits, generations) are its sources.
RULES = ("judge", "aggregate", "tables", "claims", "calibration")
TARGETS = ("tables/claims.csv", "tables/calibration.csv", "tables/leaderboard.csv")
CHECKOUT = ("Snakefile", "workflow", "config", "envs")


def _files(results: Path, patterns: tuple[str, ...]) -> list[Path]:
    return sorted({p for pattern in patterns for p in results.glob(pattern) if p.is_file()})


def computed_digests(results: Path) -> dict[str, str]:
    """results-relative path -> sha256 of every file the analysis computed from the outputs."""
    return {p.relative_to(results).as_posix(): _sha256(p) for p in _files(results, COMPUTED)}


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def pack(results: Path, archive: Path) -> None:
    """The run's outputs as a gzipped tar with fixed metadata (the same bytes from the same files)."""
    files = _files(results, OUTPUTS)
    if not any(p.relative_to(results).parts[0] == "generations" for p in files):
        raise InputError(f"{results}: no generations to publish; run the workflow to its end first")
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for path in files:
            info = tarfile.TarInfo(path.relative_to(results).as_posix())
            data = path.read_bytes()
            info.size, info.mode, info.mtime = len(data), 0o644, 0
            tar.addfile(info, io.BytesIO(data))
    archive.write_bytes(gzip.compress(buffer.getvalue(), mtime=0))


class ReplayFailed(Exception):
    """The workflow did not complete on the published outputs (verify reports it as a failed check)."""


def _safe_members(tar: tarfile.TarFile, archive: Path) -> list[tarfile.TarInfo]:
    """Regular files under relative paths only: a published archive never holds anything else."""
    members = tar.getmembers()
    for member in members:
        path = Path(member.name)
        if not member.isfile() or path.is_absolute() or ".." in path.parts:
            raise InputError(f"{archive}: member {member.name!r} is not a plain relative file; restore it from git")
    return members


def replay(
    archive: Path, root: Path, cores: int = 2, workdir: Path | None = None, configfile: str | None = None
) -> dict[str, str]:
    """The workflow's analysis rerun on a published run's outputs, in a scratch checkout (the
    workflow files of `root`, with `configfile` from it if given); the digests of what it computed.
    The outputs are unpacked after the checkout and stamped with one time, so they are newer than
    its task files, and only RULES may run: a job that would need a model is an error, not a silent
    rebuild. The jobs run with this interpreter's environment first on PATH (as `softeval run`'s)."""
    if not archive.is_file():
        raise InputError(f"{archive}: the published outputs are missing; restore them from git")
    if not (root / "Snakefile").is_file():
        raise InputError(f"{root}: no Snakefile; run verify from the repository root or give --checkout")
    scratch = Path(tempfile.mkdtemp(prefix="softeval-replay-")) if workdir is None else workdir
    scratch.mkdir(parents=True, exist_ok=True)
    try:
        for name in CHECKOUT:
            source = root / name
            if source.is_dir():
                shutil.copytree(source, scratch / name, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
            else:
                shutil.copy2(source, scratch / name)
        results = scratch / "results"
        with tarfile.open(archive, "r:gz") as tar:
            members = _safe_members(tar, archive)
            for member in members:
                target = results / member.name
                target.parent.mkdir(parents=True, exist_ok=True)
                source_file = tar.extractfile(member)
                assert source_file is not None
                target.write_bytes(source_file.read())
        now = time.time()
        for member in members:
            os.utime(results / member.name, (now, now))
        command = [sys.executable, "-m", "snakemake", "--cores", str(cores), "--allowed-rules", *RULES]
        command += ["--rerun-triggers", "mtime"]
        command += ["--configfile", configfile] if configfile else []
        command += ["--", *(f"results/{t}" for t in TARGETS)]
        env = os.environ.copy()
        env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
        done = subprocess.run(command, cwd=scratch, capture_output=True, text=True, env=env)
        if done.returncode != 0:
            raise ReplayFailed((done.stdout + done.stderr)[-3000:])
        return computed_digests(results)
    finally:
        if workdir is None:
            shutil.rmtree(scratch, ignore_errors=True)


def compare(expected: dict[str, str], got: dict[str, str]) -> list[tuple[str, str, str, bool]]:
    """(item, published, this machine, same) per table file, and one for every per-example scores
    file together (naming the first that differs)."""
    rows = []
    scores = sorted(name for name in expected if name.startswith("scores/"))
    differ = [name for name in scores if got.get(name) != expected[name]]
    extra = sorted(name for name in got if name.startswith("scores/") and name not in expected)
    shown = f"{len(scores) - len(differ)} same" + (f"; first different: {differ[0]}" if differ else "")
    rows.append((f"scores/** ({len(scores)} files)", f"{len(scores)} digests", shown, not differ and not extra))
    for name in sorted(set(expected) - set(scores)):
        mine = got.get(name)
        rows.append((name, expected[name][:16], "missing" if mine is None else mine[:16], mine == expected[name]))
    return rows
