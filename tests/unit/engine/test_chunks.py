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


def test_a_stream_writes_each_chunk_when_it_is_complete_in_any_order(tmp_path):
    """write_streamed: the missing chunks go to the stream together; it yields them in the order
    they complete, each saved at once, and the file is in the items' order."""
    from softeval.engine.chunks import write_streamed

    items = list(range(10))
    seen = []

    def backwards(chunks):
        seen.append([list(c) for c in chunks])
        for k in reversed(range(len(chunks))):
            assert not (parts_dir(out) / f"{k:05d}.jsonl").exists()
            yield k, [{"x": x} for x in chunks[k]]
            assert (parts_dir(out) / f"{k:05d}.jsonl").exists()  # saved before the next one is asked for

    out = tmp_path / "out.jsonl"
    assert write_streamed(out, items, backwards, {"v": 1}, chunk_size=4) == 3
    assert seen == [[[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]]
    assert [line for line in out.read_text().splitlines()] == [f'{{"x": {x}}}' for x in items]


@pytest.mark.parametrize(
    ("stream", "message"),
    [
        (lambda chunks: iter([(0, [{"x": 0}])]), "has 1 rows for 4 items"),
        (lambda chunks: iter([(0, [{"x": x} for x in chunks[0]])]), "1 chunks were not produced"),
        (lambda chunks: iter([(0, [{"x": x} for x in chunks[0]])] * 2), "produced twice"),
    ],
)
def test_a_stream_that_loses_or_repeats_a_chunk_is_an_error(tmp_path, stream, message):
    from softeval.engine.chunks import write_streamed

    out = tmp_path / "out.jsonl"
    with pytest.raises(RuntimeError, match=message):
        write_streamed(out, list(range(8)), stream, {"v": 1}, chunk_size=4)
    assert not out.exists()
