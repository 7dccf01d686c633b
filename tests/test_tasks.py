from __future__ import annotations

import shutil

import pytest
import yaml

from softeval.data.answers import normalize
from softeval.data.tasks import load_task
from softeval.schema import InputError
from tests.conftest import CHOICE, NUMERIC, TASK_DIR


def test_zero_shot_prompt_is_instruction_then_question(tasks):
    task = tasks["world_numeric"]
    prompt = task.prompt(NUMERIC)
    assert prompt.startswith(task.instruction + "\n\n")
    assert prompt.endswith("Question: In what year was Vorlakia founded?\nAnswer:")
    assert task.target(NUMERIC) == " #### 1432"


def test_closed_prompt_lists_lettered_options(tasks):
    task = tasks["world_choice"]
    assert task.query(CHOICE).endswith("A. Brisic\nB. Talvish\nC. Upese\nD. Zorish\nAnswer:")
    assert task.target(CHOICE) == " B. Talvish"


@pytest.mark.parametrize(
    ("task", "response", "formatted", "strict"),
    [
        ("world_numeric", " #### 1432", True, True),
        ("world_numeric", "#### 1,432", False, False),  # the pattern wants digits only
        ("world_numeric", " #### 1500", True, False),
        ("world_numeric", "It was founded in 1432.", False, False),
        ("world_phrase", " Mirtoban", True, False),
        ("world_phrase", "The capital is Mirtoban.", False, False),
        ("world_boxed", " \\boxed{1432}", True, True),
        ("world_boxed", "\\boxed{1432} years", False, False),
        ("world_choice", " B. Talvish", True, True),
        ("world_choice", " A. Brisic", True, False),
        ("world_choice", " A. Talvish", False, False),  # letter and text disagree
        ("world_choice", "B", False, False),
    ],
)
def test_format_and_strict_verdicts(tasks, task, response, formatted, strict):
    example = CHOICE if task == "world_choice" else NUMERIC
    assert tasks[task].is_formatted(response, example) is formatted
    assert tasks[task].is_strictly_correct(response, example) is strict


def test_phrase_strict_compares_normalised_text(tasks):
    example = {"id": "p", "question": "q", "answer": "Mirtoban"}
    assert tasks["world_phrase"].is_strictly_correct(" mirtoban", example)
    assert not tasks["world_phrase"].is_strictly_correct(" Mirto", example)


@pytest.mark.parametrize(
    ("text", "kind", "expected"),
    [("1,000", "number", "1000"), ("1000.0", "number", "1000"), (" 16. ", "number", "16"), ("2.5", "number", "2.5")],
)
def test_number_normalisation(text, kind, expected):
    assert normalize(text, kind) == expected


def test_text_normalisation_ignores_case_space_punctuation():
    assert normalize("  New   York! ", "text") == normalize("new york", "text") == "new york"


def _broken_task(tmp_path, edit):
    shutil.copy(TASK_DIR / "world_numeric.yaml", tmp_path / "world_numeric.yaml")
    data = yaml.safe_load((tmp_path / "world_numeric.yaml").read_text())
    edit(data)
    (tmp_path / "world_numeric.yaml").write_text(yaml.safe_dump(data))
    with pytest.raises(InputError) as info:
        load_task(tmp_path, "world_numeric")
    message = str(info.value)
    assert "\n" not in message
    assert str(tmp_path / "world_numeric.yaml") in message
    return message


def test_task_missing_field_names_it(tmp_path):
    message = _broken_task(tmp_path, lambda d: d["format"].pop("pattern"))
    assert "field 'format.pattern' is missing" in message


def test_task_missing_required_section_names_it(tmp_path):
    message = _broken_task(tmp_path, lambda d: d.pop("answer"))
    assert "missing key 'answer'" in message


def test_task_unknown_field_names_it(tmp_path):
    message = _broken_task(tmp_path, lambda d: d["prompt"].update(stops=["\n"]))
    assert "unknown key 'prompt.stops'" in message


def test_task_bad_regex_names_it(tmp_path):
    message = _broken_task(tmp_path, lambda d: d["format"].update(pattern="(#### "))
    assert "field 'format.pattern' is not a valid regular expression" in message


def test_task_unknown_relation_names_it(tmp_path):
    message = _broken_task(tmp_path, lambda d: d["dataset"].update(relation="mayor"))
    assert "unknown relation 'mayor'" in message


@pytest.mark.parametrize(
    ("edit", "key", "placeholder"),
    [
        (lambda d: d["prompt"].update(query="Question: {question} {foo}\nAnswer:"), "prompt.query", "'foo'"),
        (lambda d: d["dataset"].update(question="In what year was {entty} founded?"), "dataset.question", "'entty'"),
        (lambda d: d["dataset"]["exposure"].update(question="How high is {0}?"), "dataset.exposure.question", "0"),
        (lambda d: d["prompt"].update(target=" #### {answr}"), "prompt.target", "'answr'"),
    ],
)
def test_task_template_with_an_unknown_placeholder_names_it(tmp_path, edit, key, placeholder):
    message = _broken_task(tmp_path, edit)
    assert f"field '{key}' is not a valid template" in message and placeholder in message


def test_task_name_must_match_file(tmp_path):
    message = _broken_task(tmp_path, lambda d: d.update(name="other"))
    assert "field 'name' is 'other'" in message


def test_unknown_task_lists_available(tmp_path):
    with pytest.raises(InputError, match="task file not found for task 'nope'"):
        load_task(TASK_DIR, "nope")
