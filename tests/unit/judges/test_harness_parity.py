"""Parity with lm-evaluation-harness's own code: every lm_eval column equals what the harness
computes for the same response.

The harness's task YAMLs are read as the installed lm_eval ships them (its generation stops, its
filter_list, its exact_match options) and run through its own functions: the text cut by
`postprocess_generated_text`, its registered filters (regex, take_first, remove_whitespace),
`exact_match_hf_evaluate` with its any-of-the-golds rule, and minerva_math's `process_results`
for math_verify. Golds come from the fixture rows in each dataset's own layout, as the harness's
doc_to_target reads them, so softeval's field maps are checked too. Generation itself (where the
harness's response ends, 256 tokens) is compared with HFLM in tests/unit/engine/test_real_model.py.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from softeval.data.splits import load_split, prepare_task
from softeval.data.tasks import load_task
from softeval.judges.harness import harness_scores

lm_eval = pytest.importorskip(
    "lm_eval", reason='needs lm-evaluation-harness (a test extra): pip install -e ".[test]" (make venv-test)'
)
from lm_eval.api.metrics import exact_match_hf_evaluate  # noqa: E402
from lm_eval.api.registry import get_filter  # noqa: E402
from lm_eval.filters import build_filter_ensemble  # noqa: E402, F401  (registers the harness's filters)
from lm_eval.models.utils import postprocess_generated_text  # noqa: E402

ROOT = Path(__file__).resolve().parents[3]
TASK_DIR = ROOT / "config" / "tasks"
FIXTURES = ROOT / "tests" / "fixtures"
HARNESS_TASKS = {
    "gsm8k": "gsm8k/gsm8k.yaml",
    "nq_open": "nq_open/nq_open.yaml",
    "triviaqa": "triviaqa/default.yaml",
    "math500": "minerva_math/minerva_math500.yaml",
}
# doc_to_target of each harness task, on the dataset's own row
HARNESS_GOLDS = {
    "gsm8k": lambda raw: [raw["answer"]],
    "nq_open": lambda raw: list(raw["answer"]),
    "triviaqa": lambda raw: list(raw["answer"]["aliases"]),
}


class _HarnessYaml(yaml.SafeLoader):
    """The harness's YAML dialect: `!function module.name` kept as its text."""


_HarnessYaml.add_constructor("!function", lambda loader, node: loader.construct_scalar(node))


def harness_config(name: str) -> dict[str, Any]:
    path = Path(lm_eval.__file__).parent / "tasks" / HARNESS_TASKS[name]
    data = yaml.load(path.read_text(encoding="utf-8"), Loader=_HarnessYaml)
    if "include" in data:
        base = yaml.load((path.parent / data.pop("include")).read_text(encoding="utf-8"), Loader=_HarnessYaml)
        data = {**base, **data}
    return data


def raw_rows(name: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (FIXTURES / name / "test.jsonl").read_text(encoding="utf-8").splitlines()]


@pytest.fixture(scope="module")
def prepared(tmp_path_factory):
    root = tmp_path_factory.mktemp("parity")
    out = {}
    for name in HARNESS_TASKS:
        task = load_task(TASK_DIR, name)
        prepare_task(task, root / name, source="mirror", mirror=FIXTURES)
        out[name] = (task, [dict(row) for row in load_split(root / name, "test")])
    return out


def harness_exact_match(config: dict[str, Any], filter_name: str, response: str, golds: list[str]) -> bool:
    """The harness's exact_match for one response under one of its filter pipelines."""
    text = postprocess_generated_text(response, config["generation_kwargs"]["until"], None)
    (pipeline,) = [f["filter"] for f in config["filter_list"] if f["name"] == filter_name]
    responses: list[Any] = [[text]]
    for step in pipeline:
        options = {k: v for k, v in step.items() if k != "function"}
        responses = list(get_filter(step["function"])(**options).apply(responses, [{}]))
    prediction = responses[0] if isinstance(responses[0], str) else responses[0][0]
    (metric,) = [m for m in config["metric_list"] if m["metric"] == "exact_match"]
    options = {k: metric[k] for k in ("ignore_case", "ignore_punctuation", "regexes_to_ignore") if k in metric}
    score = exact_match_hf_evaluate(predictions=[prediction] * len(golds), references=golds, **options)
    return score["exact_match"] > 0.0


def span_responses(golds: list[str]) -> list[str]:
    """Responses around a gold answer: as is, with an article, spacing, punctuation, case, a cut."""
    first = golds[0]
    return [
        " " + first,
        " The " + first,
        "  " + first.lower() + " ",
        " " + first + ", of course",
        " " + first.upper() + "!",
        " I think it is " + first,
        " " + first.replace(" ", "") + "\nQ: next",
        " " + golds[-1] + ".",
        " a " + first,
        "",
        " an " + first + " the",
    ]


NUMBER_RESPONSES = [
    " 2 dozen is 24, so 24 x 2 = 48 and 48 / 3 = 16.",
    " Answer: 8\nQuestion: Mimi picked up 2 dozen seashells. 16",
    " So #### 1,600.",
    " #### $36",
    " #### -3\nand 5-3=2",
    " 20-16=4\n#### 4.",
    " The total is 1,000,000 dollars",
    " no number here",
    "",
]


@pytest.mark.parametrize("name", ["gsm8k", "nq_open", "triviaqa"])
def test_exact_match_columns_equal_the_harness_on_fixture_responses(prepared, name):
    task, examples = prepared[name]
    config = harness_config(name)
    assert list(task.harness_generation.until) == config["generation_kwargs"]["until"]
    raws = raw_rows(name)
    assert len(raws) == len(examples)
    checked = differing = 0
    for raw, example in zip(raws, examples, strict=True):
        golds = HARNESS_GOLDS[name](raw)
        if name == "gsm8k":
            responses = [*NUMBER_RESPONSES, " " + raw["answer"], " " + raw["answer"] + "\nQuestion: x\n#### 7"]
        else:
            responses = span_responses(golds)
        for response in responses:
            ours = harness_scores(task, example, response)
            for metric in task.harness:
                filter_name = metric["name"].split(",", 1)[1]
                expected = harness_exact_match(config, filter_name, response, golds)
                assert ours[metric["name"]] == expected, (name, metric["name"], response, golds)
                checked += 1
                differing += expected != harness_exact_match(config, filter_name, " " + golds[0], golds)
    assert checked >= 80 and differing > 0  # both verdicts occur


def minerva_utils(monkeypatch):
    """minerva_math's utils, imported past its check for antlr4 4.11 (sympy's LaTeX parser, used
    only by its exact_match, which softeval does not report); math-verify pins antlr4 4.13."""
    real = importlib.metadata.version
    monkeypatch.setattr(
        importlib.metadata, "version", lambda dist: "4.11.0" if dist == "antlr4-python3-runtime" else real(dist)
    )
    module = importlib.import_module("lm_eval.tasks.minerva_math.utils")
    monkeypatch.setattr(importlib.metadata, "version", real)
    monkeypatch.setattr(module, "is_equiv", lambda *args: False)  # the exact_match half
    return module


def test_math_verify_column_equals_minerva_process_results(prepared, monkeypatch):
    task, examples = prepared["math500"]
    config = harness_config("math500")
    assert list(task.harness_generation.until) == config["generation_kwargs"]["until"]
    utils = minerva_utils(monkeypatch)
    verdicts = []
    for raw, example in zip(raw_rows("math500"), examples, strict=True):
        responses = [
            " " + raw["solution"],
            f" So the answer is $\\boxed{{{raw['answer']}}}$.",
            " The answer is $\\boxed{7.5}$.",
            " " + raw["solution"] + "\nProblem: next one, \\boxed{9}",
            " Problem: \\boxed{" + raw["answer"] + "}",
            " no answer",
        ]
        for response in responses:
            text = postprocess_generated_text(response, config["generation_kwargs"]["until"], None)
            expected = bool(utils.process_results(raw, [text])["math_verify"])
            assert harness_scores(task, example, response) == {"math_verify": expected}, (response, raw["solution"])
            verdicts.append(expected)
    assert True in verdicts and False in verdicts
