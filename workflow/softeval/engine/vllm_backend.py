"""Optional vLLM generation backend (pip install "softeval[vllm]"; evaluation.generate.backend: vllm).

Zero- and few-shot prompts go to vLLM as the same token ids the Hugging Face backend uses;
soft prompts go as prompt embeddings: the tuned vectors followed by the prompt's token
embeddings as the model's embedding module outputs them (softeval.engine.embeddings: Gemma's
scale included, without loading the model on the CPU), exactly the sequence softeval's own
generator builds. Prompt embeddings are switched on only in an engine that takes soft prompts
(vLLM's `enable_prompt_embeds` changes how it schedules every request). Prompts too long for
the engine's `max_model_len` beside the soft prompt and the token budget keep their end, as on
the Hugging Face path (softeval.engine.context), instead of failing the whole call.
Greedy decoding, the task's stop strings and the model's end-of-turn ids.

A second reading (`also`, lm-evaluation-harness's stops and budget) must read the *same*
continuation as the first, and vLLM is not batch-invariant: a second, separate greedy request
for the same prompt can decode differently. So the first request is softeval's own (its stops
and budget, exactly the request made without `also`), and the second reading is cut client-side
from that response's tokens; only where it needs more (its budget is larger, or softeval's stop
came first) the response's tokens are sent back as the prompt and continued with the second
reading's stops and the rest of its budget. Both readings are then readings of one token
sequence, whatever vLLM's batching does.

vLLM before 0.19.1 is refused for a Gemma or Gemma 2 model with soft prompts: it scaled
`inputs_embeds` by sqrt(hidden size) a second time (fixed by vLLM PR #36787), and the vectors
softeval sends are already scaled, as Transformers 5's embedding module outputs them. The engine
starts only once the GPU memory it takes is free (a model of the job's that something still
references would otherwise make vLLM fail to start, or leave its KV cache short).
The Hugging Face backend stays the reference: tests/unit/engine/test_vllm.py compares the two
where vLLM and a GPU exist; tests/unit/engine/test_vllm_fake.py runs this module on a fake engine.
"""

from __future__ import annotations

import gc
import math
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import torch

from softeval.data.answers import cut_at_stop
from softeval.engine.context import keep_last, prompt_limit
from softeval.engine.embeddings import load_input_embeddings
from softeval.engine.generate import Generation, Until
from softeval.engine.models import ModelOptions, check_reference
from softeval.schema import InputError

DEFAULTS = {"gpu_memory_utilization": 0.85, "max_model_len": 4096, "tensor_parallel_size": 1}
# vLLM's Gemma and Gemma 2 scaled `inputs_embeds` by sqrt(hidden size) inside forward until PR #36787
# (merged 2026-03-11; 0.19.1 is the first release that has it and supports Transformers 5).
PRESCALED_EMBEDS_SINCE = "0.19.1"
RESCALED_EMBEDS = ("gemma", "gemma2")  # model types whose vLLM forward scaled them again
GiB = 1024**3


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
        if prompt_embeds:
            check_prompt_embeds(self.config, _vllm_version())
        require_free_gpu_memory(float(settings.get("gpu_memory_utilization") or DEFAULTS["gpu_memory_utilization"]))
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
        reserved = max(max_new_tokens, also.max_new_tokens if also is not None else 0)
        limit = prompt_limit(self, 0 if vectors is None else vectors.shape[0], reserved)
        kept = [keep_last(self.tokenizer(prompt)["input_ids"], limit) for prompt in prompts]
        rows = [ids for ids, _ in kept]
        first = Until(tuple(stops), max_new_tokens)
        completions = self._complete([self._inputs(row, vectors) for row in rows], [first] * len(rows), eos_ids)
        generations = [_generation(c, len(row), cut) for c, (row, cut) in zip(completions, kept, strict=True)]
        if also is None:
            return generations
        second = self._second_reading(rows, vectors, completions, also, eos_ids)
        return [replace(g, also_text=text) for g, text in zip(generations, second, strict=True)]

    def _inputs(self, row: list[int], vectors: torch.Tensor | None) -> dict[str, Any]:
        """One prompt as vLLM takes it: token ids, or the soft prompt's vectors and the tokens' embeddings."""
        if vectors is None:
            return {"prompt_token_ids": row}
        if not self.prompt_embeds:
            raise ValueError("this vLLM engine was started without prompt embeddings; load it with prompt_embeds")
        embed = self.input_embeddings()
        with torch.no_grad():
            return {"prompt_embeds": torch.cat([vectors.to(embed.weight.dtype), embed(torch.tensor(row))], dim=0)}

    def _complete(self, inputs: list[dict[str, Any]], readings: list[Until], eos_ids: set[int]) -> list[Any]:
        """One greedy completion per input, each to its reading's stops and budget."""
        from vllm import SamplingParams

        params = [
            SamplingParams(
                temperature=0.0,
                max_tokens=reading.max_new_tokens,
                stop=list(reading.stops),
                stop_token_ids=sorted(eos_ids),
                skip_special_tokens=True,
            )
            for reading in readings
        ]
        if not inputs:
            return []
        return [out.outputs[0] for out in self.llm.generate(inputs, params, use_tqdm=False)]

    def _second_reading(
        self,
        rows: list[list[int]],
        vectors: torch.Tensor | None,
        completions: list[Any],
        also: Until,
        eos_ids: set[int],
    ) -> list[str]:
        """`also`'s reading of the continuation each first response began: cut from the response's
        tokens where it ends within them, else those tokens continued (sent back as the prompt)."""
        read = [_before_end(c, eos_ids) for c in completions]
        tokens = [ids for ids, _ in read]
        more = [i for i, (ids, ended) in enumerate(read) if not ended and not self._ended(ids, also)]
        budgets = [Until(also.stops, also.max_new_tokens - len(tokens[i])) for i in more]
        continued = self._complete([self._inputs(rows[i] + tokens[i], vectors) for i in more], budgets, eos_ids)
        for i, c in zip(more, continued, strict=True):
            tokens[i] = tokens[i] + _before_end(c, eos_ids)[0]
        return [self._text(ids[: also.max_new_tokens], also.stops) for ids in tokens]

    def _ended(self, ids: list[int], reading: Until) -> bool:
        if len(ids) >= reading.max_new_tokens:
            return True
        text = self.tokenizer.decode(ids, skip_special_tokens=True)
        return cut_at_stop(text, reading.stops) != text

    def _text(self, ids: list[int], stops: Sequence[str]) -> str:
        return cut_at_stop(self.tokenizer.decode(ids, skip_special_tokens=True), stops)


def _before_end(completion: Any, eos_ids: set[int]) -> tuple[list[int], bool]:
    """A completion's tokens before its end-of-sequence id, and whether it ended there (EOS or an
    end-of-turn id: every reading ends with it)."""
    ids = list(completion.token_ids)
    for k, token in enumerate(ids):
        if token in eos_ids:
            return ids[:k], True
    return ids, completion.finish_reason == "stop" and not isinstance(completion.stop_reason, str)


def _vllm_version() -> str:
    import vllm

    return str(getattr(vllm, "__version__", "0"))


def check_prompt_embeds(config: Any, version: str) -> None:
    """Refuse soft prompts on a vLLM that would scale a Gemma/Gemma 2 model's prompt embeddings twice."""
    from packaging.version import InvalidVersion, Version

    text = config.get_text_config() if hasattr(config, "get_text_config") else config
    kinds = {getattr(config, "model_type", None), getattr(text, "model_type", None)}
    try:
        old = Version(version) < Version(PRESCALED_EMBEDS_SINCE)
    except InvalidVersion:
        old = False  # a development build: assume it is recent
    if old and kinds & set(RESCALED_EMBEDS):
        kind = next(k for k in RESCALED_EMBEDS if k in kinds)
        raise InputError(
            f"vLLM {version} scales a {kind} model's prompt embeddings by sqrt(hidden size) a second time "
            f"(soft prompts would be ~{math.sqrt(text.hidden_size):.0f}x too large; vLLM PR #36787): "
            f'pip install "vllm>={PRESCALED_EMBEDS_SINCE}", or use evaluation.generate.backend: hf'
        )


def require_free_gpu_memory(utilization: float) -> None:
    """Free what this process no longer references (a model in a reference cycle is only freed by
    the cycle collector) and check that the share of GPU memory the engine takes is free, with
    one error naming who holds it when it is not (vLLM's own check fails later, less clearly)."""
    gc.collect()
    if not torch.cuda.is_available():
        return
    torch.cuda.empty_cache()
    free, total = torch.cuda.mem_get_info()
    if free >= utilization * total:
        return
    ours = torch.cuda.memory_reserved()
    others = max(0, total - free - ours)
    raise InputError(
        f"vLLM needs {utilization:.0%} of the GPU ({utilization * total / GiB:.1f} GiB) free to start, but "
        f"{free / GiB:.1f} of {total / GiB:.1f} GiB is: this job still holds {ours / GiB:.1f} GiB "
        f"(a model not freed) and other processes {others / GiB:.1f} GiB; lower "
        "evaluation.generate.vllm.gpu_memory_utilization or free the GPU"
    )


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
