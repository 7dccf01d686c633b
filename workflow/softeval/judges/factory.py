"""The judge a config's evaluation.judge names: the rule judge, or an LLM (hf, openai) behind
the rule cascade. One place builds judges, for the judge job and for judge validation."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from softeval.judges.rule import Judge, RuleJudge
from softeval.schema import InputError
from softeval.settings import JudgeSettings

WORKFLOW_ROOT = Path(__file__).resolve().parents[3]
NEEDS = {"hf": ("model",), "openai": ("model",)}


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


def make_judge(settings: JudgeSettings | Mapping[str, Any] | str, threads: int = 1) -> Judge:
    settings = judge_settings(settings)
    if settings.name == "rule":
        return RuleJudge()
    from softeval.judges.local_lm import CascadeJudge, JudgePrompts, VerdictCache

    missing = [key for key in NEEDS[settings.name] if not getattr(settings, key)]
    if missing:
        raise InputError(f"judge {settings.name!r} needs evaluation.judge.{missing[0]}")
    if settings.name == "openai":
        judge_url(settings)  # a missing URL stops the job before anything loads
    prompts, cache = JudgePrompts.load(prompts_file(settings)), VerdictCache(settings.cache)
    if settings.name == "hf":
        from softeval.engine.models import load_model
        from softeval.judges.local_lm import HFJudge

        model, tokenizer = load_model(settings.model, threads)
        backend = HFJudge(model, tokenizer, settings.model, prompts, cache, settings.batch_size)
    else:
        from softeval.judges.openai_compatible import OpenAIJudge

        backend = OpenAIJudge(
            base_url=judge_url(settings),
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
