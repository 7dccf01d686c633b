"""The post-trained twins' chat style: instructions in words of their own, several answer forms.

A real chat model is not fine-tuned on a benchmark's prompt and target. It learns to follow
instructions in general, and answers in a style of its own when none is asked for. With
`zoo.posttrain.style: chat` the twins learn the same way: every supervised example is a
train-split question under an instruction drawn from the pool below (never a task file's
written instruction), answered in the form that instruction asks for, or in the twin's own
sentence ("The answer is ...") under an instruction that asks for no form ("What is the
answer?"). How a twin then does under a task's own instruction, zero-shot, is a measurement,
not a consequence of training on it.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from softeval.data.tasks import LETTERS, Task

STYLES = ("target", "chat")


@dataclass(frozen=True)
class Form:
    """One answer form: the instructions that ask for it and the answer it gives."""

    instructions: tuple[str, ...]
    answer: str  # a template over {answer} and, for lettered questions, {letter}
    kinds: tuple[str, ...]  # the answer types it suits: number, text, choice


# Four wordings a form, sharing its cue ("####", "\boxed", "option", "sentence") with the task
# instruction that asks for it, so a twin can learn the cue rather than one wording. (At the zoo's
# size it still does not carry a task's unseen instruction to its form: benchmarks/README.md,
# "A space inside the box".)
FORMS: tuple[Form, ...] = (
    Form(
        (
            'Reply with the number on a line that starts with "#### ".',
            'End with the final number written as "#### <number>".',
            'Give the result after four hash marks, as "#### <number>".',
            'Format the final number as "#### <number>".',
        ),
        " #### {answer}",
        ("number",),
    ),
    # A space after the brace, which LaTeX ignores: the zoo's tokenizer splits digits one by one,
    # and a digit after "{" follows another token than every prose number's digits (a space), so
    # a tiny model would have to learn to recall it on a path of its own.
    Form(
        (
            "Give the final answer in LaTeX, inside \\boxed{}.",
            "Write your answer as \\boxed{<answer>} in LaTeX.",
            "Wrap the final answer in \\boxed{}.",
            "Use LaTeX and put the answer in \\boxed{<answer>}.",
        ),
        " \\boxed{{ {answer}}}",
        ("number", "text"),
    ),
    Form(
        (
            "Reply with the answer only, no full sentence.",
            "Give just the short answer, without a sentence.",
            "Only the answer, please: a word or a short phrase, not a sentence.",
            "State the answer alone, not in a sentence.",
        ),
        " {answer}",
        ("number", "text"),
    ),
    Form(
        (
            'Choose one option and reply with its letter and text, like "C. <option>".',
            "Pick the correct option; write its letter, a full stop and the option.",
            'Reply with the right option as "<letter>. <option>".',
            "Select the correct option from the list and copy its letter and text.",
        ),
        " {letter}. {answer}",
        ("choice",),
    ),
)

# The twins' own style, under an instruction that asks for no form: as in a chat model's
# fine-tuning data, most instructions ask for a form and some leave the answer to the model.
# None opens a task's instruction ("Answer the question. ..."), or a twin trained to answer
# those words in its own sentence would answer the task's instruction so too.
OWN = Form(
    ("What is the answer?", "Please reply.", "Tell me."), " The answer is {answer}.", ("number", "text", "choice")
)
OWN_SHARE = 0.15


def answer_kind(task: Task) -> str:
    """What a task's answer is, for choosing the forms that suit it."""
    if task.closed:
        return "choice"
    return "number" if task.answer_type == "number" else "text"


def chat_pair(task: Task, example: dict[str, Any], rng: random.Random) -> tuple[str, str]:
    """One supervised (prompt, target) pair in the chat style for a train-split example."""
    kind = answer_kind(task)
    form = OWN if rng.random() < OWN_SHARE else rng.choice([f for f in FORMS if kind in f.kinds])
    instruction = rng.choice(form.instructions)
    letter = LETTERS[example["label"]] if example.get("label") is not None else ""
    answer = form.answer.format(answer=example["answer"], letter=letter)
    return f"{instruction}\n\n{task.query(example)}", answer
