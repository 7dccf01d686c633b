"""Which weights a result came from: a content hash of any size, computed once per directory."""

from __future__ import annotations

import hashlib
import os

from softeval.engine import weights
from softeval.engine.weights import weights_digest


def test_the_digest_is_the_weights_bytes_in_order_and_comes_from_the_cache(tmp_path, monkeypatch):
    model, cache = tmp_path / "model", tmp_path / "cache"
    model.mkdir()
    (model / "model-00001-of-00002.safetensors").write_bytes(b"first shard")
    (model / "model-00002-of-00002.safetensors").write_bytes(b"second shard")
    (model / "config.json").write_text("{}")
    expected = hashlib.sha256(b"first shard" + b"second shard").hexdigest()
    assert weights_digest(model, cache) == expected
    assert len(list(cache.iterdir())) == 1

    monkeypatch.setattr(weights, "hash_files", lambda files: "recomputed")
    assert weights_digest(model, cache) == expected  # nothing changed: no file is read again


def test_rewritten_weights_are_hashed_again(tmp_path):
    model, cache = tmp_path / "model", tmp_path / "cache"
    model.mkdir()
    shard = model / "model.safetensors"
    shard.write_bytes(b"old weights")
    old = weights_digest(model, cache)
    shard.write_bytes(b"new weights")
    os.utime(shard, ns=(shard.stat().st_atime_ns, shard.stat().st_mtime_ns + 1_000_000))
    assert weights_digest(model, cache) == hashlib.sha256(b"new weights").hexdigest() != old


def test_no_weights_no_digest_and_an_unwritable_cache_only_costs_time(tmp_path):
    assert weights_digest(tmp_path, tmp_path / "cache") is None
    (tmp_path / "model.safetensors").write_bytes(b"w")
    blocked = tmp_path / "file-not-folder"
    blocked.write_text("")
    assert weights_digest(tmp_path, blocked) == hashlib.sha256(b"w").hexdigest()
