from __future__ import annotations

import pytest

from softeval.engine.chunks import parts_dir, write_in_chunks


class Killed(Exception):
    pass


def squares(calls, kill_at=None):
    def produce(chunk):
        calls.append(list(chunk))
        if kill_at is not None and len(calls) == kill_at:
            raise Killed
        return [{"x": x, "y": x * x} for x in chunk]

    return produce


def test_resume_after_a_kill_gives_the_uninterrupted_file(tmp_path):
    items = list(range(23))
    write_in_chunks(tmp_path / "whole.jsonl", items, squares([]), {"v": 1}, chunk_size=5)

    out = tmp_path / "resumed.jsonl"
    first: list = []
    with pytest.raises(Killed):
        write_in_chunks(out, items, squares(first, kill_at=3), {"v": 1}, chunk_size=5)
    assert not out.exists()  # no final file that looks complete
    assert sorted(p.name for p in parts_dir(out).glob("*.jsonl")) == ["00000.jsonl", "00001.jsonl"]

    second: list = []
    reused: list = []
    progress: list = []
    computed = write_in_chunks(
        out, items, squares(second), {"v": 1}, chunk_size=5, on_chunk=progress.append, on_reused=reused.append
    )
    assert computed == 3 and second[0] == [10, 11, 12, 13, 14]  # only the missing chunks ran
    assert reused == [10] and sum(reused + progress) == len(items)  # a resumed bar ends at 100 %
    assert out.read_bytes() == (tmp_path / "whole.jsonl").read_bytes()
    assert not parts_dir(out).exists()


def test_chunks_of_other_settings_are_discarded(tmp_path):
    out = tmp_path / "out.jsonl"
    with pytest.raises(Killed):
        write_in_chunks(out, list(range(10)), squares([], kill_at=2), {"v": 1}, chunk_size=4)
    calls: list = []
    assert write_in_chunks(out, list(range(10)), squares(calls), {"v": 2}, chunk_size=4) == 3
    assert out.read_text().splitlines()[0] == '{"x": 0, "y": 0}'
