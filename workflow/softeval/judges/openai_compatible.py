"""A judge behind any OpenAI-compatible chat endpoint (e.g. vLLM serving Qwen3-32B).

The official `openai` client does the transport; the retries are this module's, so that every
sign of an overloaded server reaches the job's in-flight cap:
- at most `concurrency` requests of a job in flight, a cap that halves when the server shows
  overload (a timeout, 429, 408/409, 5xx, a dropped connection) and grows back by one per round
  of answers (additive increase, multiplicative decrease, as TCP does): ~100 judge jobs share one
  server, and each backs off on its own instead of all re-sending at once;
- each such failure is retried `max_retries` times with exponential backoff and jitter (1 s
  doubling to 30 s, or the server's Retry-After); a request the server refuses for good (400:
  a prompt longer than its --max-model-len, 401, 404) is not retried and is named;
- replies that are not a verdict (malformed JSON, other words) are asked again;
- several servers (a comma-separated base_url: a job array of judge servers) share the requests
  in turn, and a request that fails on one is retried on the next.
The verdict cache is committed after every answer, and an endpoint that stays down is one clear
error, never an unjudged example recorded as wrong. The API key is read from the environment
variable the config names and is never logged or written.
"""

from __future__ import annotations

import itertools
import json
import os
import random
import threading
import time
from collections.abc import Sequence
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from typing import Any

from softeval.judges.local_lm import JudgePrompts, VerdictCache
from softeval.schema import InputError


class JudgeUnavailable(InputError):
    """The judge endpoint failed after all retries; verdicts obtained so far are cached."""


class NotAVerdict(Exception):
    """A reply that parsed but does not say yes or no."""


BACKOFF_BASE = 1.0  # seconds before the first retry of an overloaded request, doubling per retry
BACKOFF_CAP = 30.0  # the longest wait between two tries (a server's Retry-After may ask up to 120 s)
RETRY_AFTER_CAP = 120.0
TOO_LONG = ("maximum context length", "maximum model length", "max_model_len", "context length")


class InFlight:
    """The job's requests in flight: at most `limit`, which halves (once per round of requests sent
    before the last cut) when the server shows overload and grows by 1/limit per answer, between 1
    and `ceiling` (the configured concurrency)."""

    def __init__(self, ceiling: int) -> None:
        self.ceiling, self.limit = ceiling, float(ceiling)
        self.active = self.round = self.peak = 0
        self.condition = threading.Condition()

    def acquire(self) -> int:
        with self.condition:
            while self.active >= max(1, int(self.limit)):
                self.condition.wait()
            self.active += 1
            self.peak = max(self.peak, self.active)
            return self.round

    def release(self, sent_in: int, overloaded: bool) -> None:
        with self.condition:
            self.active -= 1
            if overloaded and sent_in == self.round:  # the other requests of this round saw the same load
                self.limit, self.round = max(1.0, self.limit / 2), self.round + 1
            elif not overloaded:
                self.limit = min(float(self.ceiling), self.limit + 1 / self.limit)
            self.condition.notify_all()


def _transient(err: Exception) -> bool:
    """Overload or a passing fault: a timeout, a dropped connection, 408/409/429 or 5xx."""
    from openai import APIConnectionError, APIStatusError

    if isinstance(err, APIConnectionError):  # APITimeoutError is one
        return True
    return isinstance(err, APIStatusError) and (err.status_code in (408, 409, 429) or err.status_code >= 500)


def _retry_after(err: Exception) -> float | None:
    response = getattr(err, "response", None)
    value = response.headers.get("retry-after") if response is not None else None
    try:
        seconds = float(value) if value is not None else None
    except ValueError:
        return None
    return min(seconds, RETRY_AFTER_CAP) if seconds is not None and seconds >= 0 else None


class OpenAIJudge:
    backend = "openai"

    def __init__(
        self,
        *,
        base_url: str,
        model: str,
        prompts: JudgePrompts,
        cache: VerdictCache,
        api_key_env: str | None = None,
        concurrency: int = 8,
        timeout: float = 60.0,
        max_retries: int = 5,
        reply_retries: int = 3,
        extra_body: dict[str, Any] | None = None,
    ) -> None:
        from openai import OpenAI

        key = os.environ.get(api_key_env) if api_key_env else None
        if api_key_env and not key:
            raise InputError(
                f"judge 'openai': environment variable {api_key_env} is not set; export the API key there "
                "(keys are never read from config files)"
            )
        urls = [url.strip() for url in base_url.split(",") if url.strip()]
        if not urls:
            raise InputError("judge 'openai': the server URL is empty; set evaluation.judge.base_url (or base_url_env)")
        # retries are this class's (max_retries=0 here): every overload signal reaches the in-flight cap
        self.clients = [OpenAI(base_url=url, api_key=key or "unused", timeout=timeout, max_retries=0) for url in urls]
        self._turn = itertools.count()
        self.base_url, self.model_id, self.prompts, self.cache = ",".join(urls), model, prompts, cache
        self.concurrency, self.reply_retries, self.max_retries = concurrency, reply_retries, max_retries
        self.in_flight = InFlight(concurrency)
        self.extra_body = extra_body or None  # server-specific request fields, e.g. vLLM's chat_template_kwargs
        self.name = f"openai:{model}"
        self.asked = 0

    def _words(self, kind: str) -> tuple[str, str]:
        templates = self.prompts.templates[kind]
        return templates["answer_yes"].strip().lower(), templates["answer_no"].strip().lower()

    def _read(self, reply: Any, kind: str) -> bool:
        """yes/no from the first token's log-probabilities if given, else from the text."""
        yes, no = self._words(kind)
        try:
            choice = reply.choices[0]
        except (AttributeError, IndexError, TypeError):
            raise NotAVerdict(f"no choices in reply: {str(reply)[:80]!r}") from None
        content = getattr(choice, "logprobs", None) and choice.logprobs.content
        if content:
            scores: dict[str, float] = {}
            for candidate in content[0].top_logprobs or []:
                word = candidate.token.strip().lower()
                if word in (yes, no):
                    scores[word] = max(scores.get(word, float("-inf")), candidate.logprob)
            if scores:
                return scores.get(yes, float("-inf")) > scores.get(no, float("-inf"))
        text = ((choice.message.content if choice.message else "") or "").strip().lower()
        if text.startswith(yes):
            return True
        if text.startswith(no):
            return False
        raise NotAVerdict(f"reply is neither {yes!r} nor {no!r}: {text[:40]!r}")

    def _request(self, prompt: str) -> Any:
        """One reply, through overload: each transient failure halves the in-flight cap and is
        tried again after a backoff (on the next server, where there are several)."""
        for attempt in range(self.max_retries + 1):
            client = self.clients[next(self._turn) % len(self.clients)]
            sent_in = self.in_flight.acquire()
            try:
                reply = client.chat.completions.create(
                    model=self.model_id,
                    messages=[{"role": "user", "content": prompt}],
                    max_tokens=1,
                    temperature=0,
                    logprobs=True,
                    top_logprobs=5,
                    extra_body=self.extra_body,
                )
            except Exception as err:
                transient = _transient(err)
                self.in_flight.release(sent_in, overloaded=transient)
                if not transient:
                    raise
                if attempt == self.max_retries:
                    raise JudgeUnavailable(self._down(err)) from None
                wait_s = _retry_after(err)
                if wait_s is None:
                    wait_s = min(BACKOFF_CAP, BACKOFF_BASE * 2**attempt) * (0.5 + 0.5 * random.random())
                time.sleep(wait_s)
                continue
            self.in_flight.release(sent_in, overloaded=False)
            return reply
        raise AssertionError("unreachable")  # pragma: no cover

    def _ask(self, kind: str, prompt: str) -> bool:
        from openai import APIResponseValidationError, APIStatusError

        last: Exception | None = None
        for attempt in range(self.reply_retries + 1):
            try:
                return self._read(self._request(prompt), kind)
            except (NotAVerdict, json.JSONDecodeError, APIResponseValidationError) as err:  # garbage: ask again
                last = err
            except APIStatusError as err:  # refused for good (4xx other than 408/409/429): no retry helps
                raise JudgeUnavailable(self._refused(err)) from None
            time.sleep(min(8.0, 0.25 * 2**attempt) * (1 - 0.25 * random.random()))
        raise JudgeUnavailable(self._down(last))

    def _refused(self, err: Exception) -> str:
        detail = str(err).splitlines()[0][:200]
        if any(words in detail.lower() for words in TOO_LONG):
            fix = (
                "a judge prompt is longer than the server's context: start it with a larger --max-model-len "
                "(JUDGE_MAX_MODEL_LEN=... sbatch workflow/scripts/judge_server.sbatch; docs/cluster.md sizes it)"
            )
        else:
            fix = "fix the server, the served model's name (evaluation.judge.model) or the key, then rerun"
        return (
            f"judge endpoint {self.base_url} (model {self.model_id}) refused a request ({type(err).__name__}: "
            f"{detail}); {fix}; verdicts obtained so far are cached"
        )

    def _down(self, err: Exception | None) -> str:
        kind = type(err).__name__ if err else "no reply"
        detail = str(err).splitlines()[0][:120] if err else ""
        return (
            f"judge endpoint {self.base_url} (model {self.model_id}) gave no verdict after its retries "
            f"({kind}: {detail}); verdicts obtained so far are cached in the verdict cache; rerun when it is up"
        )

    def verdicts(self, kind: str, prompts: Sequence[str]) -> list[bool]:
        """One verdict per prompt: cached ones first, the rest concurrently; each answer is
        committed to the cache as it arrives, so a failure or kill loses none."""
        keys = [VerdictCache.key(self.backend, self.model_id, self.prompts.version, kind, p) for p in prompts]
        known = self.cache.get_many(keys)
        todo = {key: prompt for key, prompt in zip(keys, prompts, strict=True) if key not in known}
        if todo:
            with ThreadPoolExecutor(max_workers=self.concurrency) as pool:
                futures = {pool.submit(self._ask, kind, prompt): key for key, prompt in todo.items()}
                pending = set(futures)
                while pending:
                    done, pending = wait(pending, return_when=FIRST_EXCEPTION)
                    for future in done:
                        if future.exception() is None:
                            verdict = future.result()
                            self.cache.put_many({futures[future]: verdict})
                            known[futures[future]] = verdict
                            self.asked += 1
                    failed = [f for f in done if f.exception() is not None]
                    if failed:
                        for future in pending:
                            future.cancel()
                        finishing = [f for f in pending if not f.cancelled()]
                        wait(finishing)  # answers already on their way are kept too
                        for future in finishing:
                            if future.exception() is None:
                                self.cache.put_many({futures[future]: future.result()})
                        raise failed[0].exception()  # type: ignore[misc]
        return [known[key] for key in keys]
