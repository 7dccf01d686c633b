"""What every evaluation job needs: a frozen model, its task data, and the method's prompts."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tqdm import tqdm

from softeval.data.splits import load_split
from softeval.data.tasks import Task
from softeval.engine.backends import load_with_chat
from softeval.engine.chunks import write_streamed
from softeval.engine.methods import ChatWrap, MethodPrompts, build_prompts, question_shots
from softeval.engine.models import ModelOptions, model_identity
from softeval.engine.softprompt import load_prompt
from softeval.io import atomic_write_json
from softeval.layout import meta_path
from softeval.names import FEW_SHOT
from softeval.provenance import file_sha256, provenance
from softeval.settings import GenerateSettings, LoglikSettings


@dataclass(frozen=True)
class PromptedTest:
    """A task's test examples and one method's prompts for them."""

    task: Task
    test: list[dict[str, Any]]
    prompts: MethodPrompts


def method_unit(
    task: Task, data_dir: Path | str, method: str, few_shot_k: int, seed: int, chat: ChatWrap | None = None
) -> PromptedTest:
    test = [dict(row) for row in load_split(data_dir, "test")]
    shots = None
    if method == FEW_SHOT:
        shots = question_shots(task, [dict(row) for row in load_split(data_dir, "few_shot")], test, few_shot_k, seed)
    return PromptedTest(task, test, build_prompts(task, method, test, chat=chat, per_question=shots))


def embedding_width(model: Any) -> int | None:
    """The width a soft prompt must have for this model (None for an engine that hides its embeddings)."""
    embeddings = getattr(model, "get_input_embeddings", None)
    return int(embeddings().weight.shape[1]) if callable(embeddings) else None


Item = tuple[dict[str, Any], str]  # a test example and its prompt
ChunkRows = Iterator[tuple[int, list[dict[str, Any]]]]  # (index of a chunk, its rows), as each is complete
# make_rows(model, tokenizer, unit, chunks of items, vectors, step): every chunk's rows, streamed
RowMaker = Callable[[Any, Any, PromptedTest, list[list[Item]], Any, "int | None"], ChunkRows]


def one_chunk_at_a_time(
    rows: Callable[[Any, Any, PromptedTest, list[Item], Any, int | None], list[dict[str, Any]]],
) -> RowMaker:
    """A RowMaker from a function of one chunk (option scoring: its batches do not depend on
    another chunk's rows, so there is nothing to keep in flight)."""

    def make_rows(
        model: Any, tokenizer: Any, unit: PromptedTest, chunks: list[list[Item]], vectors: Any, step: Any
    ) -> ChunkRows:
        for k, chunk in enumerate(chunks):
            yield k, rows(model, tokenizer, unit, chunk, vectors, step)

    return make_rows


Loader = Callable[[str, ModelOptions, int], tuple[Any, Any, "ChatWrap | None"]]


@dataclass(frozen=True)
class LoadedModel:
    """A model loaded once for every output of a job, with what its provenance names it by."""

    model: Any
    tokenizer: Any
    chat: ChatWrap | None
    identity: dict[str, Any]


def open_model(ref: str, options: ModelOptions | None, threads: int, loader: Loader = load_with_chat) -> LoadedModel:
    """`loader` gives (model, tokenizer, chat template): a generation backend's `load` (an engine for vLLM)."""
    options = options or ModelOptions()
    model, tokenizer, chat = loader(ref, options, threads)
    return LoadedModel(model, tokenizer, chat, model_identity(ref, model, options))


def forget_provenance(outs: Iterable[Path]) -> None:
    """A provenance file describes an output that exists, so none is left beside a failed job's
    outputs (Snakemake removes those, not these): a job removes all of its old ones first and
    writes the new ones (`write_provenance`) once every output exists."""
    for out in outs:
        meta_path(out).unlink(missing_ok=True)


def write_provenance(metas: dict[Path, dict[str, Any]]) -> None:
    for out, meta in metas.items():
        atomic_write_json(meta_path(out), meta)


def write_method_outputs(
    *,
    job: str,
    loaded: LoadedModel,
    task: Task,
    data_dir: Path,
    method: str,
    prompt_files: dict[int, Path],
    outs: dict[int | None, Path],
    settings: GenerateSettings | LoglikSettings,
    make_rows: RowMaker,
) -> dict[Path, dict[str, Any]]:
    """Write each output of one method (one per soft-prompt step) in resumable chunks; returns
    each output's provenance, for the job to write when all its outputs exist.

    make_rows(model, tokenizer, unit, chunks of (example, prompt), vectors, step) streams the
    chunks' rows (RowMaker); each chunk is saved as soon as it is complete.
    """
    model, tokenizer = loaded.model, loaded.tokenizer
    unit = method_unit(task, data_dir, method, settings.few_shot_k, settings.seed, loaded.chat)
    items = list(zip(unit.test, unit.prompts.prompts, strict=True))
    metas = {}
    for step, out in outs.items():
        vectors, prompt_meta = (
            load_prompt(prompt_files[step], embedding_width(model)) if step is not None else (None, {})
        )
        fingerprint = {
            **loaded.identity,
            "job": job,
            "task": task.name,
            "task_version": task.version,
            "method": method,
            "step": step,
            "soft_prompt": prompt_meta.get("params_hash"),
            "settings": settings.to_json(),
            "shots": unit.prompts.shot_ids,
        }
        start = time.perf_counter()
        label = f"{job} {task.name} {method}" + (f" step {step}" if step is not None else "")
        with tqdm(total=len(items), desc=label, unit="ex", mininterval=5) as bar:
            reused = [0]

            def resume(n: int, bar: tqdm = bar, reused: list[int] = reused) -> None:
                reused[0] = n
                bar.update(n)

            def advance(n: int, bar: tqdm = bar, start: float = start, reused: list[int] = reused) -> None:
                bar.update(n)
                bar.set_postfix(ex_per_s=f"{(bar.n - reused[0]) / (time.perf_counter() - start):.1f}")

            def produce(chunks: list[list[Item]], vectors: Any = vectors, step: Any = step) -> ChunkRows:
                return make_rows(model, tokenizer, unit, chunks, vectors, step)

            write_streamed(out, items, produce, fingerprint, settings.chunk_size, on_chunk=advance, on_reused=resume)
        cut = sum('"prompt_truncated"' in line for line in Path(out).read_text(encoding="utf-8").splitlines())
        if cut:  # softeval.engine.context: kept the end of each over-long prompt
            print(
                f"warning: {out}: {cut} of {len(items)} prompts were longer than the model's context and lost their "
                "first tokens (their rows have prompt_truncated)",
                file=sys.stderr,
            )
        loaded_prompt = (
            {"soft_prompt_file": {"path": str(prompt_files[step]), "sha256": file_sha256(prompt_files[step])}}
            if step is not None
            else {}
        )
        extra = {**loaded_prompt, **({"truncated_prompts": cut} if cut else {})}
        metas[Path(out)] = provenance(fingerprint, seed=settings.seed, **extra)
    return metas


def run_method_job(
    *,
    job: str,
    model: str,
    model_options: ModelOptions | None = None,
    threads: int,
    outs: dict[int | None, Path],
    loader: Loader = load_with_chat,
    **method: Any,
) -> None:
    """One method's outputs with a model of their own (run_generate, run_loglik: one method alone)."""
    loaded = open_model(model, model_options, threads, loader)
    forget_provenance(outs.values())
    write_provenance(write_method_outputs(job=job, loaded=loaded, outs=outs, **method))
