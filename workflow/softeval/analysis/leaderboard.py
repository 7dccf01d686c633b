"""A leaderboard of base models: what each knows, with intervals, separable places and validity flags.

The method's purpose (DESIGN.md, user 1): rank candidate base checkpoints, with or without
post-trained versions, by what a soft prompt elicits. One table, one row per base model and
task plus one row per model over all tasks (task "all tasks", listed first: the leaderboard):

- knowledge, format and strict accuracy of the leaderboard's unit (by default the soft prompt
  at the final step), each with its 95% percentile-bootstrap interval; the mean over tasks
  resamples every task with its one index matrix (`evidence.task_resamples`), as every other
  table of a run does, so a model's and its neighbour's means move together;
- a rank by one metric (strict by default, knowledge or format on request): the competition
  rank of the estimate (1 + the number of models strictly better), so models with equal
  estimates share it ("2=") whatever their names; rows of a tie are listed by name, which is
  only a listing order, never a result;
- whether each place is separable from the one above: a paired bootstrap (the same resampled
  test examples for both models) of the difference to each model of the next better place;
  separable when every such 95% interval lies above zero (uncorrected, per adjacent pair);
- validity flags per model x task, summarised in the model's all-tasks row (any task, and
  which): format below 0.9; knowledge moved against zero-shot (the change's 95% interval wholly
  outside ±0.05; `unit_checks`' equivalence test calls it flat when its 90% interval lies
  within, two one-sided tests at 5%), for the base model and, where
  one was evaluated, its post-trained twin; chosen options collapsed onto one letter (closed
  tasks: normalised entropy of the chosen options below 0.5, as `unit_checks` flags it); more
  than 10% degenerate responses (the judge's `degenerate` field where score rows carry one,
  else a local check: empty, or the rule judge's test `softeval.data.answers.degenerate`).

Which method each row used: the leaderboard scores one method per task for every model alike
(a comparison of a soft-prompted model with a few-shot one would rank methods, not models).
Where the preferred method (`method`, soft_prompt by default) was not evaluated for every
model of a task, the first of `fallbacks` that was is used, and the row's `method` column says
which (the all-tasks row lists each task's where they differ). Never the best-scoring method
per model.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from softeval.analysis.claims.verdicts import HOLDS, REFUTED, within
from softeval.analysis.evidence import (
    COLLAPSE_ENTROPY,
    FORMAT_SATURATED,
    KNOWLEDGE_FLAT,
    Interval,
    bootstrap_mean,
    choice_spread,
    paired_bootstrap,
)
from softeval.analysis.publish import write_table
from softeval.analysis.tables import ALL_TASKS
from softeval.io import atomic_write_text, check_slug, read_jsonl
from softeval.layout import SOFT_PROMPT, unit_path
from softeval.schema import InputError
from softeval.settings import AnalysisSettings

try:  # the rule judge's test of a degenerate response, where this version of the package has it
    from softeval.data.answers import degenerate as _judge_degenerate
except ImportError:  # pragma: no cover - older package versions
    _judge_degenerate = None

METRICS = ("knowledge", "format", "strict")
FALLBACKS = ("few_shot", "zero_shot")
# More than this share of degenerate responses in a unit raises its flag.
DEGENERATE_SHARE = 0.1
# Estimates this close are one place (means of 0/1 verdicts over the same test examples are equal
# exactly when the counts are; the tolerance only absorbs the float sums of the all-tasks mean).
TIE_TOLERANCE = 1e-9
SEPARABLE, WITHIN_NOISE = "separable", "within noise"
FLAT, MOVED, NOT_SHOWN_FLAT, NOT_EVALUATED = "flat", "moved", "not shown flat", "n/a"
FLAG_COLUMNS = (
    "flag_format",
    "flag_knowledge_moved",
    "flag_knowledge_moved_post",
    "flag_choices_collapsed",
    "flag_degenerate",
)
FLAG_NAMES = {
    "flag_format": f"format < {FORMAT_SATURATED}",
    "flag_knowledge_moved": "knowledge {state} vs {baseline} (base)",
    "flag_knowledge_moved_post": "knowledge {state} vs {baseline} (post)",
    "flag_choices_collapsed": "choices collapsed",
    "flag_degenerate": "degenerate responses",
}


# ----------------------------------------------------------------------------- places and ties


@dataclass(frozen=True)
class Place:
    """A model's place among the others on one score.

    rank: 1 + the number of models with a strictly better estimate (tied models share it);
    place: the rank as shown, with "=" where it is shared; tied_with: the other models of the
    same estimate; above: the models of the next better place (empty at the top); vs_above:
    SEPARABLE when every paired interval of (above - this) lies above zero, else WITHIN_NOISE
    ("" at the top); difference: the least separable of those intervals (None at the top)."""

    rank: int
    place: str
    tied_with: tuple[str, ...]
    above: tuple[str, ...]
    vs_above: str
    difference: Interval | None


def tie_blocks(estimates: Mapping[str, float], tolerance: float = TIE_TOLERANCE) -> list[list[str]]:
    """The models grouped by equal estimate, best first; a group lists its models by name (a
    listing order only: they share one place)."""
    for model, value in estimates.items():
        if not math.isfinite(value):
            raise ValueError(f"model {model}: estimate {value} cannot be ranked")
    blocks: list[list[str]] = []
    head = math.inf
    for model in sorted(estimates, key=lambda m: (-estimates[m], m)):
        if blocks and abs(estimates[model] - head) <= tolerance:
            blocks[-1].append(model)
        else:
            blocks.append([model])
            head = estimates[model]
    return [sorted(block) for block in blocks]


def place_models(
    estimates: Mapping[str, float],
    difference: Callable[[str, str], Interval] | None = None,
    tolerance: float = TIE_TOLERANCE,
) -> dict[str, Place]:
    """Every model's Place. `difference(upper, lower)` is the paired interval of upper's score
    minus lower's; without it, no place is tested (vs_above is "")."""
    places: dict[str, Place] = {}
    rank = 1
    previous: list[str] = []
    for block in tie_blocks(estimates, tolerance):
        shown = f"{rank}=" if len(block) > 1 else str(rank)
        for model in block:
            vs_above, least = "", None
            if previous and difference is not None:
                intervals = [difference(upper, model) for upper in previous]
                least = min(intervals, key=lambda iv: (iv.low, iv.estimate))
                vs_above = SEPARABLE if all(iv.low > 0 for iv in intervals) else WITHIN_NOISE
            places[model] = Place(rank, shown, tuple(m for m in block if m != model), tuple(previous), vs_above, least)
        previous = block
        rank += len(block)
    return places


# ----------------------------------------------------------------------------- per-unit checks


def looks_degenerate(response: str) -> str | None:
    """Why a response is degenerate (the local check when the judge records none), or None:
    empty; else the rule judge's own test (softeval.data.answers.degenerate: punctuation runs, one
    unit repeated over the response) where this package has it, or a simple one: one character
    20 times in a row, or 8+ words of which at most a quarter are distinct ("7 7 7 7 ...")."""
    text = str(response)
    if not text.strip():
        return "empty"
    if _judge_degenerate is not None:
        return _judge_degenerate(text)
    if re.search(r"(.)\1{19,}", text.strip()):
        return "character run"
    words = text.split()
    if len(words) >= 8 and len(set(words)) <= len(words) / 4:
        return "repetition"
    return None


JUDGE_DEGENERATE_KEYS = ("degenerate", "degenerate_reason")
FALSE_WORDS = {"", "false", "no", "none", "0", "ok"}


def _truthy(value: Any) -> bool:
    if isinstance(value, str):
        return value.strip().lower() not in FALSE_WORDS
    return bool(value)


def degenerate_share(rows: Sequence[dict]) -> tuple[float, str]:
    """Share of degenerate responses in a unit and where the verdicts came from: "judge" when any
    row carries a `degenerate` (or `degenerate_reason`) field (rows without it: not degenerate),
    else "local" (`looks_degenerate` on each row's response); nan, "" without responses."""
    if any(key in row for row in rows for key in JUDGE_DEGENERATE_KEYS):
        flags = [any(_truthy(row.get(key)) for key in JUDGE_DEGENERATE_KEYS) for row in rows]
        return float(np.mean(flags)), "judge"
    if not rows or any("response" not in row for row in rows):
        return math.nan, ""
    return float(np.mean([looks_degenerate(row["response"]) is not None for row in rows])), "local"


LETTER = re.compile(r"\s*\(?([A-Z])[.)]")


def response_choices(rows: Sequence[dict]) -> tuple[list[int], int] | None:
    """The option letter each response starts with ("B. Berlin" -> 1), and the number of
    options (the largest letter among responses and golds): the fallback for collapse without
    option log-likelihoods. None when no response starts with a letter."""
    chosen = [ord(m.group(1)) - ord("A") for row in rows if (m := LETTER.match(str(row.get("response", ""))))]
    golds = [ord(m.group(1)) - ord("A") for row in rows if (m := LETTER.match(str(row.get("gold", ""))))]
    if not chosen:
        return None
    return chosen, max([*chosen, *golds]) + 1


def loglik_choices(path: Path) -> tuple[list[int], int]:
    """The option each example chose by likelihood, and options per question, from a loglik file."""
    rows = read_jsonl(path, "option log-likelihoods")
    try:
        return [int(row["chosen"]) for row in rows], max(len(row["options"]) for row in rows)
    except (KeyError, TypeError, ValueError):
        raise InputError(f"{path}: rows without 'chosen' or 'options'; delete it to recompute") from None


# ----------------------------------------------------------------------------- reading units


class _Units:
    """Score rows of units, read once; every unit of a task must score the same test examples in
    the same order (the comparisons are paired)."""

    def __init__(self, scores_root: Path) -> None:
        self.root = scores_root
        self.rows: dict[tuple, list[dict]] = {}
        self.ids: dict[str, tuple[list, Path]] = {}

    def path(self, model: str, role: str, task: str, method: str, step: int | None) -> Path:
        return unit_path(self.root, model, role, task, method, _step(method, step))

    def exists(self, model: str, role: str, task: str, method: str, step: int | None) -> bool:
        return self.path(model, role, task, method, step).is_file()

    def __call__(self, model: str, role: str, task: str, method: str, step: int | None) -> list[dict]:
        key = (model, role, task, method, _step(method, step))
        if key not in self.rows:
            path = self.path(*key)
            rows = read_jsonl(path, "scores")
            if not rows:
                raise InputError(f"{path}: no score rows; delete it so the workflow recomputes it")
            missing = [k for k in ("id", *METRICS) if k not in rows[0]]
            if missing:
                raise InputError(f"{path}: score rows without {missing[0]!r}; delete it so the workflow recomputes it")
            ids = [row.get("id") for row in rows]
            seen = self.ids.setdefault(task, (ids, path))
            if ids != seen[0]:
                raise InputError(
                    f"{path}: other test examples than {seen[1]}; delete the older file and rerun to recompute it"
                )
            self.rows[key] = rows
        return self.rows[key]

    def values(self, model: str, role: str, task: str, method: str, step: int | None, metric: str) -> np.ndarray:
        return np.array([float(row[metric]) for row in self(model, role, task, method, step)])


def _step(method: str, step: int | None) -> int | None:
    return step if method == SOFT_PROMPT else None


def method_label(method: str, step: int | None) -> str:
    return f"{method} step {step}" if method == SOFT_PROMPT else method


# ----------------------------------------------------------------------------- the leaderboard


def base_models(scores_root: Path) -> list[str]:
    """Every model with scores of its base role."""
    return sorted(p.parent.name for p in Path(scores_root).glob("*/base") if p.is_dir())


def tasks_of(scores_root: Path, models: Sequence[str]) -> list[str]:
    """Every task any of the models' base role was scored on."""
    return sorted({p.name for m in models for p in (Path(scores_root) / m / "base").glob("*") if p.is_dir()})


def choose_method(units: _Units, models: Sequence[str], task: str, preferred: Sequence[str], final_step: int) -> str:
    """The first of `preferred` evaluated for every model's base role on `task`."""
    for method in preferred:
        if all(units.exists(m, "base", task, method, final_step) for m in models):
            return method
    wanted = [str(units.path(m, "base", task, preferred[0], final_step)) for m in models]
    missing = [p for p in wanted if not Path(p).is_file()]
    raise InputError(
        f"task {task}: no method of {', '.join(preferred)} was scored for every base model "
        f"(missing, e.g. {missing[0]}); run the workflow for these models, or leave the task out"
    )


def build_leaderboard(
    scores_root: Path | str,
    models: Sequence[str] | None,
    tasks: Sequence[str] | None,
    final_step: int,
    *,
    metric: str = "strict",
    method: str = SOFT_PROMPT,
    fallbacks: Sequence[str] = FALLBACKS,
    knowledge_baseline: str = "zero_shot",
    bootstrap: int = 1000,
    seed: int = 0,
    loglik_root: Path | str | None = None,
    closed_tasks: Sequence[str] = (),
    margin: float = KNOWLEDGE_FLAT,
    format_threshold: float = FORMAT_SATURATED,
    degenerate_threshold: float = DEGENERATE_SHARE,
) -> pd.DataFrame:
    """The leaderboard of the base models (None: every model with a base role under
    scores_root) on `tasks` (None: every task they were scored on), ranked by `metric`.

    scores_root: results/scores; loglik_root: results/loglik (closed tasks' chosen options; without
    it, or without a unit's file, the letters the responses start with). A task is closed when
    named in `closed_tasks` or when its score rows take knowledge from option likelihoods. The
    table's `attrs` hold "caption" and "metric" (what `write_leaderboard` writes)."""
    if metric not in METRICS:
        raise InputError(f"leaderboard: metric {metric!r}; use one of {', '.join(METRICS)}")
    root = Path(scores_root)
    models = list(models) if models is not None else base_models(root)
    for model in models:
        check_slug(model, "model")
        if not (root / model / "base").is_dir():
            raise InputError(
                f"{root / model / 'base'}: no scores of base model {model}; run the workflow for it, or leave it out"
            )
    if not models:
        raise InputError(f"{root}: no base model has scores; run the workflow first")
    tasks = list(tasks) if tasks is not None else tasks_of(root, models)
    if not tasks:
        raise InputError(f"{root}: no task has scores of the base models; run the workflow first")
    for task in tasks:
        check_slug(task, "task")
    preferred = list(dict.fromkeys([method, *fallbacks]))
    units = _Units(root)
    loglik = Path(loglik_root) if loglik_root is not None else None
    settings = _Settings(
        final_step, metric, knowledge_baseline, bootstrap, seed, margin, format_threshold, degenerate_threshold
    )

    used: dict[str, str] = {}
    values: dict[str, dict[str, dict[str, np.ndarray]]] = {}  # task -> model -> metric -> per example
    rows: list[dict] = []
    per_task: dict[str, list[dict]] = {}
    for task in tasks:
        chosen = choose_method(units, models, task, preferred, final_step)
        used[task] = chosen
        values[task] = {m: {k: units.values(m, "base", task, chosen, final_step, k) for k in METRICS} for m in models}
        closed = task in closed_tasks or any(
            row.get("knowledge_from") == "loglik" for row in units(models[0], "base", task, chosen, final_step)
        )
        task_rows = _task_rows(units, models, task, chosen, closed, values[task], loglik, settings)
        per_task[task] = task_rows
    rows.extend(_overall_rows(models, tasks, used, values, per_task, settings))
    for task in tasks:
        rows.extend(sorted(per_task[task], key=lambda r: (r["rank"], r["model"])))
    table = pd.DataFrame(rows, columns=COLUMNS)
    table.attrs["metric"] = metric
    table.attrs["methods"] = dict(used)
    table.attrs["caption"] = leaderboard_caption(used, settings, preferred[0])
    return table


@dataclass(frozen=True)
class _Settings:
    final_step: int
    metric: str
    baseline: str
    bootstrap: int
    seed: int
    margin: float
    format_threshold: float
    degenerate_threshold: float


COLUMNS = [
    "task",
    "rank",
    "place",
    "model",
    "method",
    "n",
    *(f"{m}{suffix}" for m in METRICS for suffix in ("", "_low", "_high")),
    "tied_with",
    "vs_above",
    "above",
    "diff_above",
    "diff_above_low",
    "diff_above_high",
    "knowledge_vs_baseline",
    "knowledge_change",
    "knowledge_change_low",
    "knowledge_change_high",
    "knowledge_vs_baseline_post",
    "knowledge_change_post",
    "choice_entropy",
    "choice_top",
    "degenerate",
    "degenerate_source",
    *FLAG_COLUMNS,
    "flags",
]


# A narrower table for reading (the HTML report, a paper): the estimates, places and flags.
COMPACT_COLUMNS = (
    "task",
    "place",
    "model",
    "method",
    *(f"{m}{suffix}" for m in METRICS for suffix in ("", "_low", "_high")),
    "tied_with",
    "vs_above",
    "flags",
)


def _place_columns(place: Place) -> dict:
    diff = place.difference
    return {
        "rank": place.rank,
        "place": place.place,
        "tied_with": ", ".join(place.tied_with),
        "vs_above": place.vs_above,
        "above": ", ".join(place.above),
        "diff_above": math.nan if diff is None else diff.estimate,
        "diff_above_low": math.nan if diff is None else diff.low,
        "diff_above_high": math.nan if diff is None else diff.high,
    }


def _knowledge_change(
    units: _Units, model: str, role: str, task: str, method: str, s: _Settings
) -> tuple[str, Interval | None]:
    """The knowledge change of `method` against the baseline method, same model and role: its
    state (FLAT: the 90% interval within ±margin; MOVED: the 95% one wholly outside; NOT_SHOWN_FLAT: across
    the margin; NOT_EVALUATED: a unit missing, or the method is the baseline) and interval."""
    if method == s.baseline or not all(units.exists(model, role, task, m, s.final_step) for m in (method, s.baseline)):
        return NOT_EVALUATED, None
    interval = paired_bootstrap(
        [
            (
                units.values(model, role, task, method, s.final_step, "knowledge"),
                units.values(model, role, task, s.baseline, s.final_step, "knowledge"),
            )
        ],
        None,
        s.bootstrap,
        s.seed,
        [task],
    )
    verdict = within(interval, s.margin)
    return (FLAT if verdict == HOLDS else MOVED if verdict == REFUTED else NOT_SHOWN_FLAT), interval


def _task_rows(
    units: _Units,
    models: Sequence[str],
    task: str,
    method: str,
    closed: bool,
    values: dict[str, dict[str, np.ndarray]],
    loglik: Path | None,
    s: _Settings,
) -> list[dict]:
    def difference(upper: str, lower: str) -> Interval:
        pair = (values[upper][s.metric], values[lower][s.metric])
        return paired_bootstrap([pair], None, s.bootstrap, s.seed, [task])

    places = place_models({m: float(values[m][s.metric].mean()) for m in models}, difference)
    rows = []
    for model in models:
        row: dict[str, Any] = {"task": task, "model": model, "method": method_label(method, s.final_step)}
        row["n"] = len(values[model]["strict"])
        for metric in METRICS:
            iv = bootstrap_mean([values[model][metric]], s.bootstrap, s.seed, [task])
            row[metric], row[f"{metric}_low"], row[f"{metric}_high"] = iv.estimate, iv.low, iv.high
        row |= _place_columns(places[model])
        state, change = _knowledge_change(units, model, "base", task, method, s)
        row["knowledge_vs_baseline"] = state
        row["knowledge_change"] = math.nan if change is None else change.estimate
        row["knowledge_change_low"] = math.nan if change is None else change.low
        row["knowledge_change_high"] = math.nan if change is None else change.high
        post_state, post_change = _knowledge_change(units, model, "post", task, method, s)
        row["knowledge_vs_baseline_post"] = post_state
        row["knowledge_change_post"] = math.nan if post_change is None else post_change.estimate
        collapsed: bool | None = None
        row["choice_entropy"], row["choice_top"] = math.nan, ""
        if closed:
            path = unit_path(loglik, model, "base", task, method, _step(method, s.final_step)) if loglik else None
            source, choices = "loglik", None
            if path is not None and path.is_file():
                choices = loglik_choices(path)
            else:
                source, choices = "response", response_choices(units(model, "base", task, method, s.final_step))
            if choices is not None:
                spread = choice_spread(*choices)
                row["choice_entropy"] = spread.entropy
                row["choice_top"] = f"{spread.top_letter} {spread.top_share:.0%} ({source})"
                collapsed = spread.entropy < COLLAPSE_ENTROPY
        share, source = degenerate_share(units(model, "base", task, method, s.final_step))
        row["degenerate"], row["degenerate_source"] = share, source
        row["flag_format"] = bool(row["format"] < s.format_threshold)
        # a finding, not a lack of evidence: the interval wholly beyond the margin (a pilot run's
        # few examples leave most units "not shown flat", which the state columns still say)
        row["flag_knowledge_moved"] = None if state == NOT_EVALUATED else state == MOVED
        row["flag_knowledge_moved_post"] = None if post_state == NOT_EVALUATED else post_state == MOVED
        row["flag_choices_collapsed"] = collapsed
        row["flag_degenerate"] = None if math.isnan(share) else bool(share > s.degenerate_threshold)
        row["flags"] = "; ".join(_flag_texts(row, s))
        rows.append(row)
    return rows


def _flag_texts(row: dict, s: _Settings) -> list[str]:
    texts = []
    for column in FLAG_COLUMNS:
        if row[column] is True:
            state = row["knowledge_vs_baseline_post" if column.endswith("_post") else "knowledge_vs_baseline"]
            texts.append(FLAG_NAMES[column].format(state=state, baseline=s.baseline))
    return texts


def _overall_rows(
    models: Sequence[str],
    tasks: Sequence[str],
    used: Mapping[str, str],
    values: Mapping[str, Mapping[str, Mapping[str, np.ndarray]]],
    per_task: Mapping[str, list[dict]],
    s: _Settings,
) -> list[dict]:
    """One row per model over all tasks: means with intervals (each task resampled with its own
    index matrix), place, and every flag raised on any task."""

    def difference(upper: str, lower: str) -> Interval:
        pairs = [(values[t][upper][s.metric], values[t][lower][s.metric]) for t in tasks]
        return paired_bootstrap(pairs, None, s.bootstrap, s.seed, list(tasks))

    means = {m: float(np.mean([values[t][m][s.metric].mean() for t in tasks])) for m in models}
    places = place_models(means, difference)
    methods = {method_label(used[t], s.final_step) for t in tasks}
    method = (
        methods.pop() if len(methods) == 1 else "; ".join(f"{t}: {method_label(used[t], s.final_step)}" for t in tasks)
    )
    rows = []
    for model in models:
        row: dict[str, Any] = {"task": ALL_TASKS, "model": model, "method": method}
        row["n"] = sum(len(values[t][model]["strict"]) for t in tasks)
        for metric in METRICS:
            iv = bootstrap_mean([values[t][model][metric] for t in tasks], s.bootstrap, s.seed, list(tasks))
            row[metric], row[f"{metric}_low"], row[f"{metric}_high"] = iv.estimate, iv.low, iv.high
        row |= _place_columns(places[model])
        units = [next(r for r in per_task[t] if r["model"] == model) for t in tasks]
        shares = [u["degenerate"] for u in units if not math.isnan(u["degenerate"])]
        row["degenerate"] = float(np.mean(shares)) if shares else math.nan
        row["degenerate_source"] = ", ".join(sorted({u["degenerate_source"] for u in units} - {""}))
        for column in ("knowledge_change", "knowledge_change_low", "knowledge_change_high", "knowledge_change_post"):
            row[column] = math.nan
        row["knowledge_vs_baseline"] = row["knowledge_vs_baseline_post"] = ""
        row["choice_entropy"], row["choice_top"] = math.nan, ""
        texts = []
        for column in FLAG_COLUMNS:
            raised = [u["task"] for u in units if u[column] is True]
            tested = [u for u in units if u[column] is not None]
            row[column] = bool(raised) if tested else None
            if raised:
                name = FLAG_NAMES[column].format(state="moved", baseline=s.baseline)
                texts.append(f"{name} ({', '.join(raised)})")
        row["flags"] = "; ".join(texts)
        rows.append(row)
    return sorted(rows, key=lambda r: (r["rank"], r["model"]))


def leaderboard_caption(used: Mapping[str, str], s: _Settings, preferred: str) -> str:
    fallback = [t for t, m in used.items() if m != preferred]
    return (
        f"Leaderboard of base models: {method_label(preferred, s.final_step)}"
        + (
            f" (not evaluated for every model of {', '.join(fallback)}: the method column says which was used)"
            if fallback
            else ""
        )
        + f"; ranked by {s.metric} accuracy ({ALL_TASKS}: mean over tasks), tied estimates share a place (k=), "
        "tied rows listed by name only; _low/_high: 95% percentile-bootstrap interval over test examples (one "
        "index matrix per task, shared by every model); vs_above: paired bootstrap of the difference to each "
        "model of the place above (diff_above: the least separable), separable when its 95% interval lies above "
        f"zero (per adjacent pair, uncorrected). Flags: format < {s.format_threshold}; knowledge moved vs "
        f"{s.baseline} (the 95% interval of the change wholly outside ±{s.margin}; the state columns also "
        "say 'not shown flat' when it crosses the margin), base and post-trained role; chosen options "
        f"collapsed (normalised entropy < {COLLAPSE_ENTROPY}, "
        f"closed tasks); degenerate responses > {s.degenerate_threshold:.0%}"
    )


def leaderboard_from_settings(
    scores_root: Path | str,
    settings: AnalysisSettings,
    *,
    models: Sequence[str] | None = None,
    tasks: Sequence[str] | None = None,
    loglik_root: Path | str | None = None,
    method: str = SOFT_PROMPT,
    fallbacks: Sequence[str] = FALLBACKS,
) -> pd.DataFrame:
    """build_leaderboard with the analysis settings' final step, metric, bootstrap, seed and closed tasks."""
    return build_leaderboard(
        scores_root,
        models,
        tasks,
        settings.final_step,
        metric=settings.metric,
        method=method,
        fallbacks=fallbacks,
        bootstrap=settings.bootstrap,
        seed=settings.seed,
        loglik_root=loglik_root,
        closed_tasks=settings.closed_tasks,
    )


def interval_text(row: Mapping[str, Any], metric: str) -> str:
    """0.412 [0.350, 0.470]"""
    if math.isnan(row[metric]):
        return ""
    return f"{row[metric]:.3f} [{row[f'{metric}_low']:.3f}, {row[f'{metric}_high']:.3f}]"


def leaderboard_text(table: pd.DataFrame) -> str:
    """The leaderboard for reading (a terminal, leaderboard.md): the mean over tasks first, then
    each task; estimates with their intervals, places, separability and flags."""
    metric = table.attrs.get("metric", "strict")
    sections = []
    for task, rows in table.groupby("task", sort=False):
        view = pd.DataFrame(
            {
                "place": rows["place"],
                "model": rows["model"],
                **{name: [interval_text(r, name) for _, r in rows.iterrows()] for name in METRICS},
                "vs place above": [
                    f"tied with {r['tied_with']}"
                    if isinstance(r["tied_with"], str) and r["tied_with"]
                    else r["vs_above"]
                    for _, r in rows.iterrows()
                ],
                "flags": rows["flags"].fillna(""),
            }
        )
        method = rows["method"].iloc[0]
        sections.append(f"### {task} ({method}; ranked by {metric})\n\n{view.to_markdown(index=False)}")
    return "\n\n".join(sections) + "\n"


def write_leaderboard(
    table: pd.DataFrame, out_stem: Path | str, caption: str | None = None, columns: Sequence[str] | None = None
) -> None:
    """<out_stem>.csv (every column), .md (leaderboard_text, for reading) and .tex (`columns`,
    default COMPACT_COLUMNS; the best estimate of the ranking metric in bold per task)."""
    metric = table.attrs.get("metric", "strict")
    text = caption if caption is not None else table.attrs.get("caption", "Leaderboard of base models")
    columns = COMPACT_COLUMNS if columns is None else columns
    unknown = [c for c in columns if c not in table.columns]
    if unknown:
        raise ValueError(f"write_leaderboard: no column {unknown[0]!r}; use {', '.join(table.columns)}")
    out_stem = Path(out_stem)
    compact = table[list(columns)]
    best = {metric: "max"} if metric in compact.columns else None
    write_table(compact, out_stem, text, best=best, group="task" if "task" in compact.columns else None)
    atomic_write_text(out_stem.with_suffix(".csv"), table.to_csv(index=False, float_format="%.4f"))
    atomic_write_text(out_stem.with_suffix(".md"), f"{text}\n\n{leaderboard_text(table)}")
