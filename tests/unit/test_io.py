from __future__ import annotations

import os
import stat

import pytest

from softeval.io import atomic_directory, atomic_write_text, check_slug


def test_atomic_write_replaces_and_leaves_no_temp_files(tmp_path):
    target = tmp_path / "out.txt"
    atomic_write_text(target, "one")
    atomic_write_text(target, "two")
    assert target.read_text() == "two"
    assert [p.name for p in tmp_path.iterdir()] == ["out.txt"]


def test_failed_directory_write_keeps_the_old_directory(tmp_path):
    target = tmp_path / "model"
    with atomic_directory(target) as tmp:
        (tmp / "weights").write_text("old")
    with pytest.raises(RuntimeError), atomic_directory(target) as tmp:
        (tmp / "weights").write_text("half-written")
        raise RuntimeError("killed")
    assert (target / "weights").read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["model"]


def test_what_a_killed_writer_left_is_cleared_by_the_next_write_of_the_same_path(tmp_path):
    """SIGKILL skips every cleanup: the temporaries stay until the path is written again."""
    (tmp_path / ".out.json.k1ll3d_x.tmp").write_text("half")
    (tmp_path / ".model.a8c2z9q0.tmp").mkdir()
    (tmp_path / ".model.a8c2z9q0.tmp" / "config.json").write_text("{}")
    (tmp_path / ".out.json.gz.abcdefgh.tmp").write_text("another file's")
    atomic_write_text(tmp_path / "out.json", "{}")
    with atomic_directory(tmp_path / "model") as tmp:
        (tmp / "weights").write_text("new")
    assert sorted(p.name for p in tmp_path.iterdir()) == [".out.json.gz.abcdefgh.tmp", "model", "out.json"]


@pytest.mark.parametrize("name", ["atlas", "model-2", "a_b", "x" * 64])
def test_valid_slugs(name):
    assert check_slug(name, "model") == name


@pytest.mark.parametrize("name", ["", "../etc", "a/b", "Atlas", "-x", "x" * 65, "with space"])
def test_invalid_slugs_are_rejected(name):
    with pytest.raises(ValueError, match="invalid model name"):
        check_slug(name, "model")


@pytest.mark.parametrize("mask", [0o022, 0o002, 0o077])
def test_written_files_get_the_mode_the_umask_gives(tmp_path, mask):
    """mkstemp/mkdtemp are owner-only; results follow the umask like any open() (shared clusters)."""
    from softeval.io import atomic_directory, atomic_write_text

    old = os.umask(mask)
    try:
        atomic_write_text(tmp_path / "a.txt", "x")
        with atomic_directory(tmp_path / "d") as staging:
            (staging / "f").write_text("y")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "a.txt").stat().st_mode) == 0o666 & ~mask
    assert stat.S_IMODE((tmp_path / "d").stat().st_mode) == 0o777 & ~mask


@pytest.mark.parametrize("mask", [0o022, 0o027])
def test_every_artifact_kind_gets_the_mode_the_umask_gives(tmp_path, mask):
    """Each writer of a kind of artifact, through the shared write path: safetensors writes
    owner-only files (the issue: 290 soft prompts and every zoo model at 0600 under umask 022)."""
    import matplotlib.pyplot as plt
    import pandas as pd
    import torch
    import transformers

    from softeval.analysis.aggregate import write_summary
    from softeval.analysis.figures import save
    from softeval.engine.softprompt import export_peft, save_prompt
    from softeval.io import atomic_directory, atomic_file, atomic_write_jsonl

    old = os.umask(mask)
    try:
        save_prompt(tmp_path / "sp" / "step0.safetensors", torch.zeros(2, 8), {"step": 0})
        model = transformers.LlamaForCausalLM(
            transformers.LlamaConfig(
                hidden_size=8, intermediate_size=16, num_hidden_layers=1, num_attention_heads=2, vocab_size=32
            )
        )
        export_peft(tmp_path / "sp" / "peft", torch.zeros(2, 8), model, "m")
        with atomic_directory(tmp_path / "zoo" / "base") as staging:
            model.save_pretrained(staging)
        write_summary(pd.DataFrame({"a": [1]}), tmp_path / "t" / "s.csv", tmp_path / "t" / "s.parquet")
        figure = plt.figure()
        save(figure, tmp_path / "fig" / "f")
        atomic_write_jsonl(tmp_path / "g" / "zero_shot.jsonl", [{"id": "1"}])
        with atomic_file(tmp_path / "x.bin") as tmp:
            tmp.write_bytes(b"1")
    finally:
        os.umask(old)
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    kinds = {p.suffix for p in files}
    assert {".safetensors", ".json", ".csv", ".parquet", ".png", ".pdf", ".jsonl", ".bin"} <= kinds
    wrong = {str(p.relative_to(tmp_path)): oct(stat.S_IMODE(p.stat().st_mode)) for p in files}
    wrong = {k: v for k, v in wrong.items() if v != oct(0o666 & ~mask)}
    assert not wrong
    dirs = [p for p in tmp_path.rglob("*") if p.is_dir()]
    assert all(stat.S_IMODE(p.stat().st_mode) == 0o777 & ~mask for p in dirs)
    assert not [p for p in tmp_path.rglob(".*.tmp")]
