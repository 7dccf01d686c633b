"""Knowledge of a closed task, as the option the model finds most likely: the rows the evaluate
job writes (option_rows), and run_loglik, one method's option scores alone with a model of their own."""

from __future__ import annotations

from typing import Any

from softeval.data.tasks import Task
from softeval.engine.loglik import score_options
from softeval.jobs.common import PromptedTest, RowMaker, one_chunk_at_a_time, run_method_job
from softeval.schema import InputError
from softeval.settings import LoglikSettings


def option_rows(settings: LoglikSettings, task: Task) -> RowMaker:
    """A chunk's option log-likelihoods and choices, one row each.

    settings: few_shot_k, seed, batch_size, chunk_size, share_prompt (default true).
    """
    if not task.closed:
        raise InputError(f"task {task.name} is open; option log-likelihoods exist for closed tasks only")

    def rows(model: Any, tokenizer: Any, unit: PromptedTest, chunk: list, vectors: Any, step: int | None) -> list:
        examples = [example for example, _ in chunk]
        prompts = [prompt for _, prompt in chunk]
        scores = score_options(
            model,
            tokenizer,
            task,
            prompts,
            examples,
            vectors,
            settings.batch_size,
            unit.prompts.chat,
            shared_prefix=unit.prompts.shared_prefix,
            share_prompt=settings.share_prompt,
        )
        return [
            {
                "id": example["id"],
                "method": unit.prompts.method,
                "step": step,
                "options": task.option_responses(example),
                "label": example["label"],
                "logliks": [round(x, 5) for x in s.logliks],
                "lengths": s.lengths,
                "ranking": s.ranking,
                "chosen": s.chosen,
                "chosen_normalized": s.chosen_normalized,
                **({"prompt_truncated": s.truncated} if s.truncated else {}),
            }
            for example, s in zip(examples, scores, strict=True)
        ]

    return one_chunk_at_a_time(rows)


def run_loglik(*, settings: LoglikSettings, task: Task, **job: Any) -> None:
    """Every option's summed log-likelihood and token count, per output (one per soft-prompt step)."""
    run_method_job(job="loglik", settings=settings, task=task, make_rows=option_rows(settings, task), **job)
