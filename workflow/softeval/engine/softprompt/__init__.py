"""Soft-prompt tuning: N trainable vectors placed right before the query, a frozen model.

The vectors sit after any left padding, so every row sees exactly [soft prompt, query]
whatever its length; positions follow the attention mask. The loss covers the answer
tokens only, and the vocabulary projection is applied at those positions alone: with
150k-token vocabularies, full-sequence logits would be most of the cost of a step.

Every score softeval computes from logits (option log-likelihoods, the tuning loss, the hf
judge) goes through `kept_logits`: the model's own forward, with its output-embedding module
replaced for that one call by an fp32 projection of the kept positions only (`projection` says
why).

One module per concern, their names re-exported here: `projection` (`kept_logits`, the fp32
projection), `scoring` (where the vectors sit, the answer tokens' log-probabilities), `training`
(`tune`: initial vectors, schedule, loss, out-of-memory backoff), `files` (`save_prompt`,
`load_prompt`) and `peft_adapter` (`export_peft`, `import_peft`).
"""

from __future__ import annotations

from softeval.engine.softprompt.files import PROMPT_KEY, load_prompt, save_prompt
from softeval.engine.softprompt.peft_adapter import export_peft, import_peft
from softeval.engine.softprompt.projection import LOW_PRECISION, PROJECTION_CHUNK, kept_logits, project_rows
from softeval.engine.softprompt.scoring import answer_logprobs, insert_soft_prompt
from softeval.engine.softprompt.training import (
    TuneResult,
    answer_loss,
    backward_with_backoff,
    embedding_std,
    enable_checkpointing,
    freeze,
    initial_vectors,
    lr_factor,
    tune,
)
from softeval.settings import TuneSettings

__all__ = [
    "LOW_PRECISION",
    "PROJECTION_CHUNK",
    "PROMPT_KEY",
    "TuneResult",
    "TuneSettings",
    "answer_logprobs",
    "answer_loss",
    "backward_with_backoff",
    "embedding_std",
    "enable_checkpointing",
    "export_peft",
    "freeze",
    "import_peft",
    "initial_vectors",
    "insert_soft_prompt",
    "kept_logits",
    "load_prompt",
    "lr_factor",
    "project_rows",
    "save_prompt",
    "tune",
]
