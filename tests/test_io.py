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
