"""What fits in a model's context: prompts longer than it are cut from the left.

A model sees at most `context_length` positions. A prompt that would not fit beside the soft
prompt and the tokens still to come (the generation budget, or the answer being scored) keeps
its last tokens, as lm-evaluation-harness does: the question and the "Answer:" cue sit at the
end, while an over-long instruction or shot is what goes. Every cut is counted in the row
(`prompt_truncated`, only present when something was cut) and in the job's log, so a result
built on cut prompts is never silent. Without this, one 100,000-character question asks for an
attention matrix of tens of gigabytes.
"""

from __future__ import annotations

from typing import Any

from softeval.schema import InputError

# Where Hugging Face configs keep the number of positions a model was trained on.
POSITION_KEYS = ("max_position_embeddings", "n_positions", "max_sequence_length", "seq_length")


def context_length(model: Any) -> int | None:
    """The model's number of positions (None when its config does not say), or the engine's
    `max_model_len` where an engine (vLLM) holds fewer."""
    config = getattr(model, "config", None)
    engine = getattr(model, "max_model_len", None)
    for key in POSITION_KEYS:
        value = getattr(config, key, None)
        if isinstance(value, int) and value > 0:
            return min(value, engine) if isinstance(engine, int) else value
    return engine if isinstance(engine, int) else None


def prompt_limit(model: Any, soft_tokens: int, reserved: int) -> int | None:
    """Prompt tokens that fit: the context less the soft prompt and `reserved` later tokens."""
    positions = context_length(model)
    if positions is None:
        return None
    limit = positions - soft_tokens - reserved
    if limit < 1:
        raise InputError(
            f"the model's context ({positions} positions) leaves no room for a prompt after a {soft_tokens}-token "
            f"soft prompt and {reserved} new tokens; lower evaluation.generate.max_new_tokens (or the task's "
            "max_new_tokens) or evaluation.tune.n_tokens"
        )
    return limit


def keep_last(ids: list[int], limit: int | None) -> tuple[list[int], int]:
    """The last `limit` ids and how many were dropped from the front."""
    if limit is None or len(ids) <= limit:
        return ids, 0
    return ids[len(ids) - limit :], len(ids) - limit
