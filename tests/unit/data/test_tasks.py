from __future__ import annotations

import shutil

import pytest
import yaml

from softeval.data.answers import normalize
from softeval.data.tasks import load_task, read_task_data, task_includes, task_names
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


EXACT = {"name": "exact_match,strict-match", "metric": "exact_match", "regex": "#### (\\d+)"}


def test_a_harness_score_read_from_a_response_needs_the_harnesss_generation(tmp_path):
    message = _broken_task(tmp_path, lambda d: d.update(harness=[EXACT]))
    assert "field 'harness_generation' is missing" in message and "exact_match,strict-match" in message
    message = _broken_task(tmp_path, lambda d: d.update(harness_generation={"until": ["Question:"]}))
    assert "field 'harness_generation' is given but no harness score reads a response" in message
    # the stops moved from each score to the task (the harness's generation_kwargs are per task)
    message = _broken_task(tmp_path, lambda d: d.update(harness=[{**EXACT, "until": ["Question:"]}]))
    assert "unknown key 'harness[0].until'" in message


def test_harness_generation_defaults_to_hflms_256_tokens(tmp_path):
    data = yaml.safe_load((TASK_DIR / "world_numeric.yaml").read_text())
    data.update(harness=[EXACT], harness_generation={"until": ["Question:"]})
    (tmp_path / "world_numeric.yaml").write_text(yaml.safe_dump(data))
    spec = load_task(tmp_path, "world_numeric").harness_generation
    assert (spec.until, spec.max_gen_toks) == (("Question:",), 256)


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


# ---- include: shared blocks (lm-evaluation-harness style) ----
LETTERED = ("mmlu", "arc_challenge", "commonsense_qa")


def _flat_copy(tmp_path, name):
    """The task file with its include written out: what it meant before it shared a block."""
    data, included = read_task_data(TASK_DIR / f"{name}.yaml")
    assert [p.name for p in included] == ["_lettered_choice.yaml"]
    (tmp_path / f"{name}.yaml").write_text(yaml.safe_dump(data))
    return load_task(tmp_path, name)


@pytest.mark.parametrize("name", LETTERED)
def test_lettered_tasks_share_one_block_and_mean_what_a_flat_file_means(tmp_path, name):
    assert "include: _lettered_choice.yaml" in (TASK_DIR / f"{name}.yaml").read_text()
    assert load_task(TASK_DIR, name) == _flat_copy(tmp_path, name)
    task = load_task(TASK_DIR, name)
    assert task.closed and task.max_new_tokens == "options_max" and task.target_template == " {letter}. {answer}"


def test_shared_blocks_are_not_tasks():
    assert "_lettered_choice" not in task_names(TASK_DIR)
    assert set(LETTERED) | {"world_choice", "gsm8k"} <= set(task_names(TASK_DIR))


def test_a_task_key_overrides_the_included_one_mapping_by_mapping(tmp_path):
    shutil.copy(TASK_DIR / "_lettered_choice.yaml", tmp_path)
    data = yaml.safe_load((TASK_DIR / "mmlu.yaml").read_text())
    data["prompt"] = {"max_new_tokens": 8}  # only this key of the block's prompt
    (tmp_path / "mmlu.yaml").write_text(yaml.safe_dump(data))
    task = load_task(tmp_path, "mmlu")
    assert task.max_new_tokens == 8 and task.query_template == "Question: {question}\n{options}\nAnswer:"


def _included_task(tmp_path, include, base_edit=None):
    base = yaml.safe_load((TASK_DIR / "_lettered_choice.yaml").read_text())
    if base_edit:
        base_edit(base)
    (tmp_path / "_lettered_choice.yaml").write_text(yaml.safe_dump(base))
    data = yaml.safe_load((TASK_DIR / "mmlu.yaml").read_text())
    data["include"] = include
    (tmp_path / "mmlu.yaml").write_text(yaml.safe_dump(data))
    with pytest.raises(InputError) as info:
        load_task(tmp_path, "mmlu")
    message = str(info.value)
    assert "\n" not in message and str(tmp_path / "mmlu.yaml") in message
    return message


def test_an_include_that_does_not_exist_is_named(tmp_path):
    assert "_nope.yaml, which does not exist" in _included_task(tmp_path, "_nope.yaml")


@pytest.mark.parametrize("include", ["../tasks/_x.yaml", "/etc/passwd", "base.yaml", 3])
def test_an_include_must_be_a_shared_block_in_the_same_folder(tmp_path, include):
    assert "field 'include'" in _included_task(tmp_path, include)


def test_an_include_cycle_is_an_error(tmp_path):
    message = _included_task(tmp_path, "_lettered_choice.yaml", lambda b: b.update(include="_lettered_choice.yaml"))
    assert "cycle" in message


def test_a_bad_key_in_the_shared_block_names_the_task_and_the_block(tmp_path):
    message = _included_task(tmp_path, "_lettered_choice.yaml", lambda b: b["answer"].update(kind="choice"))
    assert "unknown key 'answer.kind'" in message and "with _lettered_choice.yaml" in message


def test_task_includes_lists_the_blocks_a_task_is_built_on():
    """What the workflow makes an input of the task's jobs (tests/workflow/test_smoke.py checks the plan)."""
    assert [p.name for p in task_includes(TASK_DIR, "mmlu")] == ["_lettered_choice.yaml"]
    assert task_includes(TASK_DIR, "world_choice") == []
