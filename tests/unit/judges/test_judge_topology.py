"""The judge on a cluster: a verdict cache that many jobs share over a network file system, and
a server URL known only at run time (the judge server is a SLURM job of its own)."""

from __future__ import annotations

import multiprocessing
import sqlite3

import pytest

from softeval.judges.factory import judge_settings, judge_url, make_judge
from softeval.judges.local_lm import VerdictCache
from softeval.schema import InputError


def write_verdicts(folder: str, start: int) -> None:
    cache = VerdictCache(folder)
    for i in range(start, start + 200, 20):
        cache.put_many({f"k{j}": j % 2 == 0 for j in range(i, i + 20)})
    cache.close()


def test_concurrent_jobs_write_shards_of_their_own_and_every_job_reads_all(tmp_path):
    folder = tmp_path / "judge_cache"
    jobs = [multiprocessing.Process(target=write_verdicts, args=(str(folder), s)) for s in (0, 200, 400)]
    for job in jobs:
        job.start()
    for job in jobs:
        job.join()
        assert job.exitcode == 0
    shards = sorted(folder.glob("*.jsonl"))
    assert len(shards) == 3  # one writer per file: nothing to lock, nothing NFS can interleave
    reader = VerdictCache(folder)
    found = reader.get_many([f"k{j}" for j in range(650)])
    assert len(found) == 600 and found["k0"] is True and found["k401"] is False


def test_a_torn_last_line_is_skipped_and_what_was_durable_is_kept(tmp_path):
    cache = VerdictCache(tmp_path / "c", shard="job")
    cache.put_many({"a": True, "b": False})
    cache.close()
    with (tmp_path / "c" / "job.jsonl").open("a") as handle:
        handle.write('["c", tr')  # a kill in the middle of a write
    assert VerdictCache(tmp_path / "c").get_many(["a", "b", "c"]) == {"a": True, "b": False}


def test_an_earlier_releases_sqlite_cache_is_still_read(tmp_path):
    old = tmp_path / "judge_cache.sqlite"
    connection = sqlite3.connect(old)
    connection.execute("CREATE TABLE verdicts (key TEXT PRIMARY KEY, verdict INTEGER)")
    connection.execute("INSERT INTO verdicts VALUES ('old', 1)")
    connection.commit()
    connection.close()
    assert VerdictCache(tmp_path / "judge_cache").get_many(["old"]) == {"old": True}
    with pytest.raises(InputError, match="names a folder of verdict shards now"):
        VerdictCache(old)


def openai(**keys):
    return judge_settings({"name": "openai", "model": "Qwen/Qwen3-32B", **keys})


def test_the_judge_url_comes_from_the_variable_the_config_names(monkeypatch):
    assert judge_url(openai(base_url="http://h:1/v1")) == "http://h:1/v1"
    monkeypatch.delenv("SOFTEVAL_JUDGE_URL", raising=False)
    with pytest.raises(InputError, match=r"\$SOFTEVAL_JUDGE_URL .* is not set; start the server"):
        make_judge(openai(base_url_env="SOFTEVAL_JUDGE_URL"))
    monkeypatch.setenv("SOFTEVAL_JUDGE_URL", "http://gpu-node-7:8000/v1")
    assert judge_url(openai(base_url_env="SOFTEVAL_JUDGE_URL")) == "http://gpu-node-7:8000/v1"
    with pytest.raises(InputError, match="not both"):
        judge_url(openai(base_url="http://h:1/v1", base_url_env="SOFTEVAL_JUDGE_URL"))


def test_judge_jobs_ask_for_a_gpu_only_for_a_judge_they_load():
    """Issue 41 item 3: an hf judge loads its LLM in the job (a model job's GPU, memory and time);
    a judge server's client takes one of the profile's judge_slots and no GPU; the rule judge neither."""
    from softeval.judges.factory import JUDGE_SLOTS, judge_job_resources, register_judge

    resources = {"gpu": 1, "gpu_model": "h100", "mem_mb": 64000, "runtime": 360, "cpus": 8}
    assert judge_job_resources({"name": "hf"}, resources) == {
        "gpu": 1,
        "mem_mb": 64000,
        "runtime": 360,
        "gpu_model": "h100",
    }
    served = judge_job_resources({"name": "openai"}, resources)
    assert served["gpu"] == 0 and served[JUDGE_SLOTS] == 1 and served["runtime"] >= 12 * 60
    assert judge_job_resources({"name": "rule"}, resources) == {"gpu": 0}
    with pytest.raises(ValueError, match="runs_on is 'gpu'"):
        register_judge("nowhere", runs_on="gpu")
