"""Greedy responses to a task's test split under one method: the rows the evaluate job writes
(generation_rows), and run_generate, one method's responses alone with a model of their own."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from softeval.data.splits import load_split
from softeval.data.tasks import OPTIONS_MAX, TRAIN_MAX, Task
from softeval.engine.backends import backend_for
from softeval.engine.generate import Generation, Until
from softeval.engine.methods import ChatWrap, response_target
from softeval.jobs.common import ChunkRows, PromptedTest, RowMaker, run_method_job
from softeval.settings import GenerateSettings


def generation_budget(task: Task, tokenizer: Any, data_dir: Path, chat: ChatWrap | None, default: int) -> int:
    """New tokens a response may take: the task's number, the config's default, or the longest
    target in this tokenizer's tokens plus 10 %: of the train split (train_max: worked solutions
    fit) or of every option of the test split (options_max: a long option can be answered whole)."""
    if task.max_new_tokens == TRAIN_MAX:
        texts = [task.target(dict(row)) for row in load_split(data_dir, "train")]
    elif task.max_new_tokens == OPTIONS_MAX:
        rows = [dict(row) for row in load_split(data_dir, "test")]
        texts = [task.option_target(row, k) for row in rows for k in range(len(row["options"]))]
    else:
        return int(task.max_new_tokens or default)
    targets = [response_target(text, chat) for text in texts]
    longest = max(len(ids) for ids in tokenizer(targets, add_special_tokens=False)["input_ids"])
    return math.ceil(longest * 1.1)


def harness_reading(task: Task) -> Until | None:
    """lm-evaluation-harness's end of the same greedy continuation (its stop strings and token
    budget), for tasks whose lm_eval columns score a response; None for the others."""
    spec = task.harness_generation
    return Until(spec.until, spec.max_gen_toks) if spec is not None else None


def generation_rows(settings: GenerateSettings, data_dir: Path) -> RowMaker:
    """Greedy responses, one row each, from the backend the settings name, streamed chunk by chunk."""
    backend = backend_for(settings)
    resolved: dict[str, int] = {}  # each task's one budget, resolved on its first chunk (it needs the tokenizer)

    def budget(tokenizer: Any, unit: PromptedTest) -> int:
        if unit.task.name not in resolved:
            chat = unit.prompts.chat
            resolved[unit.task.name] = generation_budget(unit.task, tokenizer, data_dir, chat, settings.max_new_tokens)
        return resolved[unit.task.name]

    def row(step: int | None, unit: PromptedTest, item: tuple[dict[str, Any], str], g: Generation) -> dict[str, Any]:
        (example, prompt) = item
        return {
            "id": example["id"],
            "method": unit.prompts.method,
            "step": step,
            "prompt": prompt,
            "response": g.text,
            "stop_reason": g.stop_reason,
            "prompt_tokens": g.prompt_tokens,
            "new_tokens": g.new_tokens,
            **({"prompt_truncated": g.truncated} if g.truncated else {}),
            **({"harness_response": g.also_text} if g.also_text is not None else {}),
        }

    def rows(model: Any, tokenizer: Any, unit: PromptedTest, chunks: list, vectors: Any, step: int | None) -> ChunkRows:
        """Every chunk's prompts in flight at once; each chunk's rows as soon as its last row ends."""
        items = [item for chunk in chunks for item in chunk]
        owner = [k for k, chunk in enumerate(chunks) for _ in chunk]
        first = [sum(len(chunk) for chunk in chunks[:k]) for k in range(len(chunks))]
        ended: dict[int, Generation] = {}
        left = [len(chunk) for chunk in chunks]
        stream = backend.stream(
            model,
            tokenizer,
            [prompt for _, prompt in items],
            vectors=vectors,
            stops=unit.task.stop,
            max_new_tokens=budget(tokenizer, unit),
            shared_prefix=unit.prompts.shared_prefix,
            stop_ids=unit.prompts.chat.end_of_turn if unit.prompts.chat else (),
            also=harness_reading(unit.task),
        )
        for index, generation in stream:
            ended[index] = generation
            k = owner[index]
            left[k] -= 1
            if left[k] == 0:
                span = range(first[k], first[k] + len(chunks[k]))
                yield k, [row(step, unit, items[i], ended.pop(i)) for i in span]

    return rows


def run_generate(*, settings: GenerateSettings, data_dir: Path, **job: Any) -> None:
    """Responses for every output of the job (one per soft-prompt step, else one)."""
    run_method_job(
        job="generate",
        settings=settings,
        data_dir=data_dir,
        make_rows=generation_rows(settings, data_dir),
        loader=backend_for(settings).load,
        **job,
    )
