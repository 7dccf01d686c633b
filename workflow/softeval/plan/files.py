"""The plan's files: each rule's input and output lists, and the targets `all` builds.

Where a file lives is softeval.layout's; which files a config's jobs read and write is here:
the task files and their includes, a job's model files, the per-unit files of an evaluate or
judge job, every per-example file and tuned prompt, and the tables, figures and exports.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from softeval.data.tasks import load_task_file
from softeval.engine.gguf import locate_gguf
from softeval.judges.factory import JUDGES
from softeval.judges.validation import load_validation
from softeval.layout import (
    GENERATIONS,
    LOGLIK,
    SCORES,
    SPLITS,
    data_file,
    data_meta,
    figure_file,
    lm_eval_file,
    probe_file,
    snapshot_name,
    softprompt_file,
    table_file,
    unit_file,
    unit_name,
    world_file,
)
from softeval.names import BASE, SOFT_PROMPT
from softeval.plan.evaluated import Evaluated
from softeval.schema import InputError

PUBLICATION_TABLES = ("leaderboard", "swap_distance", "score_gap", "knowledge_format", "consensus", "unit_checks")
FIGURES = ("tuning_curve", "method_scores", "swap_distance", "score_gap")


class Files(Evaluated):
    """The plan's files: what each rule reads and writes, and what `all` asks for."""

    # ---- task files ----------------------------------------------------------------------------
    def task_file(self, task: str) -> str:
        return self.task_paths[task]

    def task_includes(self, *tasks: str) -> list[str]:
        """The shared blocks these tasks' files include: editing one reruns every job reading them."""
        return sorted({str(path) for task in tasks for path in self.tasks[task].includes})

    def world_task_files(self) -> list[str]:
        return [self.task_paths[t] for t in self.world_tasks]

    def split_files(self, split: str, tasks: list[str] | None = None) -> list[str]:
        return [data_file(split, t) for t in (self.world_tasks if tasks is None else tasks)]

    def prepare_inputs(self, task: str) -> dict[str, Any]:
        """A world task needs the world; a local task its files; a real task read from a mirror its files."""
        inputs: dict[str, Any] = {"task": self.task_file(task), "task_includes": self.task_includes(task)}
        source = self.source(task)
        if source == "world":
            inputs["world"] = world_file()
        elif source == "local":
            inputs["files"] = [self.portable(f) for f in self.tasks[task].dataset["files"].values()]
        elif self.config["data"]["source"] == "mirror" and self.mirror:
            folder = Path(self.mirror) / task
            inputs["mirror"] = sorted(str(p) for p in folder.glob("*") if p.suffix in (".parquet", ".jsonl"))
        return inputs

    # ---- models --------------------------------------------------------------------------------
    def model_inputs(self, model: str, role: str) -> dict[str, Any]:
        """What a job's model is made of, as inputs whose changes rerun the job: a directory the
        workflow builds; each file of a local checkpoint directory (new weights written into it
        change no directory time stamp); nothing for a hub id, which the job resolves to a commit."""
        ref = self.model_ref(model, role)
        if self.kinds[model].built_locally:
            return {"model": ref}
        if os.path.isdir(ref):
            return {"model": sorted(str(p) for p in Path(ref).iterdir() if p.is_file() and not p.name.startswith("."))}
        return {}

    def gguf_file(self, model: str) -> str:
        """A GGUF model's file (a path, or inside an installed package)."""
        return self.portable(locate_gguf(self.entry(model)["gguf"], self.root))

    def lm_eval_files(self) -> list[str]:
        """results/lm_eval/results_<model>.json (and .post.json): lm-evaluation-harness's layout."""
        return [lm_eval_file(m, r) for m in self.models for r in self.roles(m)]

    # ---- the judge ------------------------------------------------------------------------------
    def judge_model_inputs(self) -> dict[str, str]:
        """An LLM judge's model directory and prompt file: changing either reruns the judging."""
        return {key: self.judge[name] for key, name in JUDGES.get(self.judge["name"]).workflow_inputs.items()}

    def judge_inputs(self, model: str, role: str, task: str) -> dict[str, Any]:
        """A judge job's inputs: the unit's generations (and option scores on a closed task), the judge's files."""
        inputs: dict[str, Any] = {"generations": self.unit_files(GENERATIONS, model, role, task)}
        inputs.update(self.judge_model_inputs())
        if task in self.closed_tasks:
            inputs["logliks"] = self.unit_files(LOGLIK, model, role, task)
        return inputs

    @property
    def validation_set(self) -> str:
        return self.portable(self.root / "config" / "judges" / "validation.jsonl")

    def validation_task_files(self) -> list[str]:
        """The hand-labelled set's task files (the judge is validated on them whatever is evaluated)."""
        folder = self.root / "config" / "tasks"
        names = sorted({row["task"] for row in load_validation(Path(self.validation_set))})
        tasks = [load_task_file(folder / f"{name}.yaml") for name in names]
        files = [self.portable(folder / f"{name}.yaml") for name in names]
        return files + sorted({self.portable(path) for task in tasks for path in task.includes})

    # ---- per-unit files -------------------------------------------------------------------------
    def evaluation_files(self, kind: str, units: list[str], model: str = "{model}", role: str = "{role}") -> list[str]:
        """An evaluate job's files of one kind (GENERATIONS, or LOGLIK for the closed tasks only),
        task by task in the plan's order, each task's units in order: what the job's flags list."""
        tasks = self.closed_tasks if kind == LOGLIK else self.task_names
        return [unit_file(kind, unit, model, role, task) for task in tasks for unit in units]

    def unit_files(self, kind: str, model: str, role: str, task: str) -> list[str]:
        return [unit_file(kind, unit, model, role, task) for unit in self.units]

    def all_scores(self) -> list[str]:
        return [f for model, role, task in self.unit_triples() for f in self.unit_files(SCORES, model, role, task)]

    def per_example_files(self) -> list[str]:
        """Every file with one row per example (splits, generations, option scores, verdicts, the
        zoo's probes) and every tuned prompt. `all` asks for each by name: Snakemake does not rebuild
        a missing intermediate file while what was made from it is up to date, so a file deleted by
        a killed forced rerun would otherwise stay missing for good."""
        files = [data_file(split, task) for task in self.tasks for split in SPLITS]
        for model, role, task in self.unit_triples():
            files += self.unit_files(GENERATIONS, model, role, task)
            if task in self.closed_tasks:
                files += self.unit_files(LOGLIK, model, role, task)
            if self.tunes:
                names = ["prompt.safetensors", "curve.csv", *(snapshot_name(step) for step in self.steps)]
                files += [softprompt_file(name, model, role, task) for name in names]
        files += [probe_file("jsonl", model, role) for model in self.zoo_models for role in self.roles(model)]
        return files + self.all_scores()

    def base_choice_files(self) -> list[str]:
        """The option log-likelihoods of the base models' soft-prompt units on closed tasks: which
        option each test example chose (the claims check that choices did not collapse onto one)."""
        if not self.tunes:
            return []
        return [
            unit_file(LOGLIK, unit_name(SOFT_PROMPT, step), model, BASE, task)
            for model in self.models
            for task in self.closed_tasks
            for step in self.steps
        ]

    # ---- what is published ----------------------------------------------------------------------
    def published_record(self) -> list[str] | str:
        """The published record whose verdict stability claims.md quotes ([] when none is set);
        a relative path is relative to the repository root, as task_dir is."""
        name = self.config["analysis"].get("published")
        if not name:
            return []
        path = Path(name) if os.path.isabs(name) else self.root / name
        if not path.is_file():
            raise InputError(
                f"config analysis.published: {path} not found; "
                "give a record that `python -m softeval publish-ranges` writes, or null"
            )
        return self.portable(path)

    def targets(self) -> list[str]:
        """What `all` builds: every table, figure and per-example file of the run."""
        files = [data_meta(task) for task in self.tasks]
        files += [table_file("zoo", ext) for ext in ("csv", "md")] if self.zoo_models else []
        files += [table_file("scores", "csv"), *self.per_example_files()]
        files += [table_file(name, ext) for name in PUBLICATION_TABLES for ext in ("csv", "md", "tex")]
        files += [figure_file(name, ext) for name in FIGURES for ext in ("png", "pdf")]
        files += [table_file("claims", ext) for ext in ("csv", "md", "tex")]
        files += [table_file("calibration", ext) for ext in ("csv", "md")]
        files += [table_file("judge_validation", ext) for ext in ("csv", "md", "tex", "json")]
        files += self.lm_eval_files()
        return files + [table_file("timings", ext) for ext in ("csv", "md")]
