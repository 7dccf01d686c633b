"""The judge job: per-example verdicts (knowledge, format, strict) for a unit's generations.

Open tasks take all three verdicts from the judge. Closed tasks take knowledge from the
option log-likelihoods (the likeliest option is the gold one) and format/strict from the
judge; the judge's "gold mentioned" verdict is kept beside it. Tasks that name
lm-evaluation-harness's scores (softeval.judges.harness) get them per example too ("lm_eval").
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from softeval.data.splits import load_split
from softeval.data.tasks import Task
from softeval.io import atomic_write_jsonl, read_jsonl
from softeval.judges.harness import harness_scores
from softeval.judges.rule import Judge, RuleJudge
from softeval.schema import InputError

JUDGES = ("rule", "hf", "openai")
DEFAULT_PROMPTS = Path(__file__).resolve().parents[3] / "config" / "judges" / "default.yaml"


def make_judge(spec: dict[str, Any] | str, threads: int = 1) -> Judge:
    """The judge a config's evaluation.judge describes: rule, or an LLM (hf, openai) behind the
    rule cascade."""
    spec = {"name": spec} if isinstance(spec, str) else spec
    name = spec.get("name", "rule")
    if name == "rule":
        return RuleJudge()
    if name not in ("hf", "openai"):
        raise InputError(f"unknown judge {name!r}; use one of {', '.join(JUDGES)} (config key evaluation.judge.name)")
    from softeval.judges.local_lm import CascadeJudge, JudgePrompts, VerdictCache

    spec = {"prompts": str(DEFAULT_PROMPTS), "cache": "results/judge_cache.sqlite", **spec}
    required = ("model",) if name == "hf" else ("base_url", "model")
    missing = [k for k in required if not spec.get(k)]
    if missing:
        raise InputError(f"judge {name!r} needs evaluation.judge.{missing[0]}")
    prompts, cache = JudgePrompts.load(spec["prompts"]), VerdictCache(spec["cache"])
    if name == "hf":
        from softeval.engine.models import load_model
        from softeval.judges.local_lm import HFJudge

        model, tokenizer = load_model(spec["model"], threads)
        backend = HFJudge(model, tokenizer, spec["model"], prompts, cache, spec.get("batch_size", 16))
    else:
        from softeval.judges.openai_compatible import OpenAIJudge

        backend = OpenAIJudge(
            base_url=spec["base_url"],
            model=spec["model"],
            prompts=prompts,
            cache=cache,
            api_key_env=spec.get("api_key_env"),
            concurrency=spec.get("concurrency", 8),
            timeout=spec.get("timeout", 60.0),
            max_retries=spec.get("max_retries", 5),
            extra_body=spec.get("extra_body"),
        )
    return CascadeJudge(backend, cascade=spec.get("cascade", True))


def read_rows(path: Path, ids: list[str], what: str) -> list[dict[str, Any]]:
    """Rows of a JSONL artifact, checked to cover exactly the test examples, in order."""
    rows = read_jsonl(path, what)
    if [row.get("id") for row in rows] != ids:
        raise InputError(
            f"{path}: {what} rows do not match the test split ({len(rows)} rows for {len(ids)} examples); "
            "delete it so the workflow recomputes it"
        )
    return rows


def run_judge(
    *,
    task: Task,
    data_dir: Path,
    judge_name: str | dict[str, Any],
    generations: list[Path],
    logliks: list[Path],
    outs: list[Path],
) -> None:
    if len(generations) != len(outs) or (task.closed and len(logliks) != len(outs)):
        raise InputError("judge: give one output per generation file (and one log-likelihood file each, closed tasks)")
    judge = make_judge(judge_name)
    test = [dict(row) for row in load_split(data_dir, "test")]
    ids = [example["id"] for example in test]
    # closed tasks take knowledge from the option likelihoods: ask the judge for format only
    kinds = ("format",) if task.closed else ("knowledge", "format")
    for index, (generation_path, out) in enumerate(zip(generations, outs, strict=True)):
        rows = read_rows(generation_path, ids, "generation")
        verdicts = judge.judge(task, test, [row["response"] for row in rows], kinds)
        options = read_rows(logliks[index], ids, "log-likelihood") if task.closed else None
        scored = []
        for k, (example, row, verdict) in enumerate(zip(test, rows, verdicts, strict=True)):
            record = {
                "id": example["id"],
                "method": row["method"],
                "step": row["step"],
                "judge": verdict.judge,
                "knowledge": verdict.knowledge,
                "format": verdict.format,
                "strict": verdict.strict,
                "gold": task.target(example).strip(),
                "aliases": list(example.get("aliases") or []),
                "response": row["response"],
                "knowledge_from": "judge",
            }
            if "solution" in example:  # the gold is a worked solution: its final answer, for the reader
                record["answer"] = example["answer"]
            if options is not None:
                record |= {
                    "knowledge": options[k]["chosen"] == example["label"],
                    "knowledge_normalized": options[k]["chosen_normalized"] == example["label"],
                    "mentions_gold": verdict.knowledge,
                    "knowledge_from": "loglik",
                }
            if task.harness:
                record["lm_eval"] = harness_scores(task, example, row["response"], options[k] if options else None)
            scored.append(record)
        atomic_write_jsonl(out, scored)
