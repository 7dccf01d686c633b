"""The hand-labelled validation set and the rule judge's agreement with it."""

from __future__ import annotations

import json

import pytest

from softeval.judges.rule import RuleJudge
from softeval.judges.validation import cohen_kappa, load_validation, validate_judge, validation_tasks
from softeval.schema import InputError
from tests.conftest import ROOT, TASK_DIR

VALIDATION = ROOT / "config" / "judges" / "validation.jsonl"
STYLES = {
    "correct_formatted",
    "correct_unformatted",
    "wrong_formatted",
    "wrong_unformatted",
    "multiple_answers",
    "reasoning_only",
    "near_miss",
    "refusal",
    "empty",
    "very_long",
    "non_english",
    "adversarial",
}


@pytest.fixture(scope="module")
def summary():
    rows = load_validation(VALIDATION)
    return validate_judge(RuleJudge(), validation_tasks(rows, TASK_DIR), rows)


def test_the_set_covers_every_style_of_every_task():
    rows = load_validation(VALIDATION)
    assert len(rows) >= 150 and len({r["id"] for r in rows}) == len(rows)
    for task in ("world_numeric", "world_phrase", "world_boxed", "world_choice"):
        assert {r["category"] for r in rows if r["task"] == task} >= STYLES, task
    assert {(r["knowledge"], r["format"]) for r in rows} == {(True, True), (True, False), (False, True), (False, False)}


def test_rule_judge_agrees_with_the_hand_labels(summary):
    assert summary["n"] >= 150
    assert summary["knowledge"]["accuracy"] >= 0.95 and summary["format"]["accuracy"] >= 0.95
    assert summary["knowledge"]["kappa"] > 0.9 and summary["format"]["kappa"] > 0.9


def test_word_boundaries_question_echoes_and_worked_solutions_are_labelled_and_agreed(summary):
    rows = load_validation(VALIDATION)
    assert {r["task"] for r in rows} >= {"gsm8k", "math500", "triviaqa"}
    assert sum(r["category"] in ("boundary", "echo") for r in rows) >= 8
    for category in ("boundary", "echo"):
        assert summary["per_category"][category] == 1.0


def test_responses_that_address_the_judge_do_not_flip_it(summary):
    assert summary["per_category"]["adversarial"] == 1.0
    assert not [d for d in summary["disagreements"] if d["category"] == "adversarial"]


def test_cohen_kappa():
    assert cohen_kappa([True, False, True, False], [True, False, True, False]) == 1.0
    # 50% observed agreement with 50% expected by chance: no agreement beyond chance.
    assert cohen_kappa([True, True, False, False], [True, False, True, False]) == pytest.approx(0.0)
    # Worked example: 20 yes/yes, 5 yes/no, 10 no/yes, 15 no/no -> po 0.7, pe 0.5, kappa 0.4.
    a = [True] * 25 + [False] * 25
    b = [True] * 20 + [False] * 5 + [True] * 10 + [False] * 15
    assert cohen_kappa(a, b) == pytest.approx(0.4)


def test_a_bad_row_is_named_with_its_line(tmp_path):
    path = tmp_path / "v.jsonl"
    path.write_text(json.dumps({"id": "x", "task": "world_numeric"}) + "\n")
    with pytest.raises(InputError, match=r"v\.jsonl:1: field 'category' is missing"):
        load_validation(path)
