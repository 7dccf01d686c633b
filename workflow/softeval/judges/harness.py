"""lm-evaluation-harness's own scores, recomputed from softeval's generations and log-likelihoods.

A task file's `harness:` list names the scores lm-evaluation-harness reports for its task of
the same name and how it computes them (its filters and exact_match options, as data), so a
user can put softeval's numbers next to published ones. They score the harness's own response:
the same greedy continuation read to the harness's ends (the task's `harness_generation`: its
stop strings and its token budget in the model's tokens), which the generate job records as
`harness_response` beside softeval's response (greedy decoding is deterministic, so this is what
the harness's own generation returns for the same prompt). What still differs (the prompt) is
named per task in README.md. The likelihood metrics (acc, acc_norm) are computed over softeval's own
prompt and continuation, which the harness does not score, so they go under their own name
("options:<name>"), never "lm_eval:<name>".
"""

from __future__ import annotations

import re
import string
from typing import Any

from softeval.data.answers import cut_at_stop
from softeval.data.tasks import Task, gold_answers

INVALID = "[invalid]"  # what the harness's regex filter returns when nothing matches
_PUNCTUATION = str.maketrans("", "", string.punctuation)


def harness_filter(text: str, metric: dict[str, Any]) -> str:
    """The harness's response after its filters (regex, take_first, whitespace)."""
    if metric.get("regex"):
        matches = re.findall(metric["regex"], text)
        if not matches:
            return INVALID
        match = matches[metric.get("group_select", 0)]
        if isinstance(match, tuple):  # several groups: the first that matched
            match = next((m for m in match if m), INVALID)
        return match.strip()
    return text.strip() if metric.get("strip", True) else text  # the harness's whitespace filter: strip()


def exact_match(prediction: str, gold: str, metric: dict[str, Any]) -> bool:
    """Hugging Face evaluate's exact_match with the harness's options."""
    for pattern in metric.get("regexes_to_ignore", ()):
        prediction, gold = re.sub(pattern, "", prediction), re.sub(pattern, "", gold)
    if metric.get("ignore_case"):
        prediction, gold = prediction.lower(), gold.lower()
    if metric.get("ignore_punctuation"):
        prediction, gold = prediction.translate(_PUNCTUATION), gold.translate(_PUNCTUATION)
    return prediction == gold


def golds(example: dict[str, Any], which: str) -> list[str]:
    if which == "answer":
        return [str(example["answer"])]
    if which == "solution":
        return [str(example.get("solution") or example["answer"])]
    return gold_answers(example)


def math_verified(response: str, solution: str) -> bool:
    """The harness's math_verify score: math-verify's equivalence of the parsed response and solution."""
    from math_verify import parse, verify

    try:
        return bool(verify(gold=parse(solution), target=parse(response)))
    except Exception:  # math-verify raises on unparsable LaTeX (and on its own timeouts): not verified
        return False


def option_choice(options_row: dict[str, Any], normalized: bool) -> int:
    """The likeliest option; acc_norm divides each log-likelihood by the option's length in characters."""
    logliks = options_row["logliks"]
    if not normalized:
        return int(options_row["chosen"])
    per_char = [ll / max(len(text), 1) for ll, text in zip(logliks, options_row["options"], strict=True)]
    return max(range(len(per_char)), key=lambda i: (per_char[i], -i))


LIKELIHOOD_METRICS = ("acc", "acc_norm")


def harness_scores(task: Task, example: dict[str, Any], harness_response: str) -> dict[str, bool]:
    """One example's scores computed from the harness's response as lm-evaluation-harness computes
    them, by the names the harness reports them under (columns "lm_eval:<name>"). The text is cut
    at the harness's stop strings again (a no-op on a recorded harness_response), so any text
    may be given."""
    if task.harness_generation is None:
        return {}  # likelihood metrics only: option_scores
    text = cut_at_stop(harness_response, task.harness_generation.until)
    scores = {}
    for metric in task.harness:
        kind = metric["metric"]
        if kind in LIKELIHOOD_METRICS:
            continue  # option_scores: over softeval's prompt and continuation, not the harness's
        if kind == "math_verify":
            scores[metric["name"]] = math_verified(text, golds(example, "solution")[0])
        else:
            prediction = harness_filter(text, metric)
            wanted = golds(example, metric.get("gold", "answers"))
            scores[metric["name"]] = any(exact_match(prediction, gold, metric) for gold in wanted)
    return scores


def option_scores(task: Task, example: dict[str, Any], options_row: dict[str, Any]) -> dict[str, bool]:
    """The harness's acc / acc_norm computed over softeval's own prompt and continuations
    (" B. <option>"), so not the harness's number on the same model: the harness scores its
    own prompt and continuation (a letter, or the bare option text). Columns "options:<name>"."""
    return {
        metric["name"]: option_choice(options_row, metric["metric"] == "acc_norm") == example["label"]
        for metric in task.harness
        if metric["metric"] in LIKELIHOOD_METRICS
    }
