"""Real benchmarks as they define themselves: worked solutions for GSM8K and MATH, the scores
lm-evaluation-harness reports for the same responses, knowledge on word boundaries, your own
task from local files, and pilot runs on a seeded sample of the test split."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from softeval.analysis.aggregate import aggregate_scores, pilot_note
from softeval.data.answers import cut_at_stop, mentions
from softeval.data.splits import load_split, pilot_sample, prepare_task
from softeval.data.tasks import load_task
from softeval.engine.methods import build_prompts
from softeval.judges.harness import INVALID, harness_filter, harness_scores, option_scores
from softeval.judges.rule import RuleJudge
from softeval.schema import InputError

ROOT = Path(__file__).resolve().parents[3]
TASK_DIR = ROOT / "config" / "tasks"
FIXTURES = ROOT / "tests" / "fixtures"

# The paper's GSM8K example (a train problem): its gold solution and two responses it shows.
MIMI = {
    "id": "mimi",
    "question": (
        "Mimi picked up 2 dozen seashells on the beach. Kyle found twice as many shells as Mimi and put them in "
        "his pocket. Leigh grabbed one-third of the shells that Kyle found. How many seashells did Leigh have?"
    ),
    "answer": "16",
    "solution": (
        "Mimi has 2 x 12 = <<2*12=24>>24 sea shells.\nKyle has 24 x 2 = <<24*2=48>>48 sea shells.\n"
        "Leigh has 48 / 3 = <<48/3=16>>16 sea shells.\n#### 16"
    ),
}
BASE_REASONING = (
    " 2 dozen seashells is 2 x 12 = 24 seashells. Kyle found twice as many, 24 x 2 = 48 seashells. "
    "Leigh had 48 / 3 = 16 seashells."
)
LOOPING = (
    " Answer: 8\nExplanation: Mimi has 24 shells and Kyle 48, so Leigh has 8.\n"
    "Question: Mimi picked up 2 dozen seashells on the beach. Kyle found twice as many shells as Mimi."
)


@pytest.fixture(scope="module")
def gsm8k():
    return load_task(TASK_DIR, "gsm8k")


def test_the_papers_three_gsm8k_cases(gsm8k):
    looping = cut_at_stop(LOOPING, gsm8k.stop)
    assert looping == " Answer: 8\nExplanation: Mimi has 24 shells and Kyle 48, so Leigh has 8.\n"
    responses = [BASE_REASONING, looping, " " + MIMI["solution"]]
    verdicts = RuleJudge().judge(gsm8k, [MIMI] * 3, responses)
    assert [(v.knowledge, v.format, v.strict) for v in verdicts] == [
        (True, False, False),  # knows the answer, misses the benchmark's form
        (False, False, False),  # loops, wrong
        (True, True, True),  # the worked solution ending "#### 16"
    ]


def test_gsm8k_tunes_and_shows_worked_solutions(tmp_path, gsm8k):
    prepare_task(gsm8k, tmp_path / "gsm8k", source="mirror", mirror=FIXTURES)
    train = [dict(r) for r in load_split(tmp_path / "gsm8k", "train")]
    assert gsm8k.target(train[0]) == " 3 * 12 = <<3*12=36>>36\n#### 36" and train[0]["answer"] == "36"
    few = build_prompts(gsm8k, "few_shot", [MIMI], train[:2])
    assert "Answer: 3 * 12 = <<3*12=36>>36\n#### 36\n\nQuestion:" in few.prompts[0]
    assert gsm8k.max_new_tokens == "train_max"


def test_calculator_annotations_are_a_task_file_option(tmp_path, gsm8k):
    data = gsm8k.dataset | {"fields": {**gsm8k.dataset["fields"], "strip_annotations": True}}
    stripped = type(gsm8k)(**{**gsm8k.__dict__, "dataset": data})
    prepare_task(stripped, tmp_path / "g", source="mirror", mirror=FIXTURES)
    assert stripped.target(dict(load_split(tmp_path / "g", "train")[0])) == " 3 * 12 = 36\n#### 36"


def test_math_tunes_on_solutions_and_takes_the_last_balanced_box(tmp_path):
    math = load_task(TASK_DIR, "math500")
    prepare_task(math, tmp_path / "m", source="mirror", mirror=FIXTURES)
    train = dict(load_split(tmp_path / "m", "train")[0])
    assert math.target(train) == " " + train["solution"] and "\\boxed{" in train["solution"]
    assert math.extract("So $\\boxed{\\left\\{1, 2\\right\\}}$.") == "\\left\\{1, 2\\right\\}"


def test_generation_budget_fits_the_longest_train_solution(tmp_path, gsm8k):
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    from softeval.jobs.generate import generation_budget

    prepare_task(gsm8k, tmp_path / "g", source="mirror", mirror=FIXTURES)
    core = Tokenizer(models.WordLevel({"[UNK]": 0}, unk_token="[UNK]"))
    core.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=core, unk_token="[UNK]")
    longest = max(len(gsm8k.target(dict(r)).split()) for r in load_split(tmp_path / "g", "train"))
    assert generation_budget(gsm8k, tokenizer, tmp_path / "g", None, 24) == -(-longest * 11 // 10)
    assert generation_budget(load_task(TASK_DIR, "triviaqa"), tokenizer, tmp_path / "g", None, 24) == 32
    mmlu = load_task(TASK_DIR, "mmlu")  # options_max: the longest "B. <option>" of the test split, + 10 %
    assert mmlu.max_new_tokens == "options_max"
    prepare_task(mmlu, tmp_path / "m", source="mirror", mirror=FIXTURES)
    rows = [dict(r) for r in load_split(tmp_path / "m", "test")]
    longest = max(len(mmlu.option_target(r, k).split()) for r in rows for k in range(len(r["options"])))
    assert generation_budget(mmlu, tokenizer, tmp_path / "m", None, 24) == -(-longest * 11 // 10)


# ---- knowledge that is really there ---------------------------------------------------


@pytest.mark.parametrize(
    ("response", "gold", "question", "answer_type", "known"),
    [
        ("The capital is Guinea-Bissau.", "Bissau", "What is the capital of Guinea-Bissau?", "span", False),
        ("It is Bissau.", "Bissau", "What is the capital of Guinea-Bissau?", "span", True),
        ("Guinea Bissau", "Guinea-Bissau", "Which country has Bissau as capital?", "span", True),
        (
            "The capital of San Marino is Borgo Maggiore.",
            "San Marino",
            "What is the capital of San Marino?",
            "span",
            False,
        ),
        ("It is San Marino, the city.", "San Marino", "What is the capital of San Marino?", "span", True),
        ("Djibouti", "Djibouti", "What is the capital of Djibouti?", "span", True),
        ("The capital of Djibouti is Djibouti.", "Djibouti", "What is the capital of Djibouti?", "span", True),
        ("There were 160 of them.", "16", "How many?", "number", False),
        ("Leigh has 16 shells, so 4 each.", "16", "Leigh has 16 shells and 4 friends. How many each?", "number", False),
        ("So the answer is 16.", "16", "Leigh has 16 shells. How many?", "number", True),
        ("Parisian", "Paris", "Capital of France?", "span", False),
        ("Kelmir2", "Kelmir", "What is the capital of Vilor?", "text", False),
        ("Kelmir's walls", "Kelmir", "What is the capital of Vilor?", "text", True),
        ("2x12=24 shells", "12", "How many?", "number", True),
    ],
)
def test_gold_counts_on_word_boundaries_and_not_in_the_echoed_question(response, gold, question, answer_type, known):
    assert mentions(response, gold, answer_type, question) is known


# ---- lm-evaluation-harness's scores of the same responses ------------------------------


def test_gsm8k_harness_filters_as_the_harness_defines_them(gsm8k):
    scores = [harness_scores(gsm8k, MIMI, r) for r in (BASE_REASONING, LOOPING, " " + MIMI["solution"])]
    assert scores == [
        {"exact_match,strict-match": False, "exact_match,flexible-extract": True},  # last number "16." -> 16
        {"exact_match,strict-match": False, "exact_match,flexible-extract": False},  # cut at "Question:": 8
        {"exact_match,strict-match": True, "exact_match,flexible-extract": True},
    ]
    strict, flexible = gsm8k.harness
    assert harness_filter("no number here", strict) == INVALID
    assert harness_filter("It is 1,600.\nQuestion: next 7", flexible) == "7"  # filters only: no cut
    assert harness_scores(gsm8k, {**MIMI, "solution": "#### 1600"}, "It is 1,600.\nQuestion: next 7") == {
        "exact_match,strict-match": False,
        "exact_match,flexible-extract": True,  # cut at the harness's "Question:" first
    }
    assert harness_scores(gsm8k, {**MIMI, "solution": "... #### 1,600"}, "so #### 1600.")["exact_match,strict-match"]
    assert harness_scores(gsm8k, MIMI, " 48 / 3 = 16 seashells")["exact_match,flexible-extract"]


def test_span_and_choice_harness_scores():
    trivia, nq = load_task(TASK_DIR, "triviaqa"), load_task(TASK_DIR, "nq_open")
    paris = {"id": "p", "question": "Capital of France?", "answer": "Paris", "aliases": ["City of Light"]}
    assert harness_scores(trivia, paris, " paris, of course") == {"exact_match,remove_whitespace": True}
    assert harness_scores(trivia, paris, " City of light.") == {"exact_match,remove_whitespace": True}
    assert harness_scores(trivia, paris, " It is Paris") == {"exact_match,remove_whitespace": False}
    # nq_open v4's regexes_to_ignore deletes a leading article and its space: "The Beatles" = "Beatles"
    # (1 in the harness; the v2 pattern copied before gave 0)
    assert harness_scores(nq, {**paris, "answer": "The Beatles"}, " Beatles") == {"exact_match,remove_whitespace": True}
    # the harness's whitespace filter is strip(): trailing spaces go too
    assert harness_scores(nq, {**paris, "answer": "Beatles"}, " beatles ") == {"exact_match,remove_whitespace": True}
    assert harness_scores(nq, {**paris, "answer": "Ana"}, " Ana") == {"exact_match,remove_whitespace": True}
    assert harness_scores(nq, {**paris, "answer": "Jane Austen"}, " Jane Austen") == {
        "exact_match,remove_whitespace": True
    }
    arc = load_task(TASK_DIR, "arc_challenge")
    row = {"logliks": [-3.0, -4.0], "options": ["A. ab", "B. abcdefghijkl"], "chosen": 0}
    example = {"label": 1}
    assert option_scores(arc, example, row) == {"acc": False, "acc_norm": True}
    assert harness_scores(arc, example, "") == {}  # never under the harness's name: not its prompt


def test_math_verify_is_the_harness_score_for_math500():
    pytest.importorskip("math_verify")
    math = load_task(TASK_DIR, "math500")
    example = {"answer": "\\frac{3}{4}", "solution": "So $\\boxed{\\frac{3}{4}}$."}
    assert harness_scores(math, example, " Hence $\\boxed{0.75}$.") == {"math_verify": True}
    assert harness_scores(math, example, " Hence $\\boxed{0.7}$.") == {"math_verify": False}


def test_the_judge_scores_the_harness_columns_from_the_harnesss_own_response(tmp_path, gsm8k):
    """softeval's response stopped at a blank-line run; the harness's ran on to a second "####"
    (flexible-extract takes the last number). A file without harness_response is named, not guessed."""
    from softeval.jobs.judge import run_judge

    data = tmp_path / "data"
    prepare_task(gsm8k, data, source="mirror", mirror=FIXTURES)
    test = [dict(row) for row in load_split(data, "test")]
    gold = test[0]["answer"]
    rows = [
        {"id": ex["id"], "method": "zero_shot", "step": None, "response": f" So\n#### {gold}", "harness_response": ""}
        for ex in test
    ]
    rows[0]["harness_response"] = f" So\n#### {gold}\n\n\n\nThen 2 + 2 = 4\n#### 4"
    generations, out = tmp_path / "gen.jsonl", tmp_path / "scores.jsonl"
    generations.write_text("".join(json.dumps(r) + "\n" for r in rows))
    run_judge(task=gsm8k, data_dir=data, settings="rule", generations=[generations], logliks=[], outs=[out])
    first = json.loads(out.read_text().splitlines()[0])
    assert first["strict"] is True  # softeval's response
    assert first["lm_eval"] == {"exact_match,strict-match": True, "exact_match,flexible-extract": False}
    for row in rows:
        del row["harness_response"]
    generations.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(InputError, match=r"gen\.jsonl: row .* has no harness_response .* delete the file"):
        run_judge(task=gsm8k, data_dir=data, settings="rule", generations=[generations], logliks=[], outs=[out])


def test_aggregate_adds_the_harness_columns_and_the_pilot_note(tmp_path):
    root = tmp_path / "scores"
    path = root / "m" / "base" / "gsm8k" / "zero_shot.jsonl"
    path.parent.mkdir(parents=True)
    rows = [
        {
            "id": str(i),
            "judge": "rule",
            "knowledge": True,
            "format": i < 2,
            "strict": i < 1,
            "lm_eval": {"exact_match,strict-match": i < 1, "exact_match,flexible-extract": i < 3},
        }
        for i in range(4)
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    table = aggregate_scores(root, [path], 100, 0, {"gsm8k": 1319})
    assert table.loc[0, "lm_eval:exact_match,strict-match"] == 0.25
    assert table.loc[0, "lm_eval:exact_match,flexible-extract"] == 0.75
    assert pilot_note(table) == (
        " Pilot run: a seeded sample of the test split, the same for every model and method (gsm8k 4 of 1,319)."
    )
    assert pilot_note(table.assign(test_total=4)) == ""


# ---- pilot runs -----------------------------------------------------------------------


def test_pilot_sample_is_seeded_ordered_and_recorded(tmp_path):
    test = [{"id": str(i)} for i in range(50)]
    sample = pilot_sample(test, 7, 0, "gsm8k")
    assert sample == pilot_sample(test, 7, 0, "gsm8k") and len(sample) == 7
    assert [int(e["id"]) for e in sample] == sorted(int(e["id"]) for e in sample)
    assert sample != pilot_sample(test, 7, 1, "gsm8k") and pilot_sample(test, 70, 0, "gsm8k") == test
    task = load_task(TASK_DIR, "triviaqa")
    prepare_task(task, tmp_path / "t", source="mirror", mirror=FIXTURES, test_limit=3, seed=0)
    meta = json.loads((tmp_path / "t" / "meta.json").read_text())
    assert (meta["counts"]["test"], meta["test_total"], meta["test_limit"]) == (3, 11, 3)
    assert meta["provenance"]["params"]["test_limit"] == 3


# ---- your own task from local files ----------------------------------------------------

OWN_TASK = """
name: capitals
version: 1
kind: open
description: My capitals
dataset:
  source: local
  files: {{train: data/train.{suffix}, test: data/test.{suffix}}}
  fields: {{question: q, answer: a}}
prompt: {{instruction: Answer., query: "Q: {{question}}\\nA:", target: " {{answer}}"}}
format: {{description: phrase, pattern: '\\S.*'}}
answer: {{extract: '^(.*)$', type: span}}
"""


@pytest.mark.parametrize("suffix", ["jsonl", "csv", "parquet"])
def test_a_local_task_reads_its_own_files(tmp_path, suffix):
    (tmp_path / "data").mkdir()
    rows = pd.DataFrame({"q": ["Capital of France?", "Capital of Peru?"], "a": ["Paris", "Lima"]})
    for split in ("train", "test"):
        file = tmp_path / "data" / f"{split}.{suffix}"
        {
            "jsonl": lambda f: rows.to_json(f, orient="records", lines=True),
            "csv": lambda f: rows.to_csv(f, index=False),
            "parquet": lambda f: rows.to_parquet(f),
        }[suffix](file)
    (tmp_path / "capitals.yaml").write_text(OWN_TASK.format(suffix=suffix))
    task = load_task(tmp_path, "capitals")
    prepare_task(task, tmp_path / "out", source="hub")  # data.source concerns hub tasks only
    test = [dict(r) for r in load_split(tmp_path / "out", "test")]
    assert [(e["question"], e["answer"]) for e in test] == [
        ("Capital of France?", "Paris"),
        ("Capital of Peru?", "Lima"),
    ]
    meta = json.loads((tmp_path / "out" / "meta.json").read_text())
    assert meta["provenance"]["params"]["data"]["test"]["source"] == "local"


def test_list_answers_become_aliases_never_a_stringified_list(tmp_path):
    (tmp_path / "data").mkdir()
    rows = [{"q": "Smallest country?", "a": ["Vatican City", "Holy See"]}]
    for split in ("train", "test"):
        (tmp_path / "data" / f"{split}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (tmp_path / "capitals.yaml").write_text(OWN_TASK.format(suffix="jsonl"))
    prepare_task(load_task(tmp_path, "capitals"), tmp_path / "out")
    example = dict(load_split(tmp_path / "out", "test")[0])
    assert (example["answer"], example["aliases"]) == ("Vatican City", ["Holy See"])
    (tmp_path / "data" / "test.jsonl").write_text(json.dumps({"q": "x", "a": {"text": "y"}}) + "\n")
    with pytest.raises(InputError, match=r"test.jsonl, row 0 .*answer column holds a dict.*map dataset.fields.answer"):
        prepare_task(load_task(tmp_path, "capitals"), tmp_path / "out2")


def test_repeated_ids_in_a_split_stop_prepare_with_the_file_and_rows(tmp_path):
    (tmp_path / "data").mkdir()
    rows = [{"id": "q1", "q": "Capital of France?", "a": "Paris"}, {"id": "q1", "q": "Capital of Peru?", "a": "Lima"}]
    for split in ("train", "test"):
        (tmp_path / "data" / f"{split}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    task_file = OWN_TASK.format(suffix="jsonl").replace("fields: {question: q", "fields: {id: id, question: q")
    (tmp_path / "capitals.yaml").write_text(task_file)
    with pytest.raises(
        InputError, match=r"data/train.jsonl: the train split of task capitals repeats id 'q1' \(rows 0 and 1\)"
    ):
        prepare_task(load_task(tmp_path, "capitals"), tmp_path / "out")
    assert not (tmp_path / "out").exists()  # nothing written that looks like a prepared split


def test_a_missing_local_file_is_named_with_the_key(tmp_path):
    (tmp_path / "capitals.yaml").write_text(OWN_TASK.format(suffix="jsonl"))
    with pytest.raises(InputError, match=r"capitals.yaml: field 'dataset.files.train' names .*data/train.jsonl"):
        load_task(tmp_path, "capitals")


def test_a_local_file_of_unknown_kind_is_refused_at_load(tmp_path):
    (tmp_path / "capitals.yaml").write_text(OWN_TASK.format(suffix="txt"))
    with pytest.raises(InputError, match=r"key 'dataset.files.train' is 'data/train.txt'; use a JSONL, CSV or Parquet"):
        load_task(tmp_path, "capitals")


def test_an_empty_local_split_is_named_not_a_stop_iteration(tmp_path):
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "train.jsonl").write_text(json.dumps({"q": "x", "a": "y"}) + "\n")
    (tmp_path / "data" / "test.jsonl").write_text("")
    (tmp_path / "capitals.yaml").write_text(OWN_TASK.format(suffix="jsonl"))
    with pytest.raises(
        InputError, match=r"test.jsonl: the test split of task capitals \(dataset.files.test\) is an empty"
    ):
        prepare_task(load_task(tmp_path, "capitals"), tmp_path / "out")


@pytest.mark.parametrize(
    ("response", "gold"),
    [
        ("Washington DC", "Washington, D.C."),
        ("US", "U.S."),
        ("Schindlers List", "Schindler's List"),
        ("Guinea Bissau", "Guinea-Bissau"),
        ("the beatles", "Beatles"),
    ],
)
def test_span_answers_delete_punctuation_as_squad_does(response, gold):
    """SQuAD's normalize_answer deletes punctuation; a mark read as a space counts too."""
    from softeval.data.answers import mentions, same_answer

    assert same_answer(response, gold, "span")
    assert mentions(f"I think it is {response}", gold, "span")


def test_a_minus_is_a_sign_only_where_it_cannot_be_subtraction():
    from softeval.data.answers import mentions

    assert not mentions("5-3=2", "-3", "number")  # subtraction, not -3
    assert mentions("<<20-16=4>>4 left", "16", "number")  # GSM8K's own annotations
    assert mentions("so x = -3.", "-3", "number") and mentions("f(-3) = 0", "-3", "number")
    assert not mentions("x-3", "-3", "number") and mentions("x-3", "3", "number")


def test_math_knowledge_searches_beyond_the_last_box():
    from softeval.data.answers import mentions

    assert mentions("the answer is 1/2, but to be safe \\boxed{3}", "\\frac{1}{2}", "math")
    assert mentions("we get $\\frac{1}{2}$ and then \\boxed{3}", "\\frac12", "math")
    assert not mentions("11/23 and \\boxed{3}", "\\frac{1}{2}", "math")


@pytest.mark.parametrize(
    ("response", "gold", "same"),
    [
        ("3\\sqrt2", "\\sqrt{18}", True),  # symbolic: math-verify
        ("x^2+1", "1+x^2", True),
        ("\\left( 3, \\frac{\\pi}{2} \\right)", "(3,\\pi/2)", True),
        ("0.75", "\\dfrac{3}{4}", True),  # numeric, as before
        ("2\\sqrt2", "\\sqrt{18}", False),
        ("x^2-1", "1+x^2", False),
        ("4", "3", False),
        ("\\frac{", "\\sqrt{18}", False),  # unreadable LaTeX: not equal, no error
    ],
)
def test_math_strict_accepts_symbolically_equal_answers(response, gold, same):
    from softeval.data.answers import same_answer

    assert same_answer(response, gold, "math") is same
    math = load_task(TASK_DIR, "math500")
    verdict = RuleJudge().judge(math, [{"answer": gold, "question": "?"}], [f" So $\\boxed{{{response}}}$."])[0]
    assert verdict.strict is same


@pytest.mark.parametrize(
    "gold",
    [
        "Oklahoma!",
        "Sammy Davis Jr.",
        "Washington, D.C.",
        "Who's Afraid of Virginia Woolf?",
        "The Curious Incident of the Dog in the Night-Time",
    ],
)
@pytest.mark.parametrize("task_name", ["triviaqa", "nq_open"])
def test_the_gold_itself_is_formatted(task_name, gold):
    task = load_task(TASK_DIR, task_name)
    example = {"id": "x", "question": "?", "answer": gold, "aliases": []}
    assert task.is_formatted(f" {gold}", example) and task.is_strictly_correct(f" {gold}", example)
    assert task.is_formatted(" " + gold.lower().rstrip(".!?"), example)  # equal after normalisation
    assert not task.is_formatted(f" I believe the answer is {gold} and nothing else.", example)
