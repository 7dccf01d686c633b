"""cpu_kernels: portable pins ATen's and MKL's code paths, so a zoo model's bytes do not depend on
which path the machine would pick (emulated here by the capability ATen is told to use)."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from softeval.cpu_kernels import PORTABLE, pin


def test_portable_sets_the_paths_and_native_leaves_the_environment():
    env = {"ATEN_CPU_CAPABILITY": "avx512", "OTHER": "x"}
    pin("native", env)
    assert env == {"ATEN_CPU_CAPABILITY": "avx512", "OTHER": "x"}
    pin("portable", env)
    assert env == {**PORTABLE, "OTHER": "x"}
    assert PORTABLE["ATEN_CPU_CAPABILITY"] == "avx2" and PORTABLE["MKL_CBWR"] == "COMPATIBLE"
    with pytest.raises(ValueError, match="native, portable"):
        pin("fast", env)


def test_manifest_lists_content_and_names_what_differs(tmp_path, capsys):
    from softeval.analysis import manifest
    from softeval.cli import main

    results = tmp_path / "results"
    for name, text in {
        "zoo/atlas/base/model.safetensors": "w1",
        "zoo/atlas/base/meta.json": "{}",  # wall times: not content
        "softprompts/atlas/base/t/prompt.safetensors": "p",
        "tables/claims.csv": "c",
        "tables/timings.csv": "rule,total_s",  # where the time went: not content
        "figures/x.png": "png",
    }.items():
        (results / name).parent.mkdir(parents=True, exist_ok=True)
        (results / name).write_text(text)
    listed = tmp_path / "default.sha256"
    assert main(["manifest", "--results", str(results), "--write", str(listed)]) == 0
    lines = listed.read_text().splitlines()
    assert [line.split("  ")[1] for line in lines] == [
        "results/softprompts/atlas/base/t/prompt.safetensors",
        "results/tables/claims.csv",
        "results/zoo/atlas/base/model.safetensors",
    ]
    assert lines[1].split("  ")[0] == hashlib.sha256(b"c").hexdigest()  # sha256sum's own format
    assert main(["manifest", "--results", str(results), "--check", str(listed)]) == 0
    assert "3 of 3 files match" in capsys.readouterr().out
    (results / "tables" / "claims.csv").write_text("changed")
    (results / "tables" / "new.csv").write_text("n")
    assert main(["manifest", "--results", str(results), "--check", str(listed)]) == 2
    out = capsys.readouterr()
    assert "1 differ: results/tables/claims.csv" in out.out and "1 not listed: results/tables/new.csv" in out.out
    assert "does not reproduce" in out.err
    listed.write_text("nothex  results/x\n")
    with pytest.raises(manifest.InputError, match=r"default.sha256:1: not a sha256sum line"):
        manifest.read(listed)


PUBLISHED = Path(__file__).resolve().parents[3] / "config" / "published" / "default.yaml"


@pytest.mark.skipif(not os.environ.get("SOFTEVAL_VERIFY"), reason="set SOFTEVAL_VERIFY=1 after a default run")
def test_this_checkout_reproduces_the_published_record():
    """After `make reproduce` in the repository root, on any machine: the machine-independent
    files' bytes, every claim's verdict and every headline figure within its published range
    (`make verify` runs the same check through `softeval verify`)."""
    from softeval.analysis import verify

    rows = verify.verify(Path.cwd() / "results", verify.read_record(PUBLISHED))
    assert verify.passed(rows), [r for r in rows if r.inside is False]
