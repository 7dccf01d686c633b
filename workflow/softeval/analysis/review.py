"""Artifact review: list the evaluated units and show the examples behind any table cell.

Everything is read from results/: the tidy table for the list, and for a cell the
per-example verdicts joined with the generation (full prompt, stop reason) and, for
closed tasks, the option log-likelihoods. A unit is shown under a header that says which
unit it is (the soft prompt's step, and which steps were evaluated), which files were read,
its counts (knowledge, format and strict means; on closed tasks the letters chosen by
likelihood and the gold letters, with unit_checks' collapse flag) and the task's format
rule, which is repeated beside every "format=no". Two units of one model, role and task are
compared example by example (`flips`): the examples one gets right and the other wrong, both
ways, with the exact McNemar test that unit_checks computes on the same split.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from softeval.analysis.aggregate import KEYS, load_summary
from softeval.analysis.evidence import COLLAPSE_ENTROPY, FORMAT_SATURATED, SIGNIFICANCE, Paired, choice_spread
from softeval.analysis.leaderboard import DEGENERATE_SHARE, degenerate_share
from softeval.analysis.unit_checks import paired
from softeval.data.tasks import LETTERS, Task, load_task
from softeval.io import check_slug, read_jsonl
from softeval.layout import GENERATIONS, LOGLIK, SCORES, SOFT_PROMPT, unit_folder, unit_path
from softeval.schema import InputError

FILTERS = {
    "all": lambda r: True,
    "wrong-format": lambda r: not r["format"],
    "wrong-knowledge": lambda r: not r["knowledge"],
    "right-knowledge-wrong-format": lambda r: r["knowledge"] and not r["format"],
    "not-strict": lambda r: not r["strict"],
}
METRICS = ("knowledge", "format", "strict")
STEP_ZERO = (
    "step 0 is the untuned, vocabulary-initialised prompt, not the model without a prompt "
    "(compare with --method zero_shot)"
)


def list_units(results: Path, **filters: Any) -> pd.DataFrame:
    """Rows of results/tables/scores.csv matching the given column values."""
    path = results / "tables" / "scores.csv"
    table = load_summary(path)
    for column, value in filters.items():
        if value is None or column == "step":
            continue
        known = sorted({str(v) for v in table[column].dropna()})
        if column in ("model", "task", "method") and str(value) not in known:
            raise InputError(f"{path} has no {column} {value!r}; it has: {', '.join(known) or 'none'}")
        table = table[table[column].astype(str) == str(value)]
    before_step = table
    if filters.get("step") is not None:  # a float column (NaN for the plain methods): 80 is 80.0
        table = table[table["step"] == float(filters["step"])]
    if table.empty:
        steps = sorted({int(s) for s in before_step["step"].dropna()})
        have = f"; evaluated steps of these units: {_listed(steps)}" if filters.get("step") is not None else ""
        raise InputError(
            f"{path}: no unit matches {', '.join(f'{k}={v}' for k, v in filters.items() if v is not None)}{have}"
        )
    return table[[*KEYS, "n", "knowledge", "format", "strict"]]


def _listed(values: list[Any]) -> str:
    return ", ".join(str(v) for v in values) or "none"


# ---- one unit: which it is, what exists ----------------------------------------------------------


@dataclass(frozen=True)
class Unit:
    """One evaluated unit, as resolved against the files present: `steps` are the soft prompt's
    evaluated steps (scores files), `default_step` says the step was not given and is the last."""

    model: str
    role: str
    task: str
    method: str
    step: int | None
    steps: tuple[int, ...] = ()
    default_step: bool = False

    @property
    def label(self) -> str:
        return self.method if self.step is None else f"{self.method} step {self.step}"

    @property
    def key(self) -> tuple[str, str, str, str, int | None]:
        return self.model, self.role, self.task, self.method, self.step


def _folders(folder: Path) -> list[str]:
    """The names of the sub-folders (hidden ones, e.g. a killed job's .parts, left out)."""
    return (
        sorted(p.name for p in folder.iterdir() if p.is_dir() and not p.name.startswith(".")) if folder.is_dir() else []
    )


def evaluated_steps(results: Path, model: str, role: str, task: str) -> list[int]:
    """The soft prompt's steps with a scores file, in order."""
    folder = results / SCORES / unit_folder(model, role, task) / SOFT_PROMPT
    names = (p.stem for p in folder.glob("step*.jsonl")) if folder.is_dir() else ()
    return sorted(int(name[4:]) for name in names if name[4:].isdigit())


def evaluated_methods(results: Path, model: str, role: str, task: str) -> list[str]:
    """The methods with a scores file for this model, role and task (soft_prompt: any step)."""
    folder = results / SCORES / unit_folder(model, role, task)
    methods = [p.stem for p in folder.glob("*.jsonl")] if folder.is_dir() else []
    if evaluated_steps(results, model, role, task):
        methods.append(SOFT_PROMPT)
    return sorted(methods)


def resolve_unit(results: Path, model: str, role: str, task: str, method: str, step: int | None) -> Unit:
    """The unit named, checked against the scores files present: an unknown model, role, task,
    method or step is one InputError listing those that exist; a soft-prompt unit without a
    step is the final evaluated step (the largest with a scores file)."""
    check_slug(model, "model")
    check_slug(task, "task")
    scores = results / SCORES
    if not scores.is_dir():
        raise InputError(f"{scores}: no scores folder; run the workflow first, or pass --results <run>/results")
    levels = ((model, "model", scores), (role, "role", scores / model), (task, "task", scores / model / role))
    for name, what, folder in levels:
        known = _folders(folder)
        if name not in known:
            raise InputError(f"{folder} has no {what} {name!r}; {what}s there: {_listed(known)}")
    methods = evaluated_methods(results, model, role, task)
    if method not in methods:
        raise InputError(
            f"{scores / unit_folder(model, role, task)} has no method {method!r}; methods there: {_listed(methods)}"
        )
    if method != SOFT_PROMPT:
        if step is not None:
            raise InputError(f"a step is for the soft_prompt method; {method} has one unit (drop --step {step})")
        return Unit(model, role, task, method, None)
    steps = tuple(evaluated_steps(results, model, role, task))
    if step is None:
        return Unit(model, role, task, method, steps[-1], steps, default_step=True)
    if step not in steps:
        folder = scores / unit_folder(model, role, task) / SOFT_PROMPT
        raise InputError(f"{folder} has no step {step}; evaluated steps: {_listed(list(steps))}")
    return Unit(model, role, task, method, step, steps)


# ---- one unit's files ------------------------------------------------------------------------------


@dataclass
class UnitData:
    """A unit's score rows (test order) with its generations and option log-likelihoods by id,
    and the files they came from."""

    unit: Unit
    scores: list[dict[str, Any]]
    generations: dict[str, dict[str, Any]]
    logliks: dict[str, dict[str, Any]]
    files: list[Path] = field(default_factory=list)

    @property
    def closed(self) -> bool:
        return any(row.get("knowledge_from") == "loglik" for row in self.scores)

    def example(self, row: dict[str, Any]) -> dict[str, Any]:
        """A score row joined with its prompt, stop reason and options (the shape format_example reads)."""
        generation = self.generations.get(row["id"], {})
        return {
            **row,
            "prompt": generation.get("prompt"),
            "stop_reason": generation.get("stop_reason"),
            "options": self.logliks.get(row["id"]),
        }


def load_unit(results: Path, unit: Unit) -> UnitData:
    scores_path = unit_path(results / SCORES, *unit.key)
    generations_path = unit_path(results / GENERATIONS, *unit.key)
    logliks_path = unit_path(results / LOGLIK, *unit.key)
    scores = read_jsonl(scores_path, "scores")
    generations = {row["id"]: row for row in read_jsonl(generations_path, "generation")}
    files = [scores_path, generations_path]
    logliks: dict[str, dict[str, Any]] = {}
    if logliks_path.is_file():
        logliks = {row["id"]: row for row in read_jsonl(logliks_path, "log-likelihood")}
        files.append(logliks_path)
    files += [p for p in (_meta(scores_path), _meta(generations_path), _meta(logliks_path)) if p.is_file()]
    return UnitData(unit, scores, generations, logliks, files)


def _meta(path: Path) -> Path:
    return path.with_name(path.stem + ".meta.json")


def unit_examples(
    results: Path, model: str, role: str, task: str, method: str, step: int | None, which: str = "all"
) -> list[dict[str, Any]]:
    """The examples of one unit that pass filter `which`, with prompt, response, verdicts and gold."""
    for name, what in ((model, "model"), (task, "task")):
        check_slug(name, what)
    if which not in FILTERS:
        raise InputError(f"unknown filter {which!r}; use one of {', '.join(FILTERS)}")
    data = load_unit(results, Unit(model, role, task, method, step))
    return [data.example(row) for row in data.scores if FILTERS[which](row)]


# ---- the format rule the judge applied ---------------------------------------------------------------


def anchored(pattern: str) -> str:
    """A pattern as re.fullmatch applies it: ^...$ (a top-level alternation in a group)."""
    return f"^(?:{pattern})$" if "|" in pattern else f"^{pattern}$"


@dataclass(frozen=True)
class FormatRule:
    """What the rule judge checks for format on this task (softeval.data.tasks.Task.is_formatted,
    softeval.judges.rule): read from the task file, or `missing` says why it is not shown."""

    task: Task | None
    source: str  # the task file, or why there is none

    def describe(self) -> str:
        if self.task is None:
            return f"not shown ({self.source})"
        task = self.task
        if task.closed:
            rule = "the response is exactly one of the listed options as written (e.g. 'B. <option text>')"
        else:
            assert task.format_pattern is not None
            rule = f"the response, stripped, matches {anchored(task.format_pattern.pattern)}"
            if task.answer_type in ("span", "text"):
                rule += ", or is the gold or an alias itself"
        return (
            f"{task.format_description}: {rule}; a degenerate response is never in format (rule judge; {self.source})"
        )

    def why_not(self, example: dict[str, Any]) -> str | None:
        """Why the judge said "format no" to this example, as far as the files tell."""
        if example.get("degenerate"):
            return f"degenerate: {example['degenerate']}"
        judge = example.get("judge") or "rule"
        if self.task is None:
            return None if judge == "rule" else f"judged by {judge}"
        task = self.task
        if judge != "rule":
            return f"judged by {judge} against: {task.format_description}"
        response = str(example.get("response") or "").strip()
        if task.closed:
            listed = (example.get("options") or {}).get("options")
            shown = ", ".join(repr(o) for o in listed) if listed else "'<letter>. <option text>'"
            return f"not one of the listed options as written: {shown}"
        assert task.format_pattern is not None
        pattern = anchored(task.format_pattern.pattern)
        if task.format_pattern.fullmatch(response):
            return f"scored no, yet it matches {pattern}: the task file changed since scoring? rerun the judge"
        text = f"does not match {pattern}"
        if task.answer_type in ("span", "text"):
            text += " and is not the gold or an alias"
        return text


def task_dirs(results: Path, tasks: Path | None) -> list[Path]:
    """Where the task file may be: --tasks, else config/tasks beside results/, else under the
    current folder."""
    if tasks is not None:
        return [tasks]
    return [results.resolve().parent / "config" / "tasks", Path("config") / "tasks"]


def format_rule(results: Path, task: str, tasks: Path | None = None) -> FormatRule:
    """The task's format rule: from --tasks (a missing file is an error listing the tasks there),
    else the first task file found (none: the rule is not shown, and the header says why)."""
    if tasks is not None:
        return FormatRule(load_task(tasks, task), str(tasks / f"{task}.yaml"))
    for folder in task_dirs(results, tasks):
        path = folder / f"{check_slug(task, 'task')}.yaml"
        if path.is_file():
            return FormatRule(load_task(folder, task), str(path))
    return FormatRule(None, f"no task file {task}.yaml beside {results} or in ./config/tasks: pass --tasks DIR")


# ---- one example -------------------------------------------------------------------------------------


def verdict_text(example: dict[str, Any], kind: str, rule: FormatRule | None = None) -> str:
    """One verdict, "kind=yes" or "kind=no"; a format "no" says why: the degenerate reason the
    score row records, or the task's format rule the response fails."""
    text = f"{kind}={'yes' if example[kind] else 'no'}"
    if kind == "format" and not example[kind]:
        why = rule.why_not(example) if rule is not None else None
        if why is None and example.get("degenerate"):
            why = f"degenerate: {example['degenerate']}"
        if why:
            text += f" ({why})"
    return text


def verdicts(example: dict[str, Any], rule: FormatRule | None = None) -> str:
    return ", ".join(verdict_text(example, k, rule) for k in METRICS)


def format_example(example: dict[str, Any], rule: FormatRule | None = None) -> str:
    lines = [
        f"--- {example['id']}  ({verdicts(example, rule)}; knowledge from {example.get('knowledge_from', 'judge')})"
    ]
    lines += [f"prompt   | {line}" for line in (example.get("prompt") or "").splitlines()]
    lines.append(f"response | {example['response']!r}  (stopped: {example.get('stop_reason')})")
    lines += _gold_lines(example)
    return "\n".join(lines)


def _gold_lines(example: dict[str, Any]) -> list[str]:
    lines = [f"gold     | {example['gold']!r}"]
    if example.get("aliases"):
        lines.append(f"aliases  | {', '.join(repr(a) for a in example['aliases'])}")
    options = example.get("options")
    if options:
        ranked = ", ".join(f"{options['options'][k]} ({options['logliks'][k]:.2f})" for k in options["ranking"])
        lines.append(f"options  | by log-likelihood: {ranked}")
    return lines


# ---- the unit header ---------------------------------------------------------------------------------


def _letters(values: list[int], n_options: int) -> str:
    counts = Counter(values)
    return ", ".join(f"{LETTERS[k]} {counts.get(k, 0)}" for k in range(n_options))


def unit_header(data: UnitData, rule: FormatRule) -> list[str]:
    """Which unit, which files, its counts and flags, and the format rule."""
    unit, rows = data.unit, data.scores
    lines = [f"unit     | {unit.model} / {unit.role} / {unit.task} / {unit.label}"]
    if unit.method == SOFT_PROMPT:
        lines.append(
            f"step     | {unit.step}"
            + (" (not given: the final evaluated step)" if unit.default_step else "")
            + f"; evaluated steps: {_listed(list(unit.steps))}; {STEP_ZERO}"
        )
    lines += [f"file     | {path}" for path in data.files]
    n = len(rows)
    means = ", ".join(f"{k} {_mean(rows, k):.3f} ({sum(bool(r[k]) for r in rows)})" for k in METRICS)
    lines.append(f"counts   | n {n}; {means}")
    judges = Counter(str(r.get("judge") or "rule") for r in rows)
    lines.append(f"judge    | {', '.join(f'{name} {count}' for name, count in sorted(judges.items()))}")
    saturated = bool(n) and _mean(rows, "format") >= FORMAT_SATURATED
    flags = [f"format saturated (>= {FORMAT_SATURATED}): {'yes' if saturated else 'no'}"]
    share, _ = degenerate_share(rows)
    if share == share:  # not nan
        count = round(share * n)
        flagged = "yes" if share > DEGENERATE_SHARE else "no"
        flags.append(f"degenerate {count} of {n} (flagged above {DEGENERATE_SHARE:.0%}: {flagged})")
    if data.closed and data.logliks:
        options = [data.logliks[r["id"]] for r in rows if r["id"] in data.logliks]
        n_options = max(len(o["options"]) for o in options)
        chosen, gold = [int(o["chosen"]) for o in options], [int(o["label"]) for o in options]
        spread = choice_spread(chosen, n_options)
        lines.append(f"chosen   | by likelihood: {_letters(chosen, n_options)}")
        lines.append(f"gold     | letters: {_letters(gold, n_options)}")
        collapsed = spread.entropy < COLLAPSE_ENTROPY
        flags.append(
            f"choices collapsed: {'yes' if collapsed else 'no'} (entropy {spread.entropy:.2f}, "
            f"collapsed below {COLLAPSE_ENTROPY}; top {spread.top_letter} {spread.top_share:.2f})"
        )
    elif data.closed:
        flags.append("choices: no option log-likelihood file")
    lines.append(f"flags    | {'; '.join(flags)}")
    lines.append(f"format   | {rule.describe()}")
    return lines


def _mean(rows: list[dict[str, Any]], metric: str) -> float:
    return sum(bool(r[metric]) for r in rows) / len(rows) if rows else float("nan")


def show_unit(
    results: Path,
    model: str,
    role: str,
    task: str,
    method: str,
    step: int | None,
    which: str = "all",
    limit: int = 20,
    tasks: Path | None = None,
) -> str:
    """`softeval review --model M --task T --method X`: the unit header, then its examples passing `which`."""
    if which not in FILTERS:
        raise InputError(f"unknown filter {which!r}; use one of {', '.join(FILTERS)}")
    data = load_unit(results, resolve_unit(results, model, role, task, method, step))
    rule = format_rule(results, task, tasks)
    examples = [data.example(row) for row in data.scores if FILTERS[which](row)]
    parts = ["\n".join(unit_header(data, rule))]
    parts += [format_example(example, rule) for example in examples[:limit]]
    parts.append(f"{len(examples)} example(s) match ({which}); showed {min(len(examples), limit)}")
    return "\n\n".join(parts)


# ---- two units: paired flips -----------------------------------------------------------------------


@dataclass
class Flips:
    """The examples two units of one model, role and task disagree on, by `metric`: right in
    `here` and wrong in `there` (McNemar's b), and the reverse (c)."""

    here: UnitData
    there: UnitData
    metric: str
    right_here: list[str]
    right_there: list[str]
    split: Paired


def flips(here: UnitData, there: UnitData, metric: str) -> Flips:
    if metric not in METRICS:
        raise InputError(f"unknown metric {metric!r}; use one of {', '.join(METRICS)}")
    try:
        split = paired(here.scores, there.scores, metric)  # unit_checks' split, same order of test examples
    except ValueError:
        raise InputError(
            f"{here.files[0]} and {there.files[0]} score different test examples; "
            "delete the older file and rerun to recompute it"
        ) from None
    pairs = list(zip(here.scores, there.scores, strict=True))
    right_here = [a["id"] for a, b in pairs if a[metric] and not b[metric]]
    right_there = [a["id"] for a, b in pairs if b[metric] and not a[metric]]
    return Flips(here, there, metric, right_here, right_there, split)


def _reading(f: Flips) -> str:
    p = f.split.p_value
    if p >= SIGNIFICANCE:
        return f"within noise at p < {SIGNIFICANCE}"
    better = f.here.unit.label if f.split.only_first > f.split.only_second else f.there.unit.label
    return f"{better} better at p < {SIGNIFICANCE}"


def flips_summary(f: Flips) -> list[str]:
    here, there, metric = f.here.unit.label, f.there.unit.label, f.metric
    b, c = f.split.only_first, f.split.only_second
    return [
        f"flips    | {metric}: {here} {_mean(f.here.scores, metric):.3f} vs {there} "
        f"{_mean(f.there.scores, metric):.3f} on the same {len(f.here.scores)} examples",
        f"b        | {b} right at {here}, wrong at {there}",
        f"c        | {c} wrong at {here}, right at {there}",
        f"McNemar  | b {b}, c {c}: exact p = {f.split.p_value:.4g} (two-sided binomial test of b in b + c at 1/2; "
        f"{_reading(f)}, per unit, uncorrected)",
    ]


def _tail(prompt: str | None, lines: int = 2) -> list[str]:
    text = (prompt or "").splitlines()
    shown = [f"prompt   | {line}" for line in text[-lines:]]
    if len(text) > lines:
        shown.insert(0, f"prompt   | ... ({len(text) - lines} earlier line(s))")
    return shown


def format_flip(example_id: str, f: Flips, rule: FormatRule) -> str:
    a = f.here.example(next(r for r in f.here.scores if r["id"] == example_id))
    b = f.there.example(next(r for r in f.there.scores if r["id"] == example_id))
    width = max(len(f.here.unit.label), len(f.there.unit.label))
    lines = [f"--- {example_id}"]
    lines += _tail(a.get("prompt"))
    for label, ex in ((f.here.unit.label, a), (f.there.unit.label, b)):
        lines.append(f"{label:<{width}} | {ex['response']!r}  ({verdicts(ex, rule)}; stopped: {ex.get('stop_reason')})")
    lines += _gold_lines(a)
    return "\n".join(lines)


def show_flips(
    results: Path,
    model: str,
    role: str,
    task: str,
    method: str,
    step: int | None,
    vs: str | None,
    vs_step: int | None,
    metric: str = "strict",
    limit: int = 20,
    tasks: Path | None = None,
) -> str:
    """`softeval review ... --vs METHOD / --vs-step N`: both units' headers, McNemar's b and c with
    the exact p-value, then the examples of each direction (up to `limit` each)."""
    if (vs or method) != SOFT_PROMPT and vs_step is not None:
        which = f"--vs {vs}" if vs else f"--method {method} (no --vs)"
        raise InputError(
            f"--vs-step is for a soft_prompt unit; the unit compared with is {which}, which has one unit "
            "(drop --vs-step, or add --vs soft_prompt)"
        )
    vs = vs or method
    here = resolve_unit(results, model, role, task, method, step)
    there = resolve_unit(results, model, role, task, vs, vs_step)
    if here.key == there.key:
        raise InputError(
            f"--vs compares {here.label} with itself; name another unit "
            f"(--vs zero_shot, or --vs-step N with N among {_listed(list(here.steps))})"
        )
    rule = format_rule(results, task, tasks)
    f = flips(load_unit(results, here), load_unit(results, there), metric)
    parts = ["\n".join(unit_header(f.here, rule)), "\n".join(unit_header(f.there, rule)), "\n".join(flips_summary(f))]
    for ids, title in (
        (f.right_here, f"right at {here.label}, wrong at {there.label}"),
        (f.right_there, f"wrong at {here.label}, right at {there.label}"),
    ):
        parts.append(f"=== {len(ids)} {title} ({f.metric}); showing {min(len(ids), limit)}")
        parts += [format_flip(i, f, rule) for i in ids[:limit]]
    return "\n\n".join(parts)
