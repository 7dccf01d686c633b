"""One unit shown: its header (which unit, which files, its counts and flags, the format rule)
and its examples (prompt, response, verdicts with why a format is wrong, gold and options)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from softeval.analysis.evidence import COLLAPSE_ENTROPY, FORMAT_SATURATED, choice_spread
from softeval.analysis.leaderboard import DEGENERATE_SHARE, degenerate_share
from softeval.analysis.review.rule import FormatRule, format_rule
from softeval.analysis.review.units import FILTERS, METRICS, UnitData, _listed, load_unit, resolve_unit
from softeval.data.tasks import LETTERS
from softeval.names import SOFT_PROMPT
from softeval.schema import InputError

STEP_ZERO = (
    "step 0 is the untuned, vocabulary-initialised prompt, not the model without a prompt "
    "(compare with --method zero_shot)"
)


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
