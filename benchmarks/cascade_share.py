"""What `softeval plan-cost` takes from a finished run: the judge cascade's LLM share and the
responses' lengths, per task, from the run's per-example score and generation files.

The cascade (softeval.judges.local_lm.CascadeJudge, on by default) asks the rule judge first and
the LLM judge only where the rule is not certain:
- knowledge (open tasks): the LLM is asked where the rule does not find the gold answer;
- format (every task): the LLM is asked where the rule rejects the format, unless the response is
  degenerate (a certain "no");
- closed tasks take knowledge from the option log-likelihoods: the judge is asked for format only.
So a run judged by the rule judge (evaluation.judge.name: rule, the default config's) says, row by
row, what the cascade would send to an LLM: its score rows hold the rule's verdicts ("knowledge",
or "mentions_gold" on closed tasks, "format", "degenerate"). A run judged through the cascade
cannot say it (an LLM's "yes" overwrites the rule's "no"), and is refused.

Lengths, from the generation files: a row decodes until softeval's reading and, where a task
records one, lm-evaluation-harness's have ended. The run saw a row's end when softeval's reading
stopped (EOS or a stop string), or when it was cut at its budget and the harness's reading (256
tokens) went on to a stop; plan-cost runs the rest to the config's budget (and to the harness's,
where that reading was cut too). Per task: those shares, and the ended rows' mean and largest
decoded tokens and mean response tokens (the harness reading's tokens estimated at the response's
tokens per character).

    .venv/bin/python benchmarks/cascade_share.py --results <run>/results [--json] [--trim <folder>]

The figures plan-cost uses (softeval.plan_cost.MEASURED) are this script's on
tests/configs/real-small.yaml (SmolLM2-135M-Instruct, base and post, the seven real tasks'
fixtures, every unit); tests/data/cascade-run/ holds that run's score and generation files
(only the fields read here), and tests/unit/test_plan_cost.py checks that the stored figures are
what this script computes on them.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path
from typing import Any

from softeval.data.tasks import load_task

DIGITS = 4  # the stored figures' rounding
HARNESS_ENDED = 0.95  # a harness reading estimated under this share of its budget ended at a stop
TASK_DIR = Path(__file__).resolve().parents[1] / "config" / "tasks"


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def gold_answers(row: dict[str, Any]) -> list[str]:
    """The gold answer and its aliases as a score row keeps them (softeval.data.tasks.gold_answers)."""
    return [str(row.get("answer", row["gold"])), *(str(a) for a in row.get("aliases") or [])]


def row_end(row: dict[str, Any], harness_budget: int) -> tuple[float, float] | str:
    """(tokens decoded, tokens of the response) of a row whose end the run saw; else "budget" (cut
    at softeval's budget; the harness's reading, if any, ended within it) or "both" (cut at its
    budget by every reading).

    A row decodes until both readings have ended: softeval's (its stops and budget) and, where the
    task records one, lm-evaluation-harness's (its stops, 256 tokens). The run saw the end when
    softeval's reading stopped (EOS or a stop string), or when it was cut at its budget and the
    harness's reading went on to end at a stop (before its own budget): the text's own end, which a
    larger budget (the paper's) would reach too. The harness reading's tokens are estimated at the
    response's tokens per character."""
    tokens = float(row["new_tokens"])
    harness, response = row.get("harness_response"), row.get("response") or ""
    further = None
    if harness is not None and response and len(harness) > len(response):
        further = tokens * len(harness) / len(response)
    if row["stop_reason"] != "length":
        return max(tokens, further or 0.0), tokens
    if further is None:
        return "both" if harness is None else "budget"
    return (further, further) if further < HARNESS_ENDED * harness_budget else "both"


def unit_files(results: Path) -> list[tuple[str, Path, Path]]:
    """(task, scores file, generation file) of every judged unit: scores/<model>/<role>/<task>/<unit>.jsonl."""
    found = []
    for scores in sorted((results / "scores").rglob("*.jsonl")):
        relative = scores.relative_to(results / "scores")
        if len(relative.parts) < 4:
            continue
        generations = results / "generations" / relative
        if not generations.is_file():
            raise SystemExit(f"{generations}: no generation file beside {scores}")
        found.append((relative.parts[2], scores, generations))
    if not found:
        raise SystemExit(f"{results}/scores: no score files; give a finished run's results folder")
    return found


def measure(results: Path, task_dir: Path = TASK_DIR) -> dict[str, dict[str, Any]]:
    """Per task: rows, units, the LLM's share of the rows for each verdict kind, the share of rows
    cut at softeval's budget (length_share) and of those the share also cut at the harness's
    (harness_cut_share; row_end), the other rows' mean and largest decoded tokens and mean response
    tokens (softeval's reading, what the judge reads), and the mean characters of the gold answers
    an open task's knowledge prompt shows."""
    per_task: dict[str, dict[str, Any]] = {}
    for task, scores_path, generations_path in unit_files(results):
        scores, generations = read_jsonl(scores_path), read_jsonl(generations_path)
        if [r["id"] for r in scores] != [r["id"] for r in generations]:
            raise SystemExit(f"{scores_path}: its rows are not {generations_path}'s")
        judged = {str(r.get("judge") or "rule") for r in scores}
        if judged != {"rule"}:
            raise SystemExit(
                f"{scores_path}: judged by {sorted(judged)}; the cascade's share needs the rule judge's own verdicts "
                "(run with evaluation.judge.name: rule)"
            )
        into = per_task.setdefault(task, {"rows": 0, "units": 0, "knowledge": 0, "format": 0, "closed": None})
        closed = all(r.get("knowledge_from") == "loglik" for r in scores)
        into["closed"] = closed if into["closed"] is None else into["closed"] and closed
        into["units"] += 1
        into["rows"] += len(scores)
        if not closed:  # closed tasks: knowledge from the option likelihoods, never a judge
            into["knowledge"] += sum(not r["knowledge"] for r in scores)
        into["format"] += sum(not r["format"] and r.get("degenerate") is None for r in scores)
        harness = load_task(task_dir, task).harness_generation
        ends = [row_end(r, harness.max_gen_toks if harness else 0) for r in generations]
        for kind in ("budget", "both"):
            into[kind] = into.get(kind, 0) + sum(end == kind for end in ends)
        into.setdefault("ended", []).extend(end for end in ends if isinstance(end, tuple))
        if not closed:  # what the knowledge prompt shows as the gold: the answer and its aliases
            into.setdefault("gold", []).extend(len(" | ".join(gold_answers(r))) for r in scores)
    out = {}
    for task, into in sorted(per_task.items()):
        rows, ended = into["rows"], into.get("ended", [])
        decoded, responses = [d for d, _ in ended], [r for _, r in ended]
        out[task] = {
            "rows": rows,
            "units": into["units"],
            "closed": bool(into["closed"]),
            "knowledge_share": 0.0 if into["closed"] else round(into["knowledge"] / rows, DIGITS),
            "format_share": round(into["format"] / rows, DIGITS),
            "length_share": round((into["budget"] + into["both"]) / rows, DIGITS),
            "harness_cut_share": round(into["both"] / rows, DIGITS),
            "ended_mean_tokens": round(statistics.fmean(decoded), 1) if ended else 0.0,
            "ended_max_tokens": round(max(decoded), 1) if ended else 0.0,
            "ended_response_tokens": round(statistics.fmean(responses), 1) if ended else 0.0,
            "gold_chars": round(statistics.fmean(into["gold"]), 1) if into.get("gold") else 0.0,
        }
    return out


def overall(measured: dict[str, dict[str, Any]]) -> float:
    """The LLM's share of all verdicts the judge is asked for (open tasks two per row, closed one)."""
    asked = sum(m["rows"] * (m["knowledge_share"] + m["format_share"]) for m in measured.values())
    verdicts = sum(m["rows"] * (1 if m["closed"] else 2) for m in measured.values())
    return asked / verdicts if verdicts else 0.0


SCORE_FIELDS = ("id", "judge", "knowledge", "format", "degenerate", "knowledge_from", "gold", "answer", "aliases")
GENERATION_FIELDS = ("id", "stop_reason", "new_tokens", "response", "harness_response")


def trim(results: Path, out: Path) -> None:
    """A copy of the run's score and generation files with only the fields `measure` reads (the
    test fixture tests/data/cascade-run is this of the run MEASURED comes from)."""
    for _, scores, generations in unit_files(results):
        for path, fields in ((scores, SCORE_FIELDS), (generations, GENERATION_FIELDS)):
            target = out / path.relative_to(results)
            target.parent.mkdir(parents=True, exist_ok=True)
            rows = [{k: row[k] for k in fields if k in row} for row in read_jsonl(path)]
            target.write_text(
                "".join(json.dumps(row, sort_keys=True, separators=(",", ":")) + "\n" for row in rows), encoding="utf-8"
            )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--results", required=True, help="a finished run's results/ folder (rule judge)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON (what plan_cost.MEASURED holds)")
    parser.add_argument("--task-dir", default=str(TASK_DIR), help="the task files (their harness budgets)")
    parser.add_argument("--trim", help="also write the files it reads, only the fields it reads, to this folder")
    args = parser.parse_args(argv)
    if args.trim:
        trim(Path(args.results), Path(args.trim))
    measured = measure(Path(args.results), Path(args.task_dir))
    if args.json:
        print(json.dumps(measured, indent=1, sort_keys=True))
        return
    print("| task | rows | LLM share, knowledge | LLM share, format | cut at budget | ended: mean / max tokens |")
    print("|---|---:|---:|---:|---:|---:|")
    for task, m in measured.items():
        knowledge = "(log-likelihoods)" if m["closed"] else f"{m['knowledge_share']:.1%}"
        print(
            f"| {task} | {m['rows']} | {knowledge} | {m['format_share']:.1%} | {m['length_share']:.1%} | "
            f"{m['ended_mean_tokens']:.1f} / {m['ended_max_tokens']:.0f} |"
        )
    print(f"\nLLM share of all verdicts the judge is asked for: {overall(measured):.1%}")


if __name__ == "__main__":
    sys.exit(main())
