"""Judges turn a response into verdicts: knowledge, format, and the strict benchmark score.

Knowledge asks whether the gold answer appears anywhere in the response, whatever its
format; format asks whether the response has the task's expected form, right or wrong.
The rule judge is deterministic and reads its rules from the task file; LLM judges plug in
behind the same interface. A degenerate response (softeval.data.answers.degenerate: punctuation
runs, one unit repeated over it, cut at its token budget before an answer) is never formatted,
whatever the task's pattern says, so never strictly correct either.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from softeval.data.answers import degenerate, is_word_char, mentions
from softeval.data.tasks import Task, gold_answers


@dataclass(frozen=True)
class Verdict:
    knowledge: bool
    format: bool
    strict: bool
    judge: str
    degenerate: str | None = None  # why the response is degenerate (so not formatted), for review tools


class Judge(Protocol):
    name: str

    def judge(
        self,
        task: Task,
        examples: Sequence[dict[str, Any]],
        responses: Sequence[str],
        kinds: Sequence[str] = ("knowledge", "format"),
        stop_reasons: Sequence[str | None] | None = None,
    ) -> list[Verdict]:
        """One verdict per (example, response), in order. `kinds` are the verdicts the caller
        uses; an expensive judge may leave the others to the rules (closed tasks take
        knowledge from option likelihoods, so their judge is asked for format only).
        `stop_reasons`: each response's generation stop reason ("eos", "stop", "length"), where
        known; a response cut at its budget ("length") before an answer is not formatted."""
        ...


class RuleJudge:
    """Deterministic verdicts from the task's own rules (format pattern, answer type)."""

    name = "rule"

    def judge(
        self,
        task: Task,
        examples: Sequence[dict[str, Any]],
        responses: Sequence[str],
        kinds: Sequence[str] = ("knowledge", "format"),
        stop_reasons: Sequence[str | None] | None = None,
    ) -> list[Verdict]:
        answer_type = "text" if task.closed else task.answer_type
        stops = [None] * len(responses) if stop_reasons is None else stop_reasons
        verdicts = []
        for example, response, stop in zip(examples, responses, stops, strict=True):
            question = str(example.get("question", ""))
            knowledge = any(mentions(response, gold, answer_type, question) for gold in gold_answers(example))
            reason = degenerate_reason(task, example, response, stop)
            verdicts.append(
                Verdict(
                    knowledge=knowledge,
                    format=reason is None and task.is_formatted(response, example),
                    strict=reason is None and task.is_strictly_correct(response, example),
                    judge=self.name,
                    degenerate=reason,
                )
            )
        return verdicts


def degenerate_reason(task: Task, example: dict[str, Any], response: str, stop_reason: str | None) -> str | None:
    """Why `response` is degenerate for this task (softeval.data.answers.degenerate), or None.
    The response "answered" when the task's extraction finds an answer with a letter or digit
    in it (a phrase task's answer is the whole response). A listed answer is never degenerate:
    a closed task's option exactly as written, or an open task's gold or alias itself up to case
    and whitespace ("Tora! Tora! Tora!" answers its question however it repeats; "Berlin::::::::"
    is not the gold "Berlin", though the two normalise alike)."""
    if _is_listed_answer(task, example, response):
        return None
    extracted = task.extract(response)
    answered = extracted is not None and any(is_word_char(c) for c in extracted)
    return degenerate(response, stop_reason, answered)


def _is_listed_answer(task: Task, example: dict[str, Any], response: str) -> bool:
    if task.closed:
        return response.strip() in task.option_responses(example)
    said = " ".join(response.casefold().split())
    return any(said == " ".join(gold.casefold().split()) for gold in gold_answers(example))
