"""Optional vLLM generation backend (pip install "softeval[vllm]"; evaluation.generate.backend: vllm).

Zero- and few-shot prompts go to vLLM as the same token ids the Hugging Face backend uses;
soft prompts go as prompt embeddings: the tuned vectors followed by the prompt's token
embeddings as the model's embedding module outputs them (softeval.engine.embeddings: Gemma's
scale included, without loading the model on the CPU), exactly the sequence softeval's own
generator builds. Prompt embeddings are switched on only in an engine that takes soft prompts
(vLLM's `enable_prompt_embeds` changes how it schedules every request). Prompts too long for
the engine's `max_model_len` beside the soft prompt and the token budget keep their end, as on
the Hugging Face path (softeval.engine.context), instead of failing the whole call.
Greedy decoding, the task's stop strings and the model's end-of-turn ids; a second reading
(`also`, lm-evaluation-harness's stops and budget) is a second request per prompt, which vLLM's
prefix cache makes cheap (greedy: the same continuation, read to other ends). The Hugging Face
backend stays the reference: tests/unit/engine/test_vllm.py compares the two where vLLM and a GPU exist.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import torch

from softeval.engine.context import keep_last, prompt_limit
from softeval.engine.embeddings import load_input_embeddings
from softeval.engine.generate import Generation, Until
from softeval.engine.models import ModelOptions, check_reference
from softeval.schema import InputError

DEFAULTS = {"gpu_memory_utilization": 0.85, "max_model_len": 4096, "tensor_parallel_size": 1}


class VLLMModel:
    """A vLLM engine with the tokenizer, config and (for soft prompts) input embeddings of the model."""

    def __init__(
        self, ref: str, options: ModelOptions, engine: dict[str, Any] | None = None, *, prompt_embeds: bool = False
    ) -> None:
        try:
            from vllm import LLM
        except ImportError:
            raise InputError(
                "evaluation.generate.backend is 'vllm' but vLLM is not installed; "
                'pip install "softeval[vllm]" or use backend: hf'
            ) from None
        from transformers import AutoConfig, AutoTokenizer

        self.ref, self.options = check_reference(ref), options
        common = {"revision": options.revision, "trust_remote_code": options.trust_remote_code}
        self.tokenizer = AutoTokenizer.from_pretrained(self.ref, **common)
        if self.tokenizer.pad_token_id is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        self.config = AutoConfig.from_pretrained(self.ref, **common)
        self.generation_config = _generation_config(self.ref, common)
        settings = {**DEFAULTS, **(engine or {})}
        limit = settings.get("max_model_len")
        self.max_model_len = int(limit) if limit else None  # None: the model's own positions
        self.prompt_embeds = prompt_embeds
        self.llm = LLM(
            model=self.ref,
            dtype="auto" if options.dtype == "auto" else options.dtype,
            enable_prompt_embeds=prompt_embeds,
            seed=0,
            **settings,
            **common,
        )
        self._embed: torch.nn.Module | None = None

    def input_embeddings(self) -> torch.nn.Module:
        """The model's embedding module alone, on the CPU, built once (soft prompts only)."""
        if self._embed is None:
            self._embed = load_input_embeddings(self.ref, self.options)
        return self._embed

    def generate(
        self,
        prompts: Sequence[str],
        vectors: torch.Tensor | None,
        stops: Sequence[str],
        max_new_tokens: int,
        eos_ids: set[int],
        also: Until | None = None,
    ) -> list[Generation]:
        from vllm import SamplingParams

        reserved = max(max_new_tokens, also.max_new_tokens if also is not None else 0)
        limit = prompt_limit(self, 0 if vectors is None else vectors.shape[0], reserved)
        kept = [keep_last(self.tokenizer(prompt)["input_ids"], limit) for prompt in prompts]
        rows = [ids for ids, _ in kept]
        if vectors is None:
            inputs: list[dict[str, Any]] = [{"prompt_token_ids": row} for row in rows]
        else:
            if not self.prompt_embeds:
                raise ValueError("this vLLM engine was started without prompt embeddings; load it with prompt_embeds")
            embed = self.input_embeddings()
            with torch.no_grad():
                inputs = [
                    {"prompt_embeds": torch.cat([vectors.to(embed.weight.dtype), embed(torch.tensor(row))], dim=0)}
                    for row in rows
                ]

        def read(reading: Until) -> list[Any]:
            params = SamplingParams(
                temperature=0.0,
                max_tokens=reading.max_new_tokens,
                stop=list(reading.stops),
                stop_token_ids=sorted(eos_ids),
                skip_special_tokens=True,
            )
            return [out.outputs[0] for out in self.llm.generate(inputs, params, use_tqdm=False)]

        first = [
            _generation(c, len(row), cut)
            for c, (row, cut) in zip(read(Until(tuple(stops), max_new_tokens)), kept, strict=True)
        ]
        if also is None:
            return first
        return [replace(g, also_text=c.text) for g, c in zip(first, read(also), strict=True)]


def _generation_config(ref: str, common: dict[str, Any]) -> Any:
    """The checkpoint's generation config (its end-of-turn ids), if it ships one."""
    from transformers import GenerationConfig

    try:
        return GenerationConfig.from_pretrained(ref, **common)
    except OSError:
        return None


def _generation(completion: Any, prompt_tokens: int, truncated: int = 0) -> Generation:
    """vLLM's finish reasons in softeval's terms: a matched stop string is "stop", an end id "eos"."""
    if completion.finish_reason == "length":
        reason = "length"
    else:
        reason = "stop" if isinstance(completion.stop_reason, str) else "eos"
    return Generation(completion.text, reason, prompt_tokens, len(completion.token_ids), truncated)
