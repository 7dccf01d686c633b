"""The generate job: greedy responses to a task's test split under one method."""

from __future__ import annotations

from typing import Any

from softeval.generate import generate_greedy
from softeval.jobs.common import Unit, write_method_outputs


def run_generate(*, settings: dict[str, Any], **job: Any) -> None:
    """Responses for every output of the job (one per soft-prompt step, else one).

    settings: few_shot_k, seed, max_new_tokens, batch_size, chunk_size.
    """

    def rows(model: Any, tokenizer: Any, unit: Unit, chunk: list, vectors: Any, step: int | None) -> list:
        generations = generate_greedy(
            model,
            tokenizer,
            [prompt for _, prompt in chunk],
            vectors=vectors,
            stops=unit.task.stop,
            max_new_tokens=unit.task.max_new_tokens or settings["max_new_tokens"],
            batch_size=settings["batch_size"],
            shared_prefix=unit.prompts.shared_prefix,
        )
        return [
            {
                "id": example["id"],
                "method": unit.prompts.method,
                "step": step,
                "prompt": prompt,
                "response": g.text,
                "stop_reason": g.stop_reason,
                "prompt_tokens": g.prompt_tokens,
                "new_tokens": g.new_tokens,
            }
            for (example, prompt), g in zip(chunk, generations, strict=True)
        ]

    write_method_outputs(job="generate", settings=settings, make_rows=rows, **job)
