"""The evaluation methods: how each one turns a test example into model input.

zero_shot    the task's written instruction, then the question;
few_shot     the instruction, k train examples (the same for every model), the question: by
             default the same k for every question (drawn once by the seed); a task with
             prompt.shots first_in_group takes the first k of the question's group (MMLU's
             subject, as lm-evaluation-harness does);
soft_prompt  the zero-shot prompt after tuned vectors (see softeval.engine.softprompt).

Every method's prompts share a text prefix (instruction, shots); the generator encodes
it once and reuses its KV cache across the test set.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from softeval.data.tasks import FIRST_IN_GROUP, Task
from softeval.names import FEW_SHOT, METHODS
from softeval.schema import InputError

SHOT_SEPARATOR = "\n\n"


CHAT_SLOT = "\u0000softeval-user-turn\u0000"
REPLY_SLOT = "\u0000softeval-assistant-turn\u0000"


@dataclass(frozen=True)
class ChatWrap:
    """A chat template around one user turn: head + user text + tail (the assistant's cue).

    Post-trained models whose entry sets chat_template get every prompt (instruction, shots,
    question) as one user message; their responses start right after the assistant cue, so
    targets lose their leading space. Base models never get a template.
    """

    head: str
    tail: str
    end_of_turn: tuple[int, ...] = ()  # the template's end-of-turn token (Gemma's <end_of_turn>)

    @classmethod
    def from_tokenizer(cls, tokenizer: Any) -> ChatWrap:
        text = tokenizer.apply_chat_template(
            [{"role": "user", "content": CHAT_SLOT}], add_generation_prompt=True, tokenize=False
        )
        if text.count(CHAT_SLOT) != 1:
            raise InputError(
                "the tokenizer's chat template does not place the user message once; set chat_template: false"
            )
        head, tail = text.split(CHAT_SLOT)
        bos = tokenizer.bos_token
        adds_bos = bos is not None and tokenizer("x")["input_ids"][:1] == [tokenizer.bos_token_id]
        if adds_bos and head.startswith(bos):
            head = head[len(bos) :]  # the tokenizer adds BOS itself; the template's copy would double it
        return cls(head, tail, end_of_turn_ids(tokenizer))

    def wrap(self, user_text: str) -> str:
        return self.head + user_text + self.tail


def end_of_turn_ids(tokenizer: Any) -> tuple[int, ...]:
    """The special token a chat template closes an assistant turn with (<end_of_turn>, <|im_end|>,
    <|eot_id|>): a post-trained model writing it has finished, even where its generation config
    names only the tokenizer's EOS. Empty when the template shows none."""
    try:
        text = tokenizer.apply_chat_template(
            [{"role": "user", "content": CHAT_SLOT}, {"role": "assistant", "content": REPLY_SLOT}], tokenize=False
        )
    except Exception:  # a template that refuses a finished assistant turn: EOS alone stops
        return ()
    if REPLY_SLOT not in text:
        return ()
    after = tokenizer(text.split(REPLY_SLOT, 1)[1], add_special_tokens=False)["input_ids"]
    special = set(tokenizer.all_special_ids) | set(getattr(tokenizer, "added_tokens_decoder", {}))
    return next(((i,) for i in after if i in special), ())


def response_target(target: str, chat: ChatWrap | None) -> str:
    """A target as the model writes it: after a chat template's assistant cue, with no leading space."""
    return target.lstrip() if chat is not None else target


@dataclass(frozen=True)
class MethodPrompts:
    """The prompts of one method over a test set, and the text prefix they all share."""

    method: str
    prompts: list[str]
    shared_prefix: str
    shot_ids: list[str]
    chat: ChatWrap | None = None


def few_shot_examples(train: Sequence[dict[str, Any]], k: int, seed: int, task: Task) -> list[dict[str, Any]]:
    """k train examples chosen by a seed that depends on the task only, so every model sees the same shots."""
    if k > len(train):
        raise InputError(f"task {task.name}: few_shot.k is {k} but the train split has {len(train)} examples")
    rng = random.Random(f"{seed}-{task.name}-few-shot")
    return [train[i] for i in sorted(rng.sample(range(len(train)), k))]


def question_shots(
    task: Task, pool: Sequence[dict[str, Any]], test: Sequence[dict[str, Any]], k: int, seed: int
) -> list[list[dict[str, Any]]]:
    """Each test question's shots: the task's seeded k (the same for all), or with prompt.shots
    first_in_group the first k of the pool in the question's group (fewer where it has fewer,
    as the harness's first_n sampler gives; none is an error that names the group)."""
    if task.shots != FIRST_IN_GROUP:
        shots = few_shot_examples(pool, k, seed, task)
        return [shots for _ in test]
    by_group: dict[str, list[dict[str, Any]]] = {}
    for example in pool:
        by_group.setdefault(example["group"], []).append(example)
    missing = sorted({example["group"] for example in test} - set(by_group))
    if missing:
        raise InputError(
            f"task {task.name}: prompt.shots is first_in_group but the few-shot split has no example of group "
            f"{', '.join(repr(g) for g in missing[:5])}; add some or use shots: seeded"
        )
    return [by_group[example["group"]][:k] for example in test]


def build_prompts(
    task: Task,
    method: str,
    test: Sequence[dict[str, Any]],
    shots: Sequence[dict[str, Any]] = (),
    chat: ChatWrap | None = None,
    per_question: Sequence[Sequence[dict[str, Any]]] | None = None,
) -> MethodPrompts:
    """Prompts for `method`; soft_prompt uses the zero-shot text (its vectors come separately).

    With `chat`, the whole text is the user turn of the chat template. Few-shot prompts take
    `shots` before every question, or `per_question` (question_shots) each its own; the shared
    prefix is what all prompts start with (with shots of their own: the instruction).
    """
    if method not in METHODS:
        raise InputError(f"unknown method {method!r}; use one of {', '.join(METHODS)}")
    head, tail = (chat.head, chat.tail) if chat is not None else ("", "")
    prefix = task.instruction + SHOT_SEPARATOR
    if method != FEW_SHOT:
        return MethodPrompts(method, [head + prefix + task.query(ex) + tail for ex in test], head + prefix, [], chat)
    if per_question is not None and len({tuple(s["id"] for s in q) for q in per_question}) > 1:
        prompts = [
            head + prefix + _shot_block(task, own) + task.query(example) + tail
            for example, own in zip(test, per_question, strict=True)
        ]
        shot_ids = list(dict.fromkeys(str(s["id"]) for own in per_question for s in own))
        return MethodPrompts(method, prompts, head + prefix, shot_ids, chat)
    if per_question is not None:  # every question has the same shots: one shared prefix
        shots = per_question[0] if per_question else []
    prefix += _shot_block(task, shots)
    prompts = [head + prefix + task.query(example) + tail for example in test]
    return MethodPrompts(method, prompts, head + prefix, [str(s["id"]) for s in shots], chat)


def _shot_block(task: Task, shots: Sequence[dict[str, Any]]) -> str:
    return "".join(task.query(shot) + task.target(shot) + SHOT_SEPARATOR for shot in shots)
