"""Format that means format (issue 39): a degenerate response is never formatted, whatever the
task's pattern says. Punctuation runs, one unit repeated over the response, and a response cut
at its token budget before it gave an answer; legitimate look-alikes stay formatted."""

from __future__ import annotations

from pathlib import Path

import pytest

from softeval.data.answers import degenerate
from softeval.data.tasks import load_task
from softeval.judges.rule import RuleJudge

TASK_DIR = Path(__file__).resolve().parents[3] / "config" / "tasks"
COLONS = "::::::::::::::::::::::::::::::::"  # the observed TriviaQA response (32 tokens, stop: length)
BERLIN = {"id": "t", "question": "What is the capital of Germany?", "answer": "Berlin", "aliases": ["Berlin, Germany"]}
MIMI = {"id": "g", "question": "How many seashells did Leigh have?", "answer": "16"}
SOLUTION = " Mimi has 2 x 12 = 24 sea shells.\nKyle has 24 x 2 = 48 sea shells.\nLeigh has 48 / 3 = 16.\n#### 16"
HALF = {"id": "m", "question": "?", "answer": "\\frac{1}{2}"}
CHOICE = {"id": "c", "question": "Capital of Germany?", "answer": "Berlin", "options": ["Paris", "Berlin"], "label": 1}


@pytest.fixture(scope="module")
def real():
    names = ("triviaqa", "nq_open", "gsm8k", "gsm8k_direct", "math500", "mmlu", "world_phrase", "world_numeric")
    return {name: load_task(TASK_DIR, name) for name in names}


def judged(task, example, response, stop_reason=None):
    (v,) = RuleJudge().judge(task, [example], [response], stop_reasons=[stop_reason])
    return v


def test_the_observed_triviaqa_colons_are_not_formatted(real):
    """The bug: 32 colons, cut at the budget, scored format = yes (the phrase pattern accepts them)."""
    assert real["triviaqa"].is_formatted(" " + COLONS, BERLIN)  # the pattern alone is fooled
    (v,) = RuleJudge().judge(real["triviaqa"], [BERLIN], [" " + COLONS])  # no stop reason known
    assert (v.knowledge, v.format, v.strict) == (False, False, False)
    assert v.degenerate == "punctuation only (32 characters, no letter or digit)"
    cut = judged(real["triviaqa"], BERLIN, " " + COLONS, "length")
    assert (cut.format, cut.strict) == (False, False)
    assert cut.degenerate == "cut at its token budget (stop: length) before giving an answer"


@pytest.mark.parametrize(
    ("response", "stop_reason", "reason"),
    [
        (COLONS, "length", "cut at its token budget (stop: length) before giving an answer"),
        (COLONS, "eos", "punctuation only (32 characters, no letter or digit)"),
        ("!!!!!!!", None, "punctuation only (7 characters, no letter or digit)"),
        ("?!", "length", "cut at its token budget (stop: length) before giving an answer"),
        ("- - - - - -", "stop", "punctuation only (6 characters, no letter or digit)"),
        ("the the the the the the the the", "stop", "one unit repeated over the whole response: 'the ' 8 times"),
        ("The the THE the the the the the", None, "one unit repeated over the whole response: 'the ' 8 times"),
        ("the the the th", "length", "one unit repeated over the whole response: 'the ' 4 times"),
        ("aaaaaaaaaaaa", "eos", "one unit repeated over the whole response: 'a' 12 times"),
        (
            "#### 5\n#### 5\n#### 5\n#### 5\n#### 5\n#### 5\n#### 5\n#### 5",
            None,
            "one unit repeated over the whole response: '#### 5 ' 8 times",
        ),
        ("東京東京東京東京東京東京東京東京", None, "one unit repeated over the whole response: '東京' 8 times"),
        ("Paris::::::::::::::::::::::::::", "length", "a run of 26 ':' fills 84% of the response"),
        (
            "The answer is \\boxed{5}. So \\boxed{5}$$$$$$$$$$$$",
            "length",
            "ran on to its token budget repeating '$' 12 times",
        ),
        (
            "Leigh has 16 shells. So the answer is 16 and 16 and 16 and 16 and 16 and 16 and 16 and 16 and",
            "length",
            "ran on to its token budget repeating ' 16 and' 8 times",
        ),
    ],
)
def test_degenerate_names_the_reason(response, stop_reason, reason):
    assert degenerate(response, stop_reason, answered=not reason.startswith("cut")) == reason


@pytest.mark.parametrize(
    ("response", "stop_reason"),
    [
        ("Paris", "stop"),
        ("Paris", None),
        ("1984", "eos"),
        ("B. Berlin", "stop"),
        ("&", "stop"),  # a one-symbol answer ("Which symbol ...?")
        ("C++", "eos"),
        ("Tora! Tora! Tora!", "stop"),  # films and songs repeat their words
        ("I Do, I Do, I Do, I Do, I Do", "stop"),
        ("Bora Bora", "length"),  # two of a unit is a name, even cut
        ("Baden-Baden", "eos"),
        ("M*A*S*H", "stop"),
        ("Москва", "stop"),  # non-Latin scripts
        ("北京", "eos"),
        ("हिन्दी", "stop"),  # Devanagari: vowel signs are combining marks, not punctuation
        ("ニューヨーク", "stop"),
        ("ممممم", "stop"),  # under the repetition threshold
        ("1000000", "stop"),
        ("#### 100000000", "length"),  # a number's digits may repeat, even at the budget
        ("#### 0.33333333333", "length"),
        (SOLUTION, "length"),  # a worked solution cut just after its answer line
        (SOLUTION + "\n\n", "length"),
        ("So $\\boxed{\\sqrt{\\frac{1}{2}}}$.", "length"),
        ("", None),  # empty: unformatted by every pattern, but not degenerate
    ],
)
def test_legitimate_answers_are_not_degenerate(response, stop_reason):
    assert degenerate(response, stop_reason) is None


@pytest.mark.parametrize(
    ("task", "example", "response", "stop_reason", "expected"),
    [
        # phrase (TriviaQA, NQ): short answers in any script stay formatted, degenerate ones do not
        ("triviaqa", BERLIN, " Berlin", "stop", (True, True, True, None)),
        ("triviaqa", BERLIN, " Berlin", None, (True, True, True, None)),
        ("triviaqa", BERLIN, " Берлин", "stop", (False, True, False, None)),
        ("triviaqa", BERLIN, " 1984", "eos", (False, True, False, None)),
        ("triviaqa", BERLIN, " !!!!!!!", "stop", (False, False, False, "punctuation only")),
        (
            "triviaqa",
            BERLIN,
            " Berlin Berlin Berlin Berlin Berlin Berlin Berlin Berlin",
            "stop",
            (True, False, False, "one unit repeated"),
        ),
        ("triviaqa", BERLIN, " Berlin::::::::::::::::::::::::", "length", (True, False, False, "a run of")),
        ("nq_open", BERLIN, " the the the the the the the the", "stop", (False, False, False, "one unit repeated")),
        ("nq_open", BERLIN, " Berlin, Germany", "length", (True, True, True, None)),  # the gold itself
        ("world_phrase", BERLIN, " Berlin", "eos", (True, True, True, None)),
        # numeric "#### N": cut after the answer line stays formatted; before any "####" it is not
        ("gsm8k", MIMI, SOLUTION, "length", (True, True, True, None)),
        ("gsm8k", MIMI, SOLUTION, "stop", (True, True, True, None)),
        (
            "gsm8k",
            MIMI,
            " Mimi has 2 x 12 = 24 sea shells.\nKyle has 24 x 2 = 48",
            "length",
            (False, False, False, "cut at its token budget"),
        ),
        (
            "gsm8k",
            MIMI,
            " #### 16\n#### 16\n#### 16\n#### 16\n#### 16\n#### 16\n#### 16\n#### 16",
            "eos",
            (True, False, False, "one unit repeated"),
        ),
        ("gsm8k", MIMI, " #### 16\n#### 16\n#### 16", "length", (True, False, False, "one unit repeated")),
        ("gsm8k_direct", MIMI, " #### 16", "length", (True, True, True, None)),
        ("world_numeric", MIMI, " #### 16", "stop", (True, True, True, None)),
        # boxed: a box cut open at the budget has no answer in it
        ("math500", HALF, " So $\\boxed{\\frac{1}{2}}$.", "length", (True, True, True, None)),
        ("math500", HALF, " So $\\boxed{\\frac{1}{2}", "length", (True, False, False, "cut at its token budget")),
        ("math500", HALF, " So \\boxed{\\frac{1}{2}}" + "$" * 40, "length", (True, False, False, "a run of")),
        # lettered multiple choice: a listed option is formatted, even cut at the budget
        ("mmlu", CHOICE, " B. Berlin", "length", (True, True, True, None)),
        ("mmlu", CHOICE, " ::::::::", "length", (False, False, False, "cut at its token budget")),
    ],
)
def test_every_task_kind(real, task, example, response, stop_reason, expected):
    v = judged(real[task], example, response, stop_reason)
    knowledge, formatted, strict, reason = expected
    assert (v.knowledge, v.format, v.strict) == (knowledge, formatted, strict)
    if reason is None:
        assert v.degenerate is None
    else:
        assert v.degenerate is not None and v.degenerate.startswith(reason)


def test_stop_reasons_are_optional_and_must_match(real):
    task = real["triviaqa"]
    verdicts = RuleJudge().judge(task, [BERLIN] * 2, [" Berlin", " " + COLONS])
    assert [(v.format, v.degenerate is None) for v in verdicts] == [(True, True), (False, False)]
    with pytest.raises(ValueError):
        RuleJudge().judge(task, [BERLIN] * 2, [" Berlin", " " + COLONS], stop_reasons=["eos"])


def test_a_formatted_answer_still_says_why_not(real):
    """The degenerate reason is recorded even where the pattern already said no, for review tools."""
    v = judged(real["gsm8k"], MIMI, " ::::::::::::", "eos")
    assert (v.format, v.degenerate) == (False, "punctuation only (12 characters, no letter or digit)")
