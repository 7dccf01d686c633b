"""The openai judge backend against a local fake server that fails in every way it can."""

from __future__ import annotations

import logging

import pytest

from softeval.judges.factory import make_judge
from softeval.judges.local_lm import JudgePrompts, VerdictCache
from softeval.judges.openai_compatible import JudgeUnavailable, OpenAIJudge
from tests.conftest import NUMERIC, ROOT
from tests.fake_openai import FakeServer

PROMPTS = JudgePrompts.load(ROOT / "config" / "judges" / "default.yaml")
RESPONSES = ["#### 1432", "It was 1432.", "#### 1500", "no idea", "1432 or 1500", "#### 1,432", "x", "1433"]
EXPECTED = ["1432" in r for r in RESPONSES]
SECRET = "sk-test-never-log-this-0123456789"


def judge(server, tmp_path, monkeypatch, **kwargs):
    monkeypatch.setenv("JUDGE_KEY", SECRET)
    cache = VerdictCache(tmp_path / "cache")
    options = {"concurrency": 3, "timeout": 0.5, "max_retries": 3, "reply_retries": 3, **kwargs}
    return OpenAIJudge(
        base_url=server.url, model="fake-judge", prompts=PROMPTS, cache=cache, api_key_env="JUDGE_KEY", **options
    )


def prompts_for(tasks):
    return [PROMPTS.render("knowledge", tasks["world_numeric"], NUMERIC, r) for r in RESPONSES]


def test_verdicts_are_right_through_500s_429s_timeouts_garbage_and_slow_replies(tasks, tmp_path, monkeypatch, caplog):
    caplog.set_level(logging.DEBUG)
    plan = ["500", "429", "timeout", "malformed", "words", "slow", "500", "429"]
    with FakeServer(plan=plan, hang=1.5) as server:
        llm = judge(server, tmp_path, monkeypatch)
        assert llm.verdicts("knowledge", prompts_for(tasks)) == EXPECTED
        assert not server.plan and len(server.requests) > len(RESPONSES) + 4  # failures were met and retried
        assert all(r["max_tokens"] == 1 and r["logprobs"] for r in server.requests)
        auth = [{k.lower(): v for k, v in h.items()}.get("authorization") for h in server.headers]
        assert auth and all(a == f"Bearer {SECRET}" for a in auth)
    assert SECRET not in caplog.text  # the key reaches the server, never a log
    assert all(SECRET.encode() not in shard.read_bytes() for shard in (tmp_path / "cache").iterdir())


def test_a_rerun_is_served_from_the_cache(tasks, tmp_path, monkeypatch):
    with FakeServer() as server:
        first = judge(server, tmp_path, monkeypatch).verdicts("knowledge", prompts_for(tasks))
        asked = len(server.requests)
        again = judge(server, tmp_path, monkeypatch).verdicts("knowledge", prompts_for(tasks))
        assert again == first == EXPECTED and len(server.requests) == asked == len(RESPONSES)


def test_an_endpoint_that_stays_down_stops_with_a_clear_error_and_keeps_what_it_got(tasks, tmp_path, monkeypatch):
    prompts = prompts_for(tasks)
    with FakeServer() as server:  # half the verdicts arrive, then the server goes away
        judge(server, tmp_path, monkeypatch).verdicts("knowledge", prompts[:4])
    with (
        FakeServer(always="500") as server,
        pytest.raises(JudgeUnavailable, match=r"gave no verdict after its retries.*rerun when it is up"),
    ):
        judge(server, tmp_path, monkeypatch, max_retries=1).verdicts("knowledge", prompts)
    with FakeServer() as server:  # back up: only the missing four are asked
        assert judge(server, tmp_path, monkeypatch).verdicts("knowledge", prompts) == EXPECTED
        assert len(server.requests) == 4


def test_garbage_forever_is_an_error_not_a_no(tasks, tmp_path, monkeypatch):
    with FakeServer(always="words") as server, pytest.raises(JudgeUnavailable, match="NotAVerdict"):
        judge(server, tmp_path, monkeypatch, reply_retries=1).verdicts("knowledge", prompts_for(tasks)[:1])
    cache = VerdictCache(tmp_path / "cache")
    assert cache.get_many([VerdictCache.key("openai", "fake-judge", 1, "knowledge", prompts_for(tasks)[0])]) == {}


def test_a_missing_key_is_named(tmp_path, monkeypatch):
    monkeypatch.delenv("NO_SUCH_KEY", raising=False)
    spec = {
        "name": "openai",
        "base_url": "http://127.0.0.1:9/v1",
        "model": "m",
        "api_key_env": "NO_SUCH_KEY",
        "prompts": str(ROOT / "config" / "judges" / "default.yaml"),
        "cache": str(tmp_path / "c"),
    }
    with pytest.raises(Exception, match="environment variable NO_SUCH_KEY is not set"):
        make_judge(spec)


def test_cascade_with_openai_in_the_judge_factory(tasks, tmp_path, monkeypatch):
    monkeypatch.setenv("JUDGE_KEY", SECRET)
    with FakeServer() as server:
        spec = {
            "name": "openai",
            "base_url": server.url,
            "model": "fake-judge",
            "api_key_env": "JUDGE_KEY",
            "prompts": str(ROOT / "config" / "judges" / "default.yaml"),
            "cache": str(tmp_path / "c"),
            "cascade": True,
            "concurrency": 2,
            "timeout": 5,
            "max_retries": 2,
        }
        cascade = make_judge(spec)
        verdicts = cascade.judge(tasks["world_numeric"], [NUMERIC] * len(RESPONSES), RESPONSES)
        # the rule judge is certain of "#### 1,432" (number formats); the server decides the rest
        assert [v.knowledge for v in verdicts] == [
            e or r == "#### 1,432" for e, r in zip(EXPECTED, RESPONSES, strict=True)
        ]
        assert [v.format for v in verdicts] == [r.strip() == "#### 1432" or r == "#### 1500" for r in RESPONSES]
        assert 0 < cascade.llm_share < 1
