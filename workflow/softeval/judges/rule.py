"""Judges turn a response into verdicts: knowledge, format, and the strict benchmark score.

Knowledge asks whether the gold answer appears anywhere in the response, whatever its
format; format asks whether the response has the task's expected form, right or wrong.
The rule judge is deterministic and reads its rules from the task file; LLM judges plug in
behind the same interface.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from softeval.data.answers import mentions
from softeval.data.tasks import Task, gold_answers


@dataclass(frozen=True)
class Verdict:
    knowledge: bool
    format: bool
    strict: bool
    judge: str


class Judge(Protocol):
    name: str

    def judge(
        self,
        task: Task,
        examples: Sequence[dict[str, Any]],
        responses: Sequence[str],
        kinds: Sequence[str] = ("knowledge", "format"),
    ) -> list[Verdict]:
        """One verdict per (example, response), in order. `kinds` are the verdicts the caller
        uses; an expensive judge may leave the others to the rules (closed tasks take
        knowledge from option likelihoods, so their judge is asked for format only)."""
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
    ) -> list[Verdict]:
        answer_type = "text" if task.closed else task.answer_type
        verdicts = []
        for example, response in zip(examples, responses, strict=True):
            question = str(example.get("question", ""))
            knowledge = any(mentions(response, gold, answer_type, question) for gold in gold_answers(example))
            verdicts.append(
                Verdict(
                    knowledge=knowledge,
                    format=task.is_formatted(response, example),
                    strict=task.is_strictly_correct(response, example),
                    judge=self.name,
                )
            )
        return verdicts
