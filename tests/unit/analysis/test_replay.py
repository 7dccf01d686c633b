"""verify's deterministic layer, its parts that need no workflow run: what is packed, that the
archive's bytes depend only on the files, and how a replay's digests are compared (the replay
itself runs in tests/workflow/test_workflow.py)."""

from __future__ import annotations

import tarfile
from pathlib import Path

import pytest

from softeval.analysis import replay
from softeval.schema import InputError


def results_folder(root: Path) -> Path:
    results = root / "results"
    files = {
        "world/world.json": "{}",
        "data/t/test.jsonl": '{"id": 1}\n',
        "generations/m/base/t/zero_shot.jsonl": '{"response": "x"}\n',
        "generations/m/base/t/zero_shot.meta.json": "{}",
        "loglik/m/base/t/zero_shot.jsonl": '{"chosen": 0}\n',
        "tables/zoo.csv": "model\n",
        "scores/m/base/t/zero_shot.jsonl": '{"strict": true}\n',  # computed: not packed
        "tables/claims.csv": "claim\n",  # computed: not packed
        "zoo/m/base/model.safetensors": "weights",  # a model: never packed
    }
    for name, text in files.items():
        (results / name).parent.mkdir(parents=True, exist_ok=True)
        (results / name).write_text(text)
    return results


def test_the_archive_holds_the_outputs_only_and_its_bytes_depend_on_the_files_alone(tmp_path: Path) -> None:
    results = results_folder(tmp_path)
    first, second = tmp_path / "a.tar.gz", tmp_path / "b.tar.gz"
    replay.pack(results, first)
    (results / "world" / "world.json").touch()  # a newer mtime, the same bytes
    replay.pack(results, second)
    assert first.read_bytes() == second.read_bytes()
    with tarfile.open(first) as tar:
        assert tar.getnames() == [
            "data/t/test.jsonl",
            "generations/m/base/t/zero_shot.jsonl",
            "generations/m/base/t/zero_shot.meta.json",
            "loglik/m/base/t/zero_shot.jsonl",
            "tables/zoo.csv",
            "world/world.json",
        ]
    assert replay.computed_digests(results).keys() == {"scores/m/base/t/zero_shot.jsonl", "tables/claims.csv"}


def test_a_folder_without_generations_is_refused(tmp_path: Path) -> None:
    (tmp_path / "results" / "world").mkdir(parents=True)
    with pytest.raises(InputError, match="no generations to publish"):
        replay.pack(tmp_path / "results", tmp_path / "out.tar.gz")


def test_the_comparison_names_the_first_scores_file_that_differs_and_each_table() -> None:
    expected = {"scores/a.jsonl": "1" * 64, "scores/b.jsonl": "2" * 64, "tables/claims.csv": "3" * 64}
    assert all(same for *_, same in replay.compare(expected, dict(expected)))
    rows = replay.compare(expected, {"scores/a.jsonl": "1" * 64, "scores/b.jsonl": "9" * 64})
    assert rows[0] == ("scores/** (2 files)", "2 digests", "1 same; first different: scores/b.jsonl", False)
    assert rows[1] == ("tables/claims.csv", "3" * 16, "missing", False)


def test_a_missing_archive_is_one_clear_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="published outputs are missing; restore them from git"):
        replay.replay(tmp_path / "gone.tar.gz", tmp_path)
