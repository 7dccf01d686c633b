"""A judge behind any OpenAI-compatible chat endpoint (e.g. vLLM serving Qwen3-32B).

The official `openai` client does the transport: timeouts, and retries with exponential
backoff and jitter on 408/409/429/5xx, timeouts and dropped connections, honouring
Retry-After. On top of it: a concurrency limit, retries of replies that are not a verdict
(malformed JSON, other words), the verdict cache committed after every answer, and one
clear error when the endpoint stays down — never an unjudged example recorded as wrong.
The API key is read from the environment variable the config names and is never logged
or written.
"""

from __future__ import annotations

import json
import os
import random
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
        self.client = OpenAI(base_url=base_url, api_key=key or "unused", timeout=timeout, max_retries=max_retries)
        self.base_url, self.model_id, self.prompts, self.cache = base_url, model, prompts, cache
        self.concurrency, self.reply_retries = concurrency, reply_retries
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

    def _ask(self, kind: str, prompt: str) -> bool:
        from openai import APIError, APIResponseValidationError

        last: Exception | None = None
        for attempt in range(self.reply_retries + 1):
            try:
                reply = self.client.chat.completions.create(
                    model=self.model_id,
                    messages=[{"role": "user", "content": prompt}],
                    max_tokens=1,
                    temperature=0,
                    logprobs=True,
                    top_logprobs=5,
                    extra_body=self.extra_body,
                )
                return self._read(reply, kind)
            except (NotAVerdict, json.JSONDecodeError, APIResponseValidationError) as err:  # garbage: ask again
                last = err
            except APIError as err:  # 429/5xx/timeouts/connection: the client has already retried
                raise JudgeUnavailable(self._down(err)) from None
            time.sleep(min(8.0, 0.25 * 2**attempt) * (1 - 0.25 * random.random()))
        raise JudgeUnavailable(self._down(last))

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
