"""A sha256 manifest of a run's content: the zoo's weights, the tuned prompts and every table.

Written in `sha256sum`'s format (`<hex>  <path>`, paths relative to the working directory), so
`sha256sum -c config/manifests/default-amd-epyc.sha256` checks a run without softeval, and
`softeval manifest --check` does the same with a summary. What it covers is content alone:
meta.json files (wall times, versions), logs, figures (PNG/PDF bytes depend on the
matplotlib build and its fonts) and timings (benchmark files, the timings table) are left out.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from softeval.io import atomic_write_text, read_utf8
from softeval.schema import InputError

PATTERNS = (
    "zoo/*/*/model.safetensors",
    "softprompts/*/*/*/prompt.safetensors",
    "tables/*.csv",
)
# Where the time went differs from run to run: not content.
NOT_CONTENT = ("tables/timings.csv",)


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def build(results: Path) -> dict[str, str]:
    """path (as `results/...`) -> sha256 of every covered file under `results`."""
    found = sorted(
        {
            p
            for pattern in PATTERNS
            for p in results.glob(pattern)
            if p.is_file() and p.relative_to(results).as_posix() not in NOT_CONTENT
        }
    )
    if not found:
        raise InputError(f"{results}: no zoo weights, prompts or tables to list; run the workflow first")
    return {f"{results.name}/{p.relative_to(results).as_posix()}": sha256(p) for p in found}


def write(manifest: dict[str, str], path: Path) -> None:
    atomic_write_text(path, "".join(f"{digest}  {name}\n" for name, digest in sorted(manifest.items())))


def read(path: Path) -> dict[str, str]:
    if not path.is_file():
        raise InputError(f"{path}: manifest file not found; give the published one (config/manifests/) or --write it")
    manifest = {}
    for number, line in enumerate(read_utf8(path).splitlines(), 1):
        digest, sep, name = line.partition("  ")
        if not sep or len(digest) != 64 or not name:
            raise InputError(f"{path}:{number}: not a sha256sum line ('<64 hex digits>  <path>')")
        manifest[name] = digest
    return manifest


@dataclass(frozen=True)
class Comparison:
    matching: list[str]
    differing: list[str]
    missing: list[str]  # in the manifest, not in the run
    extra: list[str]  # in the run, not in the manifest

    @property
    def ok(self) -> bool:
        return not (self.differing or self.missing or self.extra)

    def summary(self) -> str:
        lines = [f"{len(self.matching)} of {len(self.matching) + len(self.differing) + len(self.missing)} files match"]
        for label, names in (("differ", self.differing), ("missing", self.missing), ("not listed", self.extra)):
            if names:
                shown = ", ".join(names[:8]) + (f" and {len(names) - 8} more" if len(names) > 8 else "")
                lines.append(f"{len(names)} {label}: {shown}")
        return "\n".join(lines)


def compare(expected: dict[str, str], actual: dict[str, str]) -> Comparison:
    return Comparison(
        matching=sorted(n for n in expected if actual.get(n) == expected[n]),
        differing=sorted(n for n in expected if n in actual and actual[n] != expected[n]),
        missing=sorted(n for n in expected if n not in actual),
        extra=sorted(n for n in actual if n not in expected),
    )
