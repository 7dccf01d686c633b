"""How a model entry is made, and what that means for its jobs: the registry of model kinds.

A kind is selected by the entry key it is named after (zoo:, random:, gguf:); an entry with none
of them is a checkpoint (a hub id or a directory per role). Everything the workflow does
differently per kind (where the model lives, whether it has a hub revision, whether its
post-trained role uses a chat template by default, whether its jobs are small CPU jobs, whether
an entry without `post:` has a post-trained role) is a field here, so the plan and the config
checks never branch on a kind's name.

Every model has a base role. The post-trained role is optional: `roles_of` says which roles an
entry has (a base-only model is evaluated, tuned and ranked as a base model; whatever compares
it with a post-trained twin reports "not applicable" for it).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from softeval.layout import gguf_model_dir, random_model_dir, zoo_model_dir
from softeval.names import POST, ROLES
from softeval.registry import Registry


@dataclass(frozen=True)
class ModelKind:
    name: str
    # where the workflow builds the model ({model}, {role}); None: the entry gives it per role (id)
    built_at: str | None
    # loaded at a hub revision (a checkpoint); built models have none
    hub_revision: bool
    # the post-trained role formats prompts with the tokenizer's chat template unless the entry says
    chat_template_default: bool
    # its tune and evaluate jobs are small CPU jobs whatever evaluation.resources asks for
    small_cpu_jobs: bool
    # an entry without a `post` key still has a post-trained role (one the workflow builds, or the
    # same file in a chat template); a checkpoint's post role is its `post` entry, so it has none
    post_by_default: bool = True

    @property
    def built_locally(self) -> bool:
        return self.built_at is not None


# Keyed by the model entry's key that selects the kind; "checkpoint" has no key and comes last.
MODEL_KINDS: Registry[ModelKind] = Registry("model kind", "models[].<kind>")
for _kind in (
    ModelKind("zoo", zoo_model_dir(), hub_revision=False, chat_template_default=False, small_cpu_jobs=True),
    ModelKind("random", random_model_dir(), hub_revision=False, chat_template_default=True, small_cpu_jobs=False),
    ModelKind("gguf", gguf_model_dir(), hub_revision=False, chat_template_default=True, small_cpu_jobs=False),
    ModelKind(
        "checkpoint", None, hub_revision=True, chat_template_default=True, small_cpu_jobs=False, post_by_default=False
    ),
):
    MODEL_KINDS.add(_kind.name, _kind)
FALLBACK = "checkpoint"


def kind_of(entry: dict[str, Any]) -> ModelKind:
    """The kind a model entry selects by its keys (the schema allows at most one)."""
    return MODEL_KINDS.get(next((name for name in MODEL_KINDS if name in entry), FALLBACK))


def selecting_keys() -> list[str]:
    """The entry keys that select a kind (every kind but the fallback)."""
    return [name for name in MODEL_KINDS if name != FALLBACK]


def roles_of(entry: dict[str, Any]) -> tuple[str, ...]:
    """The roles a model entry has: always base; post unless the entry says `post: false`, or
    (a checkpoint) gives no `post` at all. The schema keeps `post` off zoo entries: a zoo model's
    twin is always post-trained."""
    post = entry[POST] is not False if POST in entry else kind_of(entry).post_by_default
    return ROLES if post else ROLES[:1]
