"""Two units of one model, role and task compared example by example (`softeval review --vs`):
the examples one gets right and the other wrong, both ways, with the exact McNemar test that
unit_checks computes on the same split."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from softeval.analysis.evidence import SIGNIFICANCE, Paired
from softeval.analysis.review.rule import FormatRule, format_rule
from softeval.analysis.review.show import _gold_lines, _mean, unit_header, verdicts
from softeval.analysis.review.units import METRICS, UnitData, _listed, load_unit, resolve_unit
from softeval.analysis.unit_checks import paired
from softeval.names import SOFT_PROMPT
from softeval.schema import InputError


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
