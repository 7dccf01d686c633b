"""The published record's deterministic layer on this checkout: the default's shipped outputs
(config/published/default-outputs.tar.gz), recomputed by the workflow's own rules, give every
per-example verdict, table, claim and calibration file the record names, byte for byte. What
`make verify` does first on any machine; a change to judging, aggregation, tables or claims
fails here until `softeval publish-ranges --refresh-replay` records it (config/published/README.md)."""

from __future__ import annotations

import pytest

from softeval.analysis import replay, verify
from tests.conftest import ROOT

pytestmark = pytest.mark.integration


def test_the_published_outputs_replay_to_the_records_digests(tmp_path):
    path = ROOT / "config" / "published" / "default.yaml"
    record = verify.read_record(path)
    assert "replay" in record, "the default's record ships no outputs: publish it with --outputs"
    work = tmp_path / "replay"
    rows = replay.compare(
        record["replay"]["sha256"], replay.replay(path.parent / record["replay"]["outputs"], ROOT, workdir=work)
    )
    assert all(same for *_, same in rows), [row for row in rows if not row[3]]
    assert rows[0][0] == "scores/** (280 files)" and len(rows) == 10
    # the record's verdicts and calibration of the shipped run are what its outputs give
    run, tables = record["replay"]["run"], work / "results" / "tables"
    assert verify.run_verdicts(tables) == {int(c): by_run[run] for c, by_run in record["verdicts"].items()}
    calibration = verify.calibration_over_runs({run: tables / "calibration.csv"})
    assert {key: entry["runs"][run] for key, entry in calibration.items()} == {
        key: entry["runs"][run] for key, entry in record["calibration"].items()
    }
