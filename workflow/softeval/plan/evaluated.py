"""What a config evaluates: the plan's state, read once, and what follows from it.

The tasks (each file loaded once), the models, their kinds and roles (every model has a base
role; the post-trained one only where the entry has a twin: `roles`), the methods, the evaluated
units, and the soft prompt's evaluated steps (`steps`, one name, computed in `soft_prompt_steps`).
The other concerns of the plan (softeval.plan.settings, .files, .rules) build on this class.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Self

from softeval.config import model_entry, random_spec, task_dir, workdir_relative
from softeval.data.tasks import Task, load_task_file
from softeval.layout import unit_name
from softeval.model_kinds import ModelKind, kind_of, roles_of
from softeval.names import POST, SOFT_PROMPT
from softeval.schema import InputError


def soft_prompt_steps(tune: dict[str, Any]) -> list[int]:
    """The steps whose soft prompts are evaluated (evaluation.tune): the snapshots and the final step."""
    return sorted({*tune["snapshots"], tune["steps"]})


@dataclass
class Evaluated:
    """What to run for one config; paths are relative to the working directory where they lie in it."""

    config: dict[str, Any]
    root: Path
    workdir: Path
    tasks: dict[str, Task] = field(init=False)
    task_paths: dict[str, str] = field(init=False)
    kinds: dict[str, ModelKind] = field(init=False)
    model_roles: dict[str, tuple[str, ...]] = field(init=False)
    steps: list[int] = field(init=False)
    judge: dict[str, Any] = field(init=False)

    @classmethod
    def from_config(cls, config: dict[str, Any], root: Path | str, workdir: Path | str | None = None) -> Self:
        """The plan of a config that softeval.config.check_config has validated and filled."""
        return cls(config, Path(root), Path(workdir) if workdir is not None else Path.cwd())

    def __post_init__(self) -> None:
        folder = Path(self.portable(task_dir(self.config, self.root)))
        self.task_paths = {name: str(folder / f"{name}.yaml") for name in self.config["tasks"]}
        self.tasks = {name: load_task_file(path) for name, path in self.task_paths.items()}
        self.kinds = {m["name"]: kind_of(m) for m in self.config["models"]}
        self.model_roles = {m["name"]: roles_of(m) for m in self.config["models"]}
        self.steps = soft_prompt_steps(self.evaluation["tune"])
        # judge prompts ship with the workflow: a path relative to its root
        self.judge = {
            **self.evaluation["judge"],
            "prompts": self.portable(self.root / self.evaluation["judge"]["prompts"]),
        }

    def portable(self, path: Path | str) -> str:
        """Inside the working directory, relative to it (a moved checkout reruns nothing)."""
        return workdir_relative(path, self.workdir)

    # ---- what is evaluated -----------------------------------------------------------------
    @property
    def evaluation(self) -> dict[str, Any]:
        return self.config["evaluation"]

    @property
    def task_names(self) -> list[str]:
        return list(self.tasks)

    @property
    def models(self) -> list[str]:
        return list(self.kinds)

    def roles(self, model: str) -> tuple[str, ...]:
        """The roles this model is evaluated in: ("base", "post"), or ("base",) for a model without
        a post-trained twin (softeval.model_kinds.roles_of). Nothing is planned for a role it lacks."""
        return self.model_roles[model]

    @property
    def post_models(self) -> list[str]:
        """The models with a post-trained twin: what the base-vs-post comparisons are computed over."""
        return [m for m in self.models if POST in self.roles(m)]

    def base_only_note(self) -> str | None:
        """What the run does with models that have no post-trained twin, for the planning note
        (None where every model has one, or where there is one model and so no ranking anyway)."""
        base_only = [m for m in self.models if m not in self.post_models]
        if not base_only or len(self.models) < 2:
            return None
        twins = ", ".join(self.post_models)
        gaps = (
            f"score gaps and claim 5 are computed over {twins}" if twins else "score gaps and claim 5: not applicable"
        )
        ranks = (
            f"swap distances and claims 3 and 4 rank {twins}"
            if len(self.post_models) >= 2
            else "swap distances and claims 3 and 4 need two models with a twin: not applicable"
        )
        return (
            f"base only, no post-trained twin: {', '.join(base_only)} (their base role is evaluated as every "
            f"model's is); {gaps}; {ranks}"
        )

    def models_of_kind(self, kind: str) -> list[str]:
        return [name for name, k in self.kinds.items() if k.name == kind]

    @property
    def zoo_models(self) -> list[str]:
        return self.models_of_kind("zoo")

    @property
    def has_truth(self) -> bool:
        """The zoo's ground truth (what each model was taught) exists only when every model is a zoo model."""
        return bool(self.models) and self.zoo_models == self.models

    def source(self, task: str) -> str:
        return self.tasks[task].dataset["source"]

    @property
    def world_tasks(self) -> list[str]:
        return [t for t in self.tasks if self.source(t) == "world"]

    @property
    def closed_tasks(self) -> list[str]:
        return [t for t, task in self.tasks.items() if task.closed]

    @property
    def open_tasks(self) -> list[str]:
        return [t for t, task in self.tasks.items() if not task.closed]

    @property
    def methods(self) -> list[str]:
        return list(self.evaluation["methods"])

    @property
    def plain_methods(self) -> list[str]:
        return [m for m in self.methods if m != SOFT_PROMPT]

    @property
    def tunes(self) -> bool:
        return SOFT_PROMPT in self.methods

    @property
    def plain_units(self) -> list[str]:
        return [unit_name(m, None) for m in self.plain_methods]

    @property
    def step_units(self) -> list[str]:
        return [unit_name(SOFT_PROMPT, step) for step in self.steps]

    @property
    def units(self) -> list[str]:
        """A (model, role, task)'s outputs: one file per plain method, one per soft-prompt step."""
        return self.plain_units + (self.step_units if self.tunes else [])

    def unit_triples(self) -> list[tuple[str, str, str]]:
        return [(model, role, task) for model in self.models for role in self.roles(model) for task in self.tasks]

    @property
    def mirror(self) -> str | None:
        """The folder a real task's rows are read from (data.source: mirror)."""
        given = self.config["data"].get("mirror")
        return self.portable(self.root / given) if given else None  # an absolute mirror stays as it is

    # ---- the models ----------------------------------------------------------------------------
    def entry(self, model: str) -> dict[str, Any]:
        return model_entry(self.config, model)

    def model_ref(self, model: str, role: str) -> str:
        """What a job loads: the directory the workflow builds, or the entry's id (hub id or directory)."""
        if role not in self.roles(model):
            raise InputError(
                f"model {model!r} has no {role} role (a base-only entry); its files are not part of the run, "
                f"or give the entry a {role} model"
            )
        kind = self.kinds[model]
        if kind.built_at is not None:
            return kind.built_at.format(model=model, role=role)
        return self.entry(model)[role]["id"]

    def random_settings(self, model: str) -> dict[str, Any]:
        return random_spec(self.entry(model))

    def random_vocabularies(self) -> list[int]:
        return sorted({self.random_settings(m)["vocab_size"] for m in self.models_of_kind("random")})
