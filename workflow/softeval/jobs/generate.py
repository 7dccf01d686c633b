"""The generate job: greedy responses to a task's test split under one method."""

from __future__ import annotations

from typing import Any

from softeval.generate import generate_greedy, stop_token_ids
from softeval.jobs.common import Unit, load_job_model, write_method_outputs
from softeval.methods import ChatWrap
from softeval.models import ModelOptions


def load_vllm_model(settings: dict[str, Any]) -> Any:
    """The loader of the vLLM backend: an engine instead of a Hugging Face model."""

    def load(ref: str, options: ModelOptions, threads: int) -> tuple[Any, Any, ChatWrap | None]:
        from softeval.vllm_backend import VLLMModel

        model = VLLMModel(ref, options, settings.get("vllm"))
        chat = ChatWrap.from_tokenizer(model.tokenizer) if options.chat_template else None
        return model, model.tokenizer, chat

    return load


def run_generate(*, settings: dict[str, Any], **job: Any) -> None:
    """Responses for every output of the job (one per soft-prompt step, else one).

    settings: few_shot_k, seed, max_new_tokens, batch_size, chunk_size, backend (hf | vllm), vllm.
    """
    vllm = settings.get("backend", "hf") == "vllm"

    def rows(model: Any, tokenizer: Any, unit: Unit, chunk: list, vectors: Any, step: int | None) -> list:
        if vllm:
            generations = model.generate(
                [prompt for _, prompt in chunk],
                vectors,
                unit.task.stop,
                unit.task.max_new_tokens or settings["max_new_tokens"],
                stop_token_ids(model, tokenizer),
            )
        else:
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

    loader = load_vllm_model(settings) if vllm else load_job_model
    write_method_outputs(job="generate", settings=settings, make_rows=rows, loader=loader, **job)
