"""Per-unit validity checks of the leaderboard's flags, from a unit's rows alone: the share of
degenerate responses (the judge's verdicts, else a local check) and the options the responses
chose (option log-likelihoods, else the letters the responses start with). `review` reads the
same degenerate share for its unit header."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from softeval.io import read_jsonl
from softeval.schema import InputError

try:  # the rule judge's test of a degenerate response, where this version of the package has it
    from softeval.data.answers import degenerate as _judge_degenerate
except ImportError:  # pragma: no cover - older package versions
    _judge_degenerate = None

# More than this share of degenerate responses in a unit raises its flag.
DEGENERATE_SHARE = 0.1


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
