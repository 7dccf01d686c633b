"""Real benchmarks: task files, field maps and gold extraction on hand-written fixtures in
each benchmark's own schema (tests/fixtures/<task>/<role>.jsonl), judged by the rule judge."""

import json
import shutil
from pathlib import Path

import datasets
import pytest
import yaml

from softeval.data.answers import boxed_contents, last_boxed, normalize_math, same_answer
from softeval.data.splits import load_split, prepare_task
from softeval.data.tasks import load_task
from softeval.judges.rule import RuleJudge
from softeval.schema import InputError

ROOT = Path(__file__).resolve().parents[3]
TASK_DIR = ROOT / "config" / "tasks"
FIXTURES = ROOT / "tests" / "fixtures"
REAL_TASKS = ["gsm8k", "math500", "triviaqa", "nq_open", "mmlu", "arc_challenge", "commonsense_qa"]


@pytest.fixture(scope="module")
def prepared(tmp_path_factory):
    root = tmp_path_factory.mktemp("real")
    for name in REAL_TASKS:
        prepare_task(load_task(TASK_DIR, name), root / name, source="mirror", mirror=FIXTURES)
    return root


def examples(prepared, name, split="test"):
    return [dict(row) for row in load_split(prepared / name, split)]


GOLDS = {
    "gsm8k": ["72", "1600", "-5", "0.5", "0", "150", "5", "7", "30000", "13.5"],
    "math500": [
        "\\frac{3}{4}",
        "\\dfrac{5}{2}",
        "\\left( 3, \\frac{\\pi}{2} \\right)",
        "10\\text{ cm}",
        "90^\\circ",
        "\\frac52",
        "1.5",
        "x = 2",
        "12,000",
        "2\\sqrt2",
        "25\\%",
    ],
    "triviaqa": [
        "Paris",
        "Washington, D.C.",
        "Leonardo da Vinci",
        "The Beatles",
        "6",
        "Hydrogen",
        "J. R. R. Tolkien",
        "Japan",
        "Nile",
        "Badminton",
        "Paris",  # tc_10 again: its wikipedia-file copy
    ],
    "nq_open": [
        "Jane Austen",
        "1918",
        "yen",
        "Alexander Fleming",
        "four",
        "Paris",
        "carbon dioxide",
        "Michael Jackson",
        "Jupiter",
        "Henry Dunant",
    ],
    "mmlu": [
        "29",
        "chloroplast",
        "Einstein",
        "2x",
        "Neon",
        "Gross Domestic Product",
        "Thirteenth",
        "newton",
        "queue",
        "180",
    ],
    "arc_challenge": [
        "thermometer",
        "photosynthesis",
        "whale",
        "gravity",
        "steel",
        "ozone",
        "producer",
        "rusting iron",
        "Sun",
        "copper",
    ],
    "commonsense_qa": [
        "library",
        "shoes",
        "supermarket",
        "light",
        "cockpit",
        "rain",
        "bed",
        "water",
        "umbrella",
        "garage",
    ],
}


@pytest.mark.parametrize("name", REAL_TASKS)
def test_gold_answers_come_out_of_each_benchmarks_own_schema(prepared, name):
    assert [ex["answer"] for ex in examples(prepared, name)] == GOLDS[name]
    meta = json.loads((prepared / name / "meta.json").read_text())
    data = meta["provenance"]["params"]["data"]
    assert set(data) == {"train", "test", "few_shot"}
    assert data["test"]["source"] == "mirror" and len(data["test"]["sha256"]) == 64 and data["test"]["fingerprint"]
    assert data["test"]["revision"] == "main"  # never a commit nobody has seen


def test_triviaqa_question_ids_repeat_so_its_rows_are_numbered(tmp_path):
    """Keyed by question_id, the validation split's shape (a question in the web and the
    wikipedia file) stops data preparation; numbered, every row is kept (the harness's 17,944)."""
    keyed = tmp_path / "tasks"
    keyed.mkdir()
    text = (TASK_DIR / "triviaqa.yaml").read_text().replace("  fields:\n", "  fields:\n    id: question_id\n")
    (keyed / "triviaqa.yaml").write_text(text)
    with pytest.raises(InputError, match=r"repeats id 'tc_10' \(rows 0 and 10\).*drop `fields.id`"):
        prepare_task(load_task(keyed, "triviaqa"), tmp_path / "keyed", source="mirror", mirror=FIXTURES)
    assert "id:" not in yaml.safe_load((TASK_DIR / "triviaqa.yaml").read_text())["dataset"]["fields"]


def test_aliases_and_labels(prepared):
    trivia = examples(prepared, "triviaqa")
    assert trivia[0]["aliases"] == ["Paris, France", "City of Light"] and trivia[0]["id"] == "triviaqa-test-00000"
    # question tc_10 comes twice (web and wikipedia files): both rows kept, as the harness keeps them
    assert trivia[10]["question"] == trivia[0]["question"] and trivia[10]["id"] == "triviaqa-test-00010"
    assert examples(prepared, "nq_open")[1]["aliases"] == ["11 November 1918"]
    arc = examples(prepared, "arc_challenge")
    assert (arc[1]["label"], arc[2]["options"], arc[3]["label"]) == (2, ["shark", "whale", "trout"], 2)
    assert len(arc[3]["options"]) == 5 and arc[5]["label"] == 0  # digit answer key "1" -> first option
    mmlu_shots = examples(prepared, "mmlu", "few_shot")
    assert [ex["answer"] for ex in mmlu_shots][:3] == ["4", "Nitrogen", "Rome"]  # MMLU shots come from dev
    assert [ex["group"] for ex in mmlu_shots][:3] == ["elementary_mathematics", "anatomy", "geography"]
    assert "group" not in examples(prepared, "arc_challenge")[0]  # only where the task names a group column
    assert [ex["answer"] for ex in examples(prepared, "gsm8k", "few_shot")][:2] == ["36", "25"]  # others: train


# (test example index, response, knowledge, format, strict): rule judge verdicts per benchmark.
CASES = {
    "gsm8k": [
        (0, " #### 72", True, True, True),
        (0, " The answer is 72.", True, False, False),
        (0, " #### 27", False, True, False),
        (1, " #### 1,600", True, True, True),
        (1, " #### 1600", True, True, True),
        (1, " #### 1600.0", True, True, True),
        (2, " #### -5", True, True, True),
        (3, " #### .5", True, True, True),
        (4, " #### 0", True, True, True),
        (5, " 60 * 2.5 = 150 km\n#### 150", True, True, True),
        (5, " 60 * 2.5 = <<60*2.5=150>>150 km\n#### 140", True, True, False),
        (5, " #### 150 km per hour is the speed", True, False, False),
        (5, " 60 * 2.5 = 150 km #### 150", True, False, False),
        (8, " #### 30,000", True, True, True),
        (9, " #### 13.50", True, True, True),
    ],
    "math500": [
        (0, " \\boxed{\\frac{3}{4}}", True, True, True),
        (0, " \\boxed{\\dfrac34}", True, True, True),
        (0, " \\boxed{0.75}", True, True, True),
        (0, " \\boxed{3/4}", True, True, True),
        (0, " The answer is $\\frac{3}{4}$.", True, False, False),
        (1, " \\boxed{\\frac{5}{2}}", True, True, True),
        (1, " \\boxed{2.5}", True, True, True),
        (2, " \\boxed{(3,\\frac{\\pi}{2})}", True, True, True),
        (2, " \\boxed{\\left(3, \\dfrac{\\pi}{2}\\right)}", True, True, True),
        (3, " \\boxed{10}", True, True, True),
        (3, " \\boxed{10 \\text{ centimeters}}", True, True, True),
        (4, " \\boxed{90}", True, True, True),
        (4, " \\boxed{90^{\\circ}}", True, True, True),
        (5, " \\boxed{\\frac{5}{2}}", True, True, True),
        (6, " \\boxed{\\frac{3}{2}}", True, True, True),
        (7, " \\boxed{2}", True, True, True),
        (8, " \\boxed{12000}", True, True, True),
        (9, " \\boxed{2\\sqrt{2}}", True, True, True),
        (10, " \\boxed{25}", True, True, True),
        (0, " \\boxed{\\frac{4}{3}}", False, True, False),
        (0, " Add: $\\frac12+\\frac14=\\frac34$, so the sum is $\\boxed{\\frac{3}{4}}$.", True, True, True),
        (0, " First $\\boxed{\\frac{1}{2}}$, then the sum is \\[\\boxed{\\frac{3}{4}}\\]", True, True, True),
        (0, " The sum is $\\boxed{\\frac{3}{4}}$. Next we check it with decimals.", True, False, False),
        (0, " Not $\\frac{3}{4}$ but half: $\\boxed{\\frac{1}{2}}$.", True, True, False),
    ],
    "triviaqa": [
        (0, " Paris", True, True, True),
        (0, " paris", True, True, True),
        (0, " City of Light", True, True, True),
        (0, " It is Paris.", True, False, False),
        (1, " Washington DC", True, True, True),
        (2, " Da Vinci", True, True, True),
        (3, " Beatles", True, True, True),
        (4, " six", True, True, True),
        (6, " Tolkien", True, True, True),
        (8, " the Nile", True, True, True),
        (9, " Tennis", False, True, False),
    ],
    "nq_open": [
        (0, " Jane Austen", True, True, True),
        (0, " jane austen.", True, True, True),  # the gold itself after normalisation: in form (issue 30)
        (1, " 11 November 1918", True, True, True),
        (1, " 1918", True, True, True),
        (2, " the yen", True, True, True),
        (3, " Sir Alexander Fleming", True, True, True),
        (4, " 4", True, True, True),
        (6, " CO2", True, True, True),
        (7, " Michael Jackson sang it in 1982 on the album of the same name", True, False, False),
        (9, " Jean-Henri Dunant", True, True, True),
        (8, " Saturn", False, True, False),
    ],
    "mmlu": [
        (0, " C. 29", True, True, True),
        (0, " C. 29 is prime", True, False, False),
        (0, " B. 27", False, True, False),
        (1, " B. chloroplast", True, True, True),
        (2, " C. Einstein", True, True, True),
        (3, " B. 2x", True, True, True),
        (4, " A. Neon", True, True, True),
        (5, " A. Gross Domestic Product", True, True, True),
        (6, " C. Thirteenth", True, True, True),
        (7, " D. newton", True, True, True),
        (8, " queue", True, False, False),
    ],
    "arc_challenge": [
        (0, " B. thermometer", True, True, True),
        (1, " C. photosynthesis", True, True, True),
        (1, " 3. photosynthesis", True, False, False),
        (2, " B. whale", True, True, True),
        (3, " C. gravity", True, True, True),
        (3, " E. pressure", False, True, False),
        (4, " D. steel", True, True, True),
        (5, " A. ozone", True, True, True),
        (7, " B. rusting iron", True, True, True),
        (9, " C. copper", True, True, True),
    ],
    "commonsense_qa": [
        (0, " A. library", True, True, True),
        (1, " C. shoes", True, True, True),
        (1, " C. Shoes", True, False, False),
        (2, " A. supermarket", True, True, True),
        (3, " B. light", True, True, True),
        (4, " C. cockpit", True, True, True),
        (5, " B. rain", True, True, True),
        (6, " E. oven", False, True, False),
        (8, " B. umbrella", True, True, True),
        (9, " A. garage", True, True, True),
    ],
}


@pytest.mark.parametrize("name", REAL_TASKS)
def test_rule_judge_on_each_benchmark(prepared, name):
    task = load_task(TASK_DIR, name)
    test = examples(prepared, name)
    cases = CASES[name]
    assert len(cases) >= 10
    verdicts = RuleJudge().judge(task, [test[i] for i, *_ in cases], [r for _, r, *_ in cases])
    got = [(i, r, v.knowledge, v.format, v.strict) for (i, r, *_), v in zip(cases, verdicts, strict=True)]
    assert got == [tuple(case) for case in cases]


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("\\dfrac{1}{2}", "\\frac12"),
        ("\\tfrac{1}{2}", "0.5"),
        ("\\left(1,2\\right)", "(1, 2)"),
        ("10\\text{ inches}", "10"),
        ("45^\\circ", "45"),
        ("\\$5.00", "5"),
        ("x=3", "3"),
        ("1,000,000", "1000000"),
        ("\\frac{-1}{2}", "-0.5"),
        ("\\sqrt3", "\\sqrt{3}"),
        ("50\\%", "50"),
        ("\\mbox{Tuesday}", "Tuesday"),
    ],
)
def test_latex_aware_equivalence(a, b):
    assert same_answer(a, b, "math") and same_answer(b, a, "math")


@pytest.mark.parametrize(
    ("a", "b"), [("\\frac{1}{2}", "\\frac{1}{3}"), ("(1,2)", "(2,1)"), ("2\\sqrt2", "2"), ("", "")]
)
def test_latex_different_answers_differ(a, b):
    assert not same_answer(a, b, "math")


def test_boxed_extraction_balances_braces():
    text = "so $\\boxed{\\frac{1}{2}}$ and finally \\boxed{\\left\\{ 1, 2 \\right\\}} or \\fbox{3}"
    assert boxed_contents(text) == ["\\frac{1}{2}", "\\left\\{ 1, 2 \\right\\}", "3"]
    assert last_boxed("no box here") is None and last_boxed("\\boxed 5.") == "5"
    assert last_boxed("\\boxed{unclosed") is None
    assert normalize_math("\\boxed{\\dfrac{3}{4}}") == "\\frac{3}{4}"


def write_rows(path, rows):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def test_missing_column_names_file_row_and_columns(tmp_path):
    task = load_task(TASK_DIR, "gsm8k")
    for role in ("train", "test"):
        write_rows(tmp_path / "gsm8k" / f"{role}.jsonl", [{"question": "q", "solution": "#### 1"}])
    with pytest.raises(InputError, match=r"train.jsonl, row 0 .*no column 'answer'.*found: question, solution"):
        prepare_task(task, tmp_path / "out", source="mirror", mirror=tmp_path)


def test_bad_gold_and_labels_are_one_clear_error(tmp_path):
    task = load_task(TASK_DIR, "gsm8k")
    for role in ("train", "test"):
        write_rows(tmp_path / "gsm8k" / f"{role}.jsonl", [{"question": "q", "answer": "it is 4"}])
    with pytest.raises(InputError, match="no '####' line"):
        prepare_task(task, tmp_path / "out", source="mirror", mirror=tmp_path)
    arc = load_task(TASK_DIR, "arc_challenge")
    row = {"id": "x", "question": "q", "choices": {"text": ["a", "b"], "label": ["A", "B"]}, "answerKey": "C"}
    for role in ("train", "test"):
        write_rows(tmp_path / "arc_challenge" / f"{role}.jsonl", [row])
    with pytest.raises(InputError, match=r"label 'C' is not among the option names \['A', 'B'\]"):
        prepare_task(arc, tmp_path / "out2", source="mirror", mirror=tmp_path)


def test_missing_mirror_says_how_to_create_it(tmp_path):
    with pytest.raises(InputError, match="softeval mirror --task triviaqa"):
        prepare_task(load_task(TASK_DIR, "triviaqa"), tmp_path / "out", source="mirror", mirror=tmp_path)


def test_hub_loading_records_revision_commit_and_fingerprint(tmp_path, monkeypatch):
    calls = []
    real_load_dataset = datasets.load_dataset

    def fake_load_dataset(path, name=None, split=None, revision=None, **kwargs):
        calls.append((path, name, split, revision))
        role = "train" if split == "train" else "test"
        return real_load_dataset("json", data_files=str(FIXTURES / "gsm8k" / f"{role}.jsonl"), split="train")

    class FakeInfo:
        sha = "0123456789abcdef0123456789abcdef01234567"

    class FakeApi:
        def dataset_info(self, path, revision=None):
            assert (path, revision) == ("openai/gsm8k", "main")
            return FakeInfo()

    monkeypatch.setattr(datasets, "load_dataset", fake_load_dataset)
    monkeypatch.setattr("huggingface_hub.HfApi", FakeApi)
    prepare_task(load_task(TASK_DIR, "gsm8k"), tmp_path, source="hub")
    assert ("openai/gsm8k", "main", "test", "main") in calls
    data = json.loads((tmp_path / "meta.json").read_text())["provenance"]["params"]["data"]
    assert data["test"]["commit"] == FakeInfo.sha and data["test"]["source"] == "hub" and data["test"]["fingerprint"]


def test_hub_failure_is_one_line_with_the_offline_fix(tmp_path, monkeypatch):
    def offline(*args, **kwargs):
        raise ConnectionError("Couldn't reach the hub\nmore detail")

    monkeypatch.setattr(datasets, "load_dataset", offline)
    with pytest.raises(
        InputError, match=r"openai/gsm8k .*cannot load from the hub \(ConnectionError: .*use a local mirror"
    ):
        prepare_task(load_task(TASK_DIR, "gsm8k"), tmp_path, source="hub")


def test_softeval_mirror_writes_parquet_that_the_mirror_switch_reads(tmp_path, monkeypatch):
    from softeval.data.sources import write_mirror

    real_load_dataset = datasets.load_dataset
    sha = "89abcdef0123456789abcdef0123456789abcdef"

    def fake_hub(path, name=None, split=None, revision=None, **kwargs):
        if path in ("json", "parquet"):  # the mirror reader
            return real_load_dataset(path, name, split=split, **kwargs)
        assert path == "cais/mmlu" and revision == "main"
        role = {"validation": "train", "dev": "few_shot", "test": "test"}[split]
        return real_load_dataset("json", data_files=str(FIXTURES / "mmlu" / f"{role}.jsonl"), split="train")

    class FakeApi:
        def dataset_info(self, path, revision=None):
            return type("Info", (), {"sha": sha})()

    monkeypatch.setattr(datasets, "load_dataset", fake_hub)
    monkeypatch.setattr("huggingface_hub.HfApi", FakeApi)
    task = load_task(TASK_DIR, "mmlu")
    record = write_mirror(task, tmp_path / "mirror")
    assert {role: info["rows"] for role, info in record.items()} == {"train": 4, "test": 10, "few_shot": 14}
    assert sorted(p.name for p in (tmp_path / "mirror" / "mmlu").iterdir()) == [
        "MIRROR.json",
        "few_shot.parquet",
        "test.parquet",
        "train.parquet",
    ]
    prepare_task(task, tmp_path / "out", source="mirror", mirror=tmp_path / "mirror")
    assert [ex["answer"] for ex in load_split(tmp_path / "out", "test")] == GOLDS["mmlu"]
    data = json.loads((tmp_path / "out" / "meta.json").read_text())["provenance"]["params"]["data"]
    assert data["test"]["commit"] == sha and data["test"]["file"].endswith("test.parquet")


def test_mmlu_shots_are_the_first_k_of_the_questions_subject(prepared, tmp_path):
    """As lm-evaluation-harness builds MMLU's few-shot prompts: the first k dev questions of the
    question's own subject (fewer where the subject has fewer); a subject without any is named."""
    from softeval.engine.methods import build_prompts, question_shots

    mmlu = load_task(TASK_DIR, "mmlu")
    pool, test = examples(prepared, "mmlu", "few_shot"), examples(prepared, "mmlu")
    shots = question_shots(mmlu, pool, test, 3, 0)
    assert [s["question"] for s in shots[0]] == ["What is 2 + 2?", "What is 10 - 4?", "What is 3 x 3?"]
    assert all({s["group"] for s in own} == {q["group"]} for q, own in zip(test, shots, strict=True))
    physics = next(i for i, q in enumerate(test) if q["group"] == "conceptual_physics")
    assert len(shots[physics]) == 2  # the subject has two dev questions
    prompts = build_prompts(mmlu, "few_shot", test, per_question=shots)
    assert prompts.shared_prefix == mmlu.instruction + "\n\n"  # the shots differ: only the instruction is shared
    assert prompts.prompts[0].count("Question:") == 4 and "Nitrogen" not in prompts.prompts[0]
    assert prompts.prompts[physics].count("Question:") == 3
    assert prompts.shot_ids[:3] == [s["id"] for s in shots[0]]
    with pytest.raises(InputError, match=r"no example of group 'us_history'.*shots: seeded"):
        question_shots(mmlu, [s for s in pool if s["group"] != "us_history"], test, 3, 0)
    # a seeded task: the same draw for every question, one shared prefix, as before
    arc = load_task(TASK_DIR, "arc_challenge")
    arc_pool, arc_test = examples(prepared, "arc_challenge", "few_shot"), examples(prepared, "arc_challenge")
    seeded = question_shots(arc, arc_pool, arc_test, 2, 0)
    assert all(own == seeded[0] for own in seeded)
    same = build_prompts(arc, "few_shot", arc_test, per_question=seeded)
    assert same == build_prompts(arc, "few_shot", arc_test, seeded[0])
    assert same.shared_prefix.count("Question:") == 2


def test_first_in_group_shots_need_a_group_column(tmp_path):
    data = yaml.safe_load((TASK_DIR / "mmlu.yaml").read_text())
    del data["dataset"]["fields"]["group"]
    (tmp_path / "mmlu.yaml").write_text(yaml.safe_dump(data))
    shutil.copy(TASK_DIR / "_lettered_choice.yaml", tmp_path)
    with pytest.raises(InputError, match=r"'prompt\.shots' is first_in_group but dataset\.fields\.group"):
        load_task(tmp_path, "mmlu")
