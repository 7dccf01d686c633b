"""lm-evaluation-harness's names for softeval's scores: the `<metric>,<filter>` keys (a method in
the filter slot, the harness's own filter after ':'), the stderr it writes beside each, the
results file's name and the harness's folder-safe model name; shared by the results files and
the trackers, which name units and steps the same way."""

from __future__ import annotations

import math
import re
from typing import Any

import pandas as pd

from softeval.io import check_slug
from softeval.layout import results_file_name as layout_results_file_name
from softeval.names import BASE, SOFT_PROMPT

HARNESS_PREFIXES = ("lm_eval", "options")
NOT_AVAILABLE = "N/A"  # what the harness writes for a stderr it cannot compute
STDERR_NOTE = (
    "sqrt(p(1-p)/(n-1)) over the test examples' 0/1 scores: lm-evaluation-harness's mean_stderr "
    "(sample standard deviation / sqrt(n)); N/A for n < 2"
)
KEY_NOTE = (
    "results keys are '<metric>,<method>' (soft_prompt: the final tuning step; other snapshots "
    "'soft_prompt@step<N>'); lm-evaluation-harness's own scores of the same responses are "
    "'<metric>,<method>:<harness filter>' (or '<metric>,<method>' when it has none); options_acc and "
    "options_acc_norm are the harness's acc / acc_norm over softeval's option continuations"
)


def results_file_name(model: str, role: str = BASE) -> str:
    """layout.results_file_name, the model's name checked first (it becomes a path)."""
    check_slug(model, "model")
    return layout_results_file_name(model, role)


def binary_stderr(accuracy: float, n: int) -> float | str:
    """The harness's stderr of a mean of n 0/1 scores with mean `accuracy`: sqrt(p(1-p)/(n-1))."""
    if n < 2:
        return NOT_AVAILABLE
    return math.sqrt(max(0.0, accuracy * (1.0 - accuracy)) / (n - 1))


def method_filter(method: str, step: int | None, final_step: int | None) -> str:
    """The filter slot of a method's keys: the method, or soft_prompt@step<N> off the final step."""
    if method == SOFT_PROMPT and step != final_step:
        return f"{SOFT_PROMPT}@step{step}"
    return method


def harness_metric(column: str) -> tuple[str, str | None]:
    """An aggregate column of the harness's scores as (metric, harness filter):
    'lm_eval:exact_match,strict-match' -> ('exact_match', 'strict-match'); 'lm_eval:math_verify'
    -> ('math_verify', None); 'options:acc' -> ('options_acc', None)."""
    prefix, _, name = column.partition(":")
    metric, _, harness_filter = name.partition(",")
    if prefix == "options":
        metric = f"options_{metric}"
    return metric, harness_filter or None


def harness_columns(scores: pd.DataFrame) -> list[str]:
    """The aggregate's lm_eval:<name> and options:<name> columns."""
    return [c for c in scores.columns if ":" in c and c.partition(":")[0] in HARNESS_PREFIXES]


def _step(value: Any) -> int | None:
    return None if value is None or pd.isna(value) else int(value)


def sanitize_model_name(name: str) -> str:
    """lm-evaluation-harness's folder-safe model name (lm_eval.utils.sanitize_model_name)."""
    return re.sub(r"[\"<>:/|\\?*\[\]]+", "__", name)


def _add(entry: dict[str, Any], metric: str, filter_: str, value: float, n: int) -> None:
    entry[f"{metric},{filter_}"] = float(value)
    entry[f"{metric}_stderr,{filter_}"] = binary_stderr(float(value), n)
