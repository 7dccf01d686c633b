"""The judges a config's evaluation.judge can name: the registry, and the built-in ones (the rule
judge, or an LLM behind the rule cascade: hf, openai). One place builds judges, for the judge
job and for judge validation; a new judge is a builder registered here and a schema enum entry
(docs/extending.md)."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from softeval.judges.rule import Judge, RuleJudge
from softeval.registry import Registry
from softeval.schema import InputError
from softeval.settings import JudgeSettings
from softeval.shipped import workflow_root

WORKFLOW_ROOT = workflow_root()


def judge_settings(settings: JudgeSettings | Mapping[str, Any] | str) -> JudgeSettings:
    """Settings from a judge name, a JSON object (evaluation.judge) or settings already parsed."""
    if isinstance(settings, JudgeSettings):
        return settings
    return JudgeSettings.parse({"name": settings} if isinstance(settings, str) else settings, "judge")


def prompts_file(settings: JudgeSettings) -> Path:
    """The judge prompts: the given file, or the workflow's own (the schema's default, relative to
    the workflow root, whatever the working directory)."""
    path = Path(settings.prompts)
    return path if "prompts" in settings.given or path.is_absolute() else WORKFLOW_ROOT / path


def judge_url(settings: JudgeSettings) -> str:
    """The judge server's URL: evaluation.judge.base_url, or the environment variable that
    base_url_env names (a server started as its own SLURM job is known only at run time)."""
    if settings.base_url and settings.base_url_env:
        raise InputError("evaluation.judge: give base_url or base_url_env, not both")
    if settings.base_url:
        return settings.base_url
    if not settings.base_url_env:
        raise InputError("judge 'openai' needs evaluation.judge.base_url (or base_url_env)")
    url = os.environ.get(settings.base_url_env, "").strip()
    if not url:
        raise InputError(
            f"the judge server's URL is read from ${settings.base_url_env} (evaluation.judge.base_url_env), which "
            "is not set; start the server (workflow/scripts/judge_server.sbatch) and export its URL"
        )
    return url


@dataclass(frozen=True)
class JudgeKind:
    """One judge a config can name (evaluation.judge.name)."""

    build: Callable[[JudgeSettings, int], Judge]  # (settings, threads) -> the judge
    needs: tuple[str, ...] = ()  # evaluation.judge keys it cannot do without
    # job input name -> the evaluation.judge key holding a file whose change reruns the judging
    workflow_inputs: dict[str, str] = field(default_factory=dict)
    # what the config check asks beyond `needs`: evaluation.judge -> a problem ("key ... is missing; ...") or None
    check: Callable[[Mapping[str, Any]], str | None] | None = None
    # where its work runs: "job" (in the judge job, on its CPU), "model" (the job loads an LLM: it
    # asks for a model job's GPU, memory and time) or "server" (the job is a client of a judge
    # server: no GPU; each job holds one of the run's judge_slots, so the jobs in flight at once,
    # times evaluation.judge.concurrency, are what the server is asked at once)
    runs_on: str = "job"


JUDGE_SLOTS = "judge_slots"  # the global resource the profiles cap (workflow/profiles/*/config.yaml)
# minutes a judge server's client job may run: it mostly waits on the server, whose throughput the
# run's judge jobs share; one killed at its limit keeps every verdict it got (the verdict cache) and
# its retry asks only the rest
SERVED_JUDGE_RUNTIME = 24 * 60


def judge_job_resources(judge: Mapping[str, Any], model_resources: Mapping[str, Any]) -> dict[str, Any]:
    """What a judge job asks the scheduler for: a judge that loads an LLM, what a model job asks
    (evaluation.resources: GPUs, memory, time; on SLURM the GPU partition); a judge server's client,
    no GPU and one judge slot; the rule judge, no GPU."""
    runs_on = JUDGES.get(judge["name"]).runs_on
    if runs_on == "model":
        keys = ["gpu", "mem_mb", "runtime"] + (["gpu_model"] if "gpu_model" in model_resources else [])
        return {key: model_resources[key] for key in keys}
    if runs_on == "server":
        return {"gpu": 0, JUDGE_SLOTS: 1, "runtime": SERVED_JUDGE_RUNTIME}
    return {"gpu": 0}


JUDGES: Registry[JudgeKind] = Registry("judge", "evaluation.judge.name")


def register_judge(
    name: str,
    needs: tuple[str, ...] = (),
    workflow_inputs: dict[str, str] | None = None,
    check: Callable[[Mapping[str, Any]], str | None] | None = None,
    runs_on: str = "job",
) -> Callable[[Callable[[JudgeSettings, int], Judge]], Callable[[JudgeSettings, int], Judge]]:
    """Decorator on a builder (settings, threads) -> Judge: the judge `name` (docs/extending.md);
    `runs_on` ("job", "model", "server") sets what its jobs ask the scheduler for."""
    if runs_on not in ("job", "model", "server"):
        raise ValueError(f"judge {name!r}: runs_on is {runs_on!r}; use 'job', 'model' or 'server'")

    def add(build: Callable[[JudgeSettings, int], Judge]) -> Callable[[JudgeSettings, int], Judge]:
        JUDGES.add(name, JudgeKind(build, needs, dict(workflow_inputs or {}), check, runs_on))
        return build

    return add


def make_judge(settings: JudgeSettings | Mapping[str, Any] | str, threads: int = 1) -> Judge:
    settings = judge_settings(settings)
    kind = JUDGES.get(settings.name)
    missing = [key for key in kind.needs if not getattr(settings, key)]
    if missing:
        raise InputError(f"judge {settings.name!r} needs evaluation.judge.{missing[0]}")
    return kind.build(settings, threads)


@register_judge("rule")
def rule_judge(settings: JudgeSettings, threads: int) -> Judge:
    """The task's own extraction and comparison (no model)."""
    return RuleJudge()


@register_judge(
    "hf", needs=("model",), workflow_inputs={"judge_model": "model", "judge_prompts": "prompts"}, runs_on="model"
)
def local_model_judge(settings: JudgeSettings, threads: int) -> Judge:
    """A local Hugging Face model behind the rule cascade."""
    from softeval.engine.models import load_model
    from softeval.judges.local_lm import CascadeJudge, HFJudge, JudgePrompts, VerdictCache

    prompts, cache = JudgePrompts.load(prompts_file(settings)), VerdictCache(settings.cache)
    model, tokenizer = load_model(settings.model, threads)
    backend = HFJudge(model, tokenizer, settings.model, prompts, cache, settings.batch_size)
    return CascadeJudge(backend, cascade=settings.cascade)


def _has_endpoint(judge: Mapping[str, Any]) -> str | None:
    if judge.get("base_url") or judge.get("base_url_env"):
        return None
    return (
        "key 'evaluation.judge.base_url' is missing; judge 'openai' needs the endpoint "
        "(or base_url_env: the variable that will hold it)"
    )


@register_judge(
    "openai", needs=("model",), workflow_inputs={"judge_prompts": "prompts"}, check=_has_endpoint, runs_on="server"
)
def openai_judge(settings: JudgeSettings, threads: int) -> Judge:
    """An OpenAI-compatible server (vLLM, TGI, a hosted API) behind the rule cascade."""
    from softeval.judges.local_lm import CascadeJudge, JudgePrompts, VerdictCache
    from softeval.judges.openai_compatible import OpenAIJudge

    url = judge_url(settings)  # a missing URL stops the job before anything loads
    prompts, cache = JudgePrompts.load(prompts_file(settings)), VerdictCache(settings.cache)
    backend = OpenAIJudge(
        base_url=url,
        model=settings.model,
        prompts=prompts,
        cache=cache,
        api_key_env=settings.api_key_env,
        concurrency=settings.concurrency,
        timeout=settings.timeout,
        max_retries=settings.max_retries,
        extra_body=settings.extra_body,
    )
    return CascadeJudge(backend, cascade=settings.cascade)
