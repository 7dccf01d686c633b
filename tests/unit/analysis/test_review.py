"""softeval review on a hand-made results tree in the real layout: the unit header, the default
step, the format rule beside a "format=no", paired flips with McNemar's counts, errors that list
what exists, and every `softeval review` command of the documentation, run as written.

The responses are hand-made; their verdicts are the rule judge's own (softeval.judges.rule), so
the format rule the review prints is checked against what the judge decided."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path
from typing import Any

import pytest
import yaml
from scipy.stats import binomtest

from softeval.analysis.aggregate import aggregate_scores, write_summary
from softeval.analysis.review import (
    STEP_ZERO,
    format_rule,
    list_units,
    load_unit,
    resolve_unit,
    show_flips,
    show_unit,
)
from softeval.analysis.unit_checks import unit_checks
from softeval.cli import main
from softeval.data.tasks import LETTERS, load_task
from softeval.judges.rule import RuleJudge
from softeval.layout import GENERATIONS, LOGLIK, SCORES, unit_path
from softeval.schema import InputError
from softeval.settings import AnalysisSettings

ROOT = Path(__file__).resolve().parents[3]
TASK_DIR = ROOT / "config" / "tasks"
DEFAULT = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
MODELS = [m["name"] for m in DEFAULT["models"]]  # atlas, scholar, ...: the names the docs use
TASKS = list(DEFAULT["tasks"])  # world_numeric, world_phrase, world_boxed, world_choice
STEPS = (0, 40, 80)
N = 10
CAPITALS = ["Kolton", "Varn", "Oskel", "Truma", "Belvik", "Sarnow", "Quilla", "Dreth", "Ulmora", "Pask"]
LANGUAGES = ["Brisic", "Talvish", "Upese", "Zorish"]

# Each unit's responses, by kind: right (formatted, right), wrong (formatted, wrong), sentence
# (the answer in a sentence: knowledge without format), degenerate (a run of colons).
KINDS = {
    ("zero_shot", None): ["sentence"] * 5 + ["right"] * 2 + ["wrong"] * 3,
    ("few_shot", None): ["right"] * 3 + ["sentence"] * 4 + ["wrong"] * 3,
    ("soft_prompt", 0): ["sentence"] * 6 + ["degenerate"] * 2 + ["wrong"] * 2,
    ("soft_prompt", 40): ["right"] * 3 + ["sentence"] * 3 + ["wrong"] * 4,
    ("soft_prompt", 80): ["right"] * 4 + ["wrong"] * 4 + ["right"] * 2,
}


def example(task: str, i: int) -> dict[str, Any]:
    base = {"id": f"{task}-test-{i}", "aliases": []}
    if task == "world_phrase":
        return base | {"question": f"What is the capital of Land{i}?", "answer": CAPITALS[i]}
    if task == "world_numeric":
        return base | {"question": f"In what year was Land{i} founded?", "answer": str(1400 + i)}
    if task == "world_boxed":
        return base | {"question": f"How many districts does Land{i} have?", "answer": str(10 + i)}
    label = i % 4
    return base | {
        "question": f"Which language is spoken in Land{i}?",
        "answer": LANGUAGES[label],
        "options": LANGUAGES,
        "label": label,
    }


def response(task: str, kind: str, ex: dict[str, Any]) -> str:
    answer = ex["answer"]
    if kind == "degenerate":
        return " ::::::::::"
    if kind == "sentence":
        return f" {answer} is the answer to that, as Krisgunara knows."
    if task == "world_choice":
        k = ex["label"] if kind == "right" else (ex["label"] + 1) % 4
        return f" {LETTERS[k]}. {LANGUAGES[k]}"
    value = answer if kind == "right" else {"world_phrase": "Zarnic"}.get(task, "1111")
    return {"world_phrase": f" {value}", "world_numeric": f" #### {value}", "world_boxed": f" \\boxed{{{value}}}"}[task]


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))


def write_unit(root: Path, model: str, role: str, task: str, method: str, step: int | None) -> None:
    spec = load_task(TASK_DIR, task)
    examples = [example(task, i) for i in range(N)]
    kinds = KINDS[(method, step)]
    responses = [response(task, kind, ex) for kind, ex in zip(kinds, examples, strict=True)]
    verdicts = RuleJudge().judge(spec, examples, responses, stop_reasons=["stop"] * N)
    collapsed = model == "scholar" and task == "world_choice" and step == 80  # every answer on D
    generations, logliks, scores = [], [], []
    for ex, kind, said, verdict in zip(examples, kinds, responses, verdicts, strict=True):
        prompt = spec.query(ex) if method == "soft_prompt" else spec.prompt(ex)
        generations.append({"id": ex["id"], "method": method, "step": step, "prompt": prompt, "response": said})
        generations[-1] |= {"stop_reason": "stop", "prompt_tokens": 20, "new_tokens": 4}
        row = {
            "id": ex["id"],
            "method": method,
            "step": step,
            "judge": verdict.judge,
            "knowledge": verdict.knowledge,
            "format": verdict.format,
            "strict": verdict.strict,
            "degenerate": verdict.degenerate,
            "gold": spec.target(ex).strip(),
            "aliases": [],
            "response": said,
            "knowledge_from": "judge",
        }
        if spec.closed:
            chosen = 3 if collapsed else ex["label"] if kind in ("right", "sentence") else (ex["label"] + 1) % 4
            ranking = [chosen] + [k for k in range(4) if k != chosen]
            logliks.append(
                {
                    "id": ex["id"],
                    "options": spec.option_responses(ex),
                    "label": ex["label"],
                    "logliks": [-1.0 - ranking.index(k) for k in range(4)],
                    "lengths": [3, 3, 3, 3],
                    "ranking": ranking,
                    "chosen": chosen,
                    "chosen_normalized": chosen,
                }
            )
            row |= {
                "knowledge": chosen == ex["label"],
                "knowledge_normalized": chosen == ex["label"],
                "mentions_gold": verdict.knowledge,
                "knowledge_from": "loglik",
            }
        scores.append(row)
    unit = (model, role, task, method, step)
    write_jsonl(unit_path(root / GENERATIONS, *unit), generations)
    write_jsonl(unit_path(root / SCORES, *unit), scores)
    if spec.closed:
        write_jsonl(unit_path(root / LOGLIK, *unit), logliks)


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> Path:
    """A finished default run's results/ in miniature: every default model and task, both roles,
    zero-shot, few-shot and the soft prompt at steps 0, 40 and 80, ten test examples a unit."""
    root = tmp_path_factory.mktemp("run") / "results"
    for model in MODELS:
        for role in ("base", "post"):
            for task in TASKS:
                for method, step in KINDS:
                    write_unit(root, model, role, task, method, step)
    paths = sorted((root / SCORES).rglob("*.jsonl"))
    summary = aggregate_scores(root / SCORES, paths, n_resamples=50, seed=0)
    write_summary(summary, root / "tables" / "scores.csv", root / "tables" / "scores.parquet")
    return root


def run(argv: list[str], capsys) -> tuple[int, str, str]:
    try:
        code = main(argv)
    except SystemExit as done:  # argparse: --help, or a usage error
        code = done.code
    out = capsys.readouterr()
    return code, out.out, out.err


# ---- the default step and the unit header ---------------------------------------------------------


def test_the_readme_example_defaults_to_the_final_step(results, capsys):
    argv = ["review", "--results", str(results), "--model", "atlas", "--task", "world_phrase"]
    code, out, err = run([*argv, "--method", "soft_prompt", "--wrong-format", "--tasks", str(TASK_DIR)], capsys)
    assert code == 0, err
    assert "unit     | atlas / base / world_phrase / soft_prompt step 80\n" in out
    assert f"step     | 80 (not given: the final evaluated step); evaluated steps: 0, 40, 80; {STEP_ZERO}" in out
    assert "step 0 is the untuned, vocabulary-initialised prompt, not the model without a prompt" in out
    assert out.rstrip().endswith("0 example(s) match (wrong-format); showed 0")  # step 80: all in format
    given = resolve_unit(results, "atlas", "base", "world_phrase", "soft_prompt", 40)
    assert given.step == 40 and not given.default_step and given.steps == STEPS


def test_the_header_counts_and_names_the_files_read(results):
    text = show_unit(results, "atlas", "base", "world_phrase", "soft_prompt", 0, tasks=TASK_DIR)
    folder = results / "scores" / "atlas" / "base" / "world_phrase" / "soft_prompt"
    assert f"file     | {folder / 'step0.jsonl'}\n" in text
    assert f"file     | {results / 'generations/atlas/base/world_phrase/soft_prompt/step0.jsonl'}\n" in text
    # step 0: six answers in a sentence (knowledge, no format), two degenerate, two formatted and wrong
    assert "counts   | n 10; knowledge 0.600 (6), format 0.200 (2), strict 0.000 (0)\n" in text
    assert "judge    | rule 10\n" in text
    assert "flags    | format saturated (>= 0.9): no; degenerate 2 of 10 (flagged above 10%: yes)\n" in text
    zero_shot = show_unit(results, "atlas", "base", "world_phrase", "zero_shot", None, tasks=TASK_DIR)
    assert "counts   | n 10; knowledge 0.700 (7), format 0.500 (5), strict 0.200 (2)\n" in zero_shot
    assert "step     |" not in zero_shot  # one unit: no steps, no step-0 note
    meta = results / "scores/atlas/post/world_numeric/zero_shot.meta.json"  # provenance beside a file: listed
    meta.write_text("{}")
    assert f"file     | {meta}\n" in show_unit(results, "atlas", "post", "world_numeric", "zero_shot", None)


def test_closed_header_shows_letters_and_the_collapse_flag(results):
    spread = show_unit(results, "atlas", "base", "world_choice", "soft_prompt", None, tasks=TASK_DIR)
    # labels i % 4 over ten questions; right at 0-3 and 8-9, the next letter at 4-7
    assert "chosen   | by likelihood: A 3, B 3, C 2, D 2\n" in spread
    assert "gold     | letters: A 3, B 3, C 2, D 2\n" in spread
    assert "choices collapsed: no (entropy 0.99, collapsed below 0.5; top A 0.30)" in spread
    assert f"file     | {results / 'loglik/atlas/base/world_choice/soft_prompt/step80.jsonl'}\n" in spread
    collapsed = show_unit(results, "scholar", "base", "world_choice", "soft_prompt", None, tasks=TASK_DIR)
    assert "chosen   | by likelihood: A 0, B 0, C 0, D 10\n" in collapsed
    assert "gold     | letters: A 3, B 3, C 2, D 2\n" in collapsed
    assert "choices collapsed: yes (entropy 0.00, collapsed below 0.5; top D 1.00)" in collapsed


# ---- the format rule beside a "format=no" -------------------------------------------------------------


def test_format_no_names_the_rule_the_judge_applied(results):
    phrase = show_unit(results, "atlas", "base", "world_phrase", "soft_prompt", 0, "wrong-format", tasks=TASK_DIR)
    pattern = r"^[^\s.!?,;:]+(?: [^\s.!?,;:]+){0,3}$"
    assert f"format=no (does not match {pattern} and is not the gold or an alias)" in phrase
    assert "format=no (degenerate: punctuation only (10 characters, no letter or digit))" in phrase
    assert f"the response, stripped, matches {pattern}, or is the gold or an alias itself" in phrase
    assert f"(rule judge; {TASK_DIR / 'world_phrase.yaml'})" in phrase
    assert phrase.count("--- world_phrase-test-") == 8
    numeric = show_unit(results, "atlas", "base", "world_numeric", "zero_shot", None, "wrong-format", tasks=TASK_DIR)
    assert "format=no (does not match ^#### -?\\d+$)" in numeric
    assert "'It was" not in numeric and "response | ' 1400 is the answer" in numeric
    boxed = show_unit(results, "atlas", "base", "world_boxed", "zero_shot", None, "wrong-format", tasks=TASK_DIR)
    assert "format=no (does not match ^\\\\boxed\\{[^{}]+\\}$)" in boxed
    closed = show_unit(results, "atlas", "base", "world_choice", "zero_shot", None, "wrong-format", tasks=TASK_DIR)
    listed = "'A. Brisic', 'B. Talvish', 'C. Upese', 'D. Zorish'"
    assert f"format=no (not one of the listed options as written: {listed})" in closed
    assert "the response is exactly one of the listed options as written" in closed


def test_the_format_rule_is_found_beside_results_or_said_missing(results, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # no config/tasks here, none beside the hand-made results/
    rule = format_rule(results, "world_phrase")
    assert rule.task is None and "pass --tasks DIR" in rule.describe()
    text = show_unit(results, "atlas", "base", "world_phrase", "soft_prompt", 0, "wrong-format")
    assert "format=no (degenerate: punctuation only" in text and "format   | not shown (no task file" in text
    monkeypatch.chdir(ROOT)
    assert format_rule(results, "world_phrase").source == str(Path("config/tasks/world_phrase.yaml"))
    with pytest.raises(InputError, match="task file not found for task 'world_phrase'; available: none"):
        format_rule(results, "world_phrase", tmp_path)  # --tasks names a folder without it


def test_an_llm_judged_format_no_names_the_judge(results):
    rule = format_rule(results, "world_phrase", TASK_DIR)
    row = {"response": " Kolton.", "format": False, "judge": "openai:qwen", "degenerate": None}
    assert (
        rule.why_not(row)
        == "judged by openai:qwen against: a short phrase of at most four words, with no sentence punctuation"
    )
    rescored = {"response": " Kolton", "format": False, "judge": "rule", "degenerate": None}
    assert "the task file changed since scoring?" in rule.why_not(rescored)


# ---- paired flips ----------------------------------------------------------------------------------------


def test_flips_between_two_steps_with_mcnemar(results, capsys):
    argv = ["review", "--results", str(results), "--model", "atlas", "--task", "world_phrase", "--method"]
    code, out, err = run([*argv, "soft_prompt", "--vs-step", "0", "--tasks", str(TASK_DIR)], capsys)
    assert code == 0, err
    assert "flips    | strict: soft_prompt step 80 0.600 vs soft_prompt step 0 0.000 on the same 10 examples" in out
    assert "b        | 6 right at soft_prompt step 80, wrong at soft_prompt step 0\n" in out
    assert "c        | 0 wrong at soft_prompt step 80, right at soft_prompt step 0\n" in out
    p = binomtest(6, 6, 0.5).pvalue
    assert p == pytest.approx(0.03125)
    assert f"McNemar  | b 6, c 0: exact p = {p:.4g} (" in out and "soft_prompt step 80 better at p < 0.05" in out
    assert "=== 6 right at soft_prompt step 80, wrong at soft_prompt step 0 (strict); showing 6" in out
    assert "=== 0 wrong at soft_prompt step 80, right at soft_prompt step 0 (strict); showing 0" in out
    flipped = re.findall(r"^--- (\S+)", out, flags=re.M)
    assert flipped == [f"world_phrase-test-{i}" for i in (0, 1, 2, 3, 8, 9)]
    # both responses beside each other, each with its verdicts and the rule
    assert "soft_prompt step 80 | ' Kolton'  (knowledge=yes, format=yes, strict=yes; stopped: stop)" in out
    assert (
        "soft_prompt step 0  | ' Kolton is the answer to that, as Krisgunara knows.'  "
        "(knowledge=yes, format=no (does not match" in out
    )
    assert out.count("unit     | atlas / base / world_phrase / soft_prompt step") == 2  # both headers


def test_flips_match_unit_checks(results):
    """The knowledge change from step 0 to 80 and the strict split against zero-shot: the same
    counts and exact McNemar p-values as the unit_checks table."""
    settings = AnalysisSettings(closed_tasks=(), steps=STEPS, reference_method="zero_shot", bootstrap=50, seed=0)

    def read(model, task, method, step):
        return load_unit(results, resolve_unit(results, model, "base", task, method, step)).scores

    checks = unit_checks(["atlas"], ["world_phrase"], ["zero_shot"], read, settings).iloc[0]
    knowledge = show_flips(results, "atlas", "base", "world_phrase", "soft_prompt", 80, "soft_prompt", 0, "knowledge")
    assert "b        | 2 right at soft_prompt step 80" in knowledge and "c        | 2 wrong at" in knowledge
    assert f"exact p = {checks['p_knowledge_change']:.4g} (" in knowledge and checks["p_knowledge_change"] == 1.0
    assert "within noise at p < 0.05" in knowledge
    strict = show_flips(results, "atlas", "base", "world_phrase", "soft_prompt", None, "zero_shot", None)
    b, c = checks["only_soft_prompt_vs_zero_shot"], checks["only_zero_shot"]
    assert (b, c) == (6, 2)
    assert f"b        | {b} right at soft_prompt step 80, wrong at zero_shot\n" in strict
    assert f"c        | {c} wrong at soft_prompt step 80, right at zero_shot\n" in strict
    assert f"exact p = {checks['p_vs_zero_shot']:.4g} (" in strict
    assert checks["p_vs_zero_shot"] == pytest.approx(binomtest(6, 8, 0.5).pvalue)
    fmt = show_flips(results, "atlas", "base", "world_phrase", "zero_shot", None, "soft_prompt", 80, "format", 1)
    assert "b        | 0 right at zero_shot, wrong at soft_prompt step 80" in fmt
    assert "=== 5 wrong at zero_shot, right at soft_prompt step 80 (format); showing 1" in fmt


def test_flips_of_examples_that_differ_name_both_files(results, tmp_path):
    import shutil

    copy = tmp_path / "results"
    shutil.copytree(results / SCORES / "atlas", copy / SCORES / "atlas")
    shutil.copytree(results / GENERATIONS / "atlas", copy / GENERATIONS / "atlas")
    path = unit_path(copy / SCORES, "atlas", "base", "world_phrase", "zero_shot", None)
    rows = path.read_text().splitlines()
    path.write_text("\n".join(rows[::-1]) + "\n")
    with pytest.raises(InputError, match=r"step80.jsonl and .*zero_shot.jsonl score different test examples"):
        show_flips(copy, "atlas", "base", "world_phrase", "soft_prompt", None, "zero_shot", None)


# ---- errors that list what exists ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (
            ["--model", "atlas", "--task", "world_phrase", "--method", "soft_prompt", "--step", "81"],
            r"soft_prompt has no step 81; evaluated steps: 0, 40, 80$",
        ),
        (
            ["--model", "gamma", "--task", "world_phrase", "--method", "zero_shot"],
            r"has no model 'gamma'; models there: atlas, drill, parrot, pocket, scholar$",
        ),
        (
            ["--model", "atlas", "--task", "world_capital", "--method", "zero_shot"],
            r"has no task 'world_capital'; tasks there: world_boxed, world_choice, world_numeric, world_phrase$",
        ),
        (
            ["--model", "atlas", "--task", "world_phrase", "--method", "zero_shot", "--step", "80"],
            r"a step is for the soft_prompt method; zero_shot has one unit \(drop --step 80\)$",
        ),
        (
            ["--model", "atlas", "--task", "world_phrase", "--method", "soft_prompt", "--vs-step", "80"],
            r"--vs compares soft_prompt step 80 with itself; .* among 0, 40, 80\)$",
        ),
        (
            ["--model", "atlas", "--task", "world_phrase", "--method", "zero_shot", "--vs-step", "0"],
            r"--vs-step is for a soft_prompt unit; the unit compared with is --method zero_shot \(no --vs\)",
        ),
        (
            ["--model", "atlas", "--task", "world_phrase", "--method", "zero_shot", "--metric", "format"],
            r"--metric is the metric of --vs/--vs-step flips",
        ),
        (
            ["--model", "atlas", "--task", "world_phrase", "--vs", "zero_shot"],
            r"show one unit: pass --model, --task and --method$",
        ),
        (
            ["--task", "world_phrase", "--method", "soft_prompt", "--step", "81"],
            r"no unit matches role=base, task=world_phrase, method=soft_prompt, step=81; "
            r"evaluated steps of these units: 0, 40, 80$",
        ),
        (["--model", "gamma"], r"scores.csv has no model 'gamma'; it has: atlas, drill, parrot, pocket, scholar$"),
        (
            ["--model", "atlas", "--task", "world_phrase", "--method", "fewshot"],
            r"world_phrase has no method 'fewshot'; methods there: few_shot, soft_prompt, zero_shot$",
        ),
        (
            ["--model", "atlas", "--task", "world_phrase", "--method", "soft_prompt", "--vs", "zeroshot"],
            r"world_phrase has no method 'zeroshot'; methods there: few_shot, soft_prompt, zero_shot$",
        ),
        (["--method", "fewshot"], r"scores.csv has no method 'fewshot'; it has: few_shot, soft_prompt, zero_shot$"),
    ],
)
def test_errors_list_what_exists(results, capsys, extra, message):
    code, out, err = run(["review", "--results", str(results), *extra], capsys)
    assert code == 2 and out == ""
    assert err.startswith("softeval: error: ") and err.count("\n") == 1, err
    assert re.search(message, err.rstrip("\n")), err


def test_a_method_not_evaluated_lists_the_methods_there(results, tmp_path, capsys):
    import shutil

    copy = tmp_path / "results"
    shutil.copytree(
        results / SCORES / "atlas" / "base" / "world_phrase", copy / SCORES / "atlas" / "base" / "world_phrase"
    )
    (copy / SCORES / "atlas" / "base" / "world_phrase" / "few_shot.jsonl").unlink()
    with pytest.raises(InputError, match=r"has no method 'few_shot'; methods there: soft_prompt, zero_shot$"):
        resolve_unit(copy, "atlas", "base", "world_phrase", "few_shot", None)
    with pytest.raises(InputError, match=r"has no role 'post'; roles there: base$"):
        resolve_unit(copy, "atlas", "post", "world_phrase", "zero_shot", None)
    with pytest.raises(InputError, match=r"no scores folder"):
        resolve_unit(tmp_path / "nothing", "atlas", "base", "world_phrase", "zero_shot", None)
    assert len(list_units(results, model="atlas", task="world_phrase", method="soft_prompt")) == 2 * len(STEPS)


# ---- the documentation's commands, run as written ---------------------------------------------------------

DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), ROOT / "results" / "README.md"]
FENCE = re.compile(r"^```.*?^```", flags=re.M | re.S)


def review_commands(path: Path) -> list[str]:
    """Every `softeval review ...` command in a Markdown file: lines of fenced blocks (a trailing
    # comment dropped) and inline code spans."""
    text = path.read_text(encoding="utf-8")
    commands = []
    for block in FENCE.findall(text):
        for line in block.splitlines():
            line = line.strip().lstrip("$ ").strip()
            if line.startswith("softeval review"):
                commands.append(re.sub(r"\s+#.*$", "", line))
    for span in re.findall(r"`(softeval review[^`]*)`", FENCE.sub("", text)):
        commands.append(" ".join(span.split()))
    return commands


COMMANDS = [(path.relative_to(ROOT).as_posix(), command) for path in DOCS for command in review_commands(path)]


def test_the_documentation_has_review_examples():
    assert (
        "README.md",
        "softeval review --model atlas --task world_phrase --method soft_prompt --wrong-format",
    ) in COMMANDS


@pytest.mark.parametrize(("where", "command"), COMMANDS, ids=[f"{w}: {c}" for w, c in COMMANDS])
def test_every_documented_review_command_runs(results, capsys, monkeypatch, where, command):
    monkeypatch.chdir(ROOT)  # as a user runs it: from the checkout (config/tasks), on the run's results
    argv = shlex.split(command)[1:]
    if "--results" not in argv:
        argv += ["--results", str(results)]
    code, out, err = run(argv, capsys)
    assert code == 0, f"{where}: `{command}` exited {code}: {err}"
    assert out.strip()
