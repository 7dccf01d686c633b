"""Generation backends: one small protocol, chosen by name (evaluation.generate.backend).

A backend loads what it generates with and streams greedy texts for prompts, with an
optional soft prompt before each, as each one ends (a job saves each chunk of rows as soon as
it is complete: softeval.engine.chunks.write_streamed). "hf" is softeval's own generator on the Hugging Face model
(the reference every invariant test checks); "vllm" hands the same token ids, or the soft
prompt's vectors followed by the prompt's embeddings, to a vLLM engine. Jobs ask the registry
for a backend by name and never branch on which one it is.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any, ClassVar, Protocol

import torch

from softeval.engine.generate import Generation, Until, iter_greedy, stop_token_ids
from softeval.engine.methods import ChatWrap
from softeval.engine.models import ModelOptions, load_model
from softeval.registry import Registry
from softeval.settings import VLLM_WINDOW, GenerateSettings


class GenerationBackend(Protocol):
    """Greedy generation for prompts with an optional soft prompt (`vectors`)."""

    # True when it generates with the job's Hugging Face model, so a job that scored options
    # with that model first keeps it loaded; False when it loads an engine of its own.
    uses_hf_model: ClassVar[bool]

    def load(
        self, ref: str, options: ModelOptions, threads: int, *, soft_prompt: bool = False
    ) -> tuple[Any, Any, ChatWrap | None]:
        """(model or engine, tokenizer, chat template when the model entry asks for it);
        `soft_prompt`: the engine will be given soft prompts (vLLM: prompt embeddings on)."""
        ...

    def stream(
        self,
        model: Any,
        tokenizer: Any,
        prompts: Sequence[str],
        *,
        vectors: torch.Tensor | None,
        stops: Sequence[str],
        max_new_tokens: int,
        shared_prefix: str | None,
        stop_ids: Sequence[int] = (),
        also: Until | None = None,
    ) -> Iterator[tuple[int, Generation]]:
        """(index of the prompt, generation) as each continuation ends, every prompt in flight as
        far as the backend allows. `stop_ids`: end-of-turn tokens beyond the model's EOS (a chat
        template's); `also`: a second reading of each continuation (another tool's stops and
        budget), in `also_text`."""
        ...


def load_with_chat(ref: str, options: ModelOptions, threads: int) -> tuple[Any, Any, ChatWrap | None]:
    """The frozen Hugging Face model, its tokenizer, and its chat template when the entry asks for it."""
    model, tokenizer = load_model(ref, threads, options)
    return model, tokenizer, ChatWrap.from_tokenizer(tokenizer) if options.chat_template else None


class HFBackend:
    """softeval's batched generator with a KV cache on the Hugging Face model (the reference)."""

    uses_hf_model: ClassVar[bool] = True

    def __init__(self, settings: GenerateSettings) -> None:
        self.batch_size = settings.batch_size

    def load(
        self, ref: str, options: ModelOptions, threads: int, *, soft_prompt: bool = False
    ) -> tuple[Any, Any, ChatWrap | None]:
        return load_with_chat(ref, options, threads)

    def stream(
        self,
        model: Any,
        tokenizer: Any,
        prompts: Sequence[str],
        *,
        vectors: torch.Tensor | None,
        stops: Sequence[str],
        max_new_tokens: int,
        shared_prefix: str | None,
        stop_ids: Sequence[int] = (),
        also: Until | None = None,
    ) -> Iterator[tuple[int, Generation]]:
        return iter_greedy(
            model,
            tokenizer,
            prompts,
            vectors=vectors,
            stops=stops,
            max_new_tokens=max_new_tokens,
            batch_size=self.batch_size,
            shared_prefix=shared_prefix,
            stop_ids=stop_ids,
            also=also,
        )


class VLLMBackend:
    """A vLLM engine (pip install "softeval[vllm]"); it caches shared prefixes itself."""

    uses_hf_model: ClassVar[bool] = False

    def __init__(self, settings: GenerateSettings) -> None:
        self.engine = settings.vllm
        self.window = VLLM_WINDOW  # prompts per engine call (softeval.settings.VLLM_WINDOW: why)

    def load(
        self, ref: str, options: ModelOptions, threads: int, *, soft_prompt: bool = False
    ) -> tuple[Any, Any, ChatWrap | None]:
        from softeval.engine.vllm_backend import VLLMModel

        model = VLLMModel(ref, options, self.engine, prompt_embeds=soft_prompt)
        return model, model.tokenizer, ChatWrap.from_tokenizer(model.tokenizer) if options.chat_template else None

    def stream(
        self,
        model: Any,
        tokenizer: Any,
        prompts: Sequence[str],
        *,
        vectors: torch.Tensor | None,
        stops: Sequence[str],
        max_new_tokens: int,
        shared_prefix: str | None,
        stop_ids: Sequence[int] = (),
        also: Until | None = None,
    ) -> Iterator[tuple[int, Generation]]:
        eos_ids = stop_token_ids(model, tokenizer) | set(stop_ids)
        for start in range(0, len(prompts), self.window):
            window = prompts[start : start + self.window]
            yield from enumerate(model.generate(window, vectors, stops, max_new_tokens, eos_ids, also), start)


BACKENDS: Registry[Callable[[GenerateSettings], GenerationBackend]] = Registry(
    "generation backend", "evaluation.generate.backend"
)
BACKENDS.add("hf", HFBackend)
BACKENDS.add("vllm", VLLMBackend)


def backend_for(settings: GenerateSettings) -> GenerationBackend:
    """The backend evaluation.generate.backend names."""
    return BACKENDS.get(settings.backend)(settings)
