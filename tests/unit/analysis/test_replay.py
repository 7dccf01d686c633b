"""verify's deterministic layer, its parts that need no workflow run: what is packed, that the
archive's bytes depend only on the files, and how a replay's digests are compared (the replay
itself runs in tests/workflow/test_workflow.py), and what refreshing a record's replay rewrites."""

from __future__ import annotations

import tarfile
from pathlib import Path

import pytest

from softeval.analysis import replay, verify
from softeval.commands.publish_ranges import refresh_replay
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


def _record(path: Path) -> None:
    """A two-run record whose shipped outputs are seed 0's (its replay faked below)."""
    verify.write_record(
        {
            "config": "config/config.yaml",
            "note": "two seeds",
            "level": 0.95,
            "family": 0,
            "runs": ["seed 0", "seed 1"],
            "bytes": {},
            "verdicts": {3: {"seed 0": "holds", "seed 1": "holds"}, 5: {"seed 0": "holds", "seed 1": "holds"}},
            "figures": {},
            "replay": {"outputs": "default-outputs.tar.gz", "sha256": {"tables/claims.csv": "old"}},
            "calibration": {"shuffled_twins/3": {"expected": "fails", "runs": {"seed 0": "holds", "seed 1": "holds"}}},
        },
        path,
    )


def _fake_replay(archive: Path, root: Path, workdir: Path | None = None, **_: object) -> dict[str, str]:
    """What a replay under changed claim checks leaves: claim 3 not shown, its control met."""
    assert workdir is not None
    tables = workdir / "results" / "tables"
    tables.mkdir(parents=True)
    (tables / "claims.csv").write_text(
        "claim,part,verdict,caveat,estimate,ci_low,ci_high,evidence\n"
        "3,vs zero-shot,not shown,,0,0,0,x\n5,vs zero-shot,holds,,0,0,0,x\n"
    )
    (tables / "calibration.csv").write_text(
        "control,claim,expected,obtained,agrees,note\nshuffled_twins,3,fails,not shown,yes,\n"
    )
    return {"tables/claims.csv": "new"}


def test_refreshing_the_replay_rewrites_the_shipped_runs_verdicts(tmp_path: Path, monkeypatch) -> None:
    """`publish-ranges --refresh-replay`: the digests and the shipped run's verdicts and calibration
    come from the replay; the other runs' are kept, or dropped for the claims --drop-other-verdicts names."""
    monkeypatch.setattr(replay, "replay", _fake_replay)
    path = tmp_path / "default.yaml"
    _record(path)
    with pytest.raises(InputError, match="give --shipped-run LABEL"):
        refresh_replay(path)  # the record does not say which run it ships
    refresh_replay(path, shipped_run="seed 0")
    record = verify.read_record(path)
    assert record["replay"] == {
        "outputs": "default-outputs.tar.gz",
        "sha256": {"tables/claims.csv": "new"},
        "run": "seed 0",
    }
    assert record["verdicts"][3] == {"seed 0": "not shown", "seed 1": "holds"}
    assert record["calibration"]["shuffled_twins/3"]["runs"] == {"seed 0": "not shown", "seed 1": "holds"}
    refresh_replay(path, drop_others=(3,), note="seed 1's claim 3 predates its checks")  # replay.run now known
    record = verify.read_record(path)
    assert record["verdicts"] == {3: {"seed 0": "not shown"}, 5: {"seed 0": "holds", "seed 1": "holds"}}
    assert record["calibration"] == {"shuffled_twins/3": {"expected": "fails", "runs": {"seed 0": "not shown"}}}
    assert record["note"] == "seed 1's claim 3 predates its checks" and record["runs"] == ["seed 0", "seed 1"]
