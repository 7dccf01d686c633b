"""The run plan: everything a validated config asks the workflow to build, computed once in Python.

The Snakefile's rules ask the plan (through one-line input functions in rules/common.smk) for
their inputs, parameters and targets; nothing about *what* to run is decided in Snakemake code,
so the plan is unit-tested, linted and under the layer test like the rest of the package.

It owns: the tasks (each file loaded once), the models, their kinds and roles (every model has a
base role; the post-trained one only where the entry has a twin: `roles`), the evaluated units,
the soft prompt's evaluated steps (`steps`, one name, computed in `soft_prompt_steps`), every
job's settings as the JSON its job parses, the per-example files `all` asks for, and each
rule's benchmark file (one pattern: results/benchmarks/<rule>/<wildcard values>.tsv).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from softeval.config import model_entry, model_options, random_spec, task_dir, workdir_relative
from softeval.data.tasks import Task, load_task_file
from softeval.engine.gguf import locate_gguf
from softeval.judges.factory import JUDGES
from softeval.judges.validation import load_validation
from softeval.layout import (
    GENERATIONS,
    LM_EVAL,
    LOGLIK,
    RESULTS,
    SCORES,
    results_file_name,
    snapshot_name,
    softprompt_file,
    unit_file,
    unit_name,
)
from softeval.model_kinds import ROLES as ROLES  # the rules' role names, from here as before
from softeval.model_kinds import ModelKind, kind_of, roles_of
from softeval.schema import InputError

SOFT_PROMPT = "soft_prompt"
SPLITS = ("train", "test", "few_shot")
PUBLICATION_TABLES = ("leaderboard", "swap_distance", "score_gap", "knowledge_format", "consensus", "unit_checks")
FIGURES = ("tuning_curve", "method_scores", "swap_distance", "score_gap")


@dataclass(frozen=True)
class RuleShape:
    """What the plan knows of a rule: its wildcards, in path order (its benchmark file is
    results/benchmarks/<rule>/<values>.tsv), and the rules whose jobs its jobs may wait on (the
    timings' critical path; a test checks them against Snakemake's rule graph)."""

    wildcards: tuple[str, ...]
    upstream: tuple[str, ...]


RULES: dict[str, RuleShape] = {
    "build_world": RuleShape((), ()),
    "prepare_task": RuleShape(("task",), ("build_world",)),
    "train_tokenizer": RuleShape((), ("build_world",)),
    "pretrain": RuleShape(("model",), ("train_tokenizer",)),
    "posttrain": RuleShape(("model",), ("pretrain", "prepare_task")),
    "probe_zoo_model": RuleShape(("model",), ("pretrain", "posttrain", "prepare_task")),
    "zoo_report": RuleShape((), ("probe_zoo_model",)),
    "random_tokenizer": RuleShape(("vocab",), ("prepare_task",)),
    "random_model": RuleShape(("model", "role"), ("random_tokenizer",)),
    "convert_gguf": RuleShape(("model",), ()),
    "tune": RuleShape(("model", "role"), ("pretrain", "posttrain", "random_model", "convert_gguf", "prepare_task")),
    "evaluate": RuleShape(("model", "role"), ("pretrain", "posttrain", "random_model", "convert_gguf", "prepare_task")),
    "evaluate_soft_prompt": RuleShape(("model", "role"), ("tune",)),
    "judge": RuleShape(("model", "role", "task"), ("evaluate", "evaluate_soft_prompt", "prepare_task")),
    "aggregate": RuleShape((), ("judge", "prepare_task")),
    "tables": RuleShape((), ("aggregate", "zoo_report", "judge", "evaluate_soft_prompt")),
    "figures": RuleShape((), ("tables",)),
    "claims": RuleShape((), ("tables", "judge", "evaluate_soft_prompt")),
    "judge_validation": RuleShape((), ()),
    "export_lm_eval": RuleShape((), ("aggregate", "prepare_task")),
}

# The rules whose jobs load a model under evaluation (rules/tune.smk, rules/evaluate.smk): what
# evaluation.resources sizes, a GPU each on a cluster, and what plan-cost prices.
MODEL_JOB_RULES = ("tune", "evaluate", "evaluate_soft_prompt")


def soft_prompt_steps(tune: dict[str, Any]) -> list[int]:
    """The steps whose soft prompts are evaluated (evaluation.tune): the snapshots and the final step."""
    return sorted({*tune["snapshots"], tune["steps"]})


def benchmark_pattern(rule: str) -> str:
    """results/benchmarks/<rule>/{w1}/{w2}.tsv: the one pattern of every rule's benchmark file."""
    return os.path.join(RESULTS, "benchmarks", rule, *(f"{{{w}}}" for w in RULES[rule].wildcards)) + ".tsv"


def dumps(settings: dict[str, Any]) -> str:
    """A job's settings as its command line gets them (sorted keys: a changed value reruns the job)."""
    return json.dumps(settings, sort_keys=True)


@dataclass
class Plan:
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
    def from_config(cls, config: dict[str, Any], root: Path | str, workdir: Path | str | None = None) -> Plan:
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
        return [m for m in self.models if "post" in self.roles(m)]

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

    # ---- task files ----------------------------------------------------------------------------
    def task_file(self, task: str) -> str:
        return self.task_paths[task]

    def task_includes(self, *tasks: str) -> list[str]:
        """The shared blocks these tasks' files include: editing one reruns every job reading them."""
        return sorted({str(path) for task in tasks for path in self.tasks[task].includes})

    def world_task_files(self) -> list[str]:
        return [self.task_paths[t] for t in self.world_tasks]

    def split_files(self, split: str, tasks: list[str] | None = None) -> list[str]:
        return [f"{RESULTS}/data/{t}/{split}.jsonl" for t in (self.world_tasks if tasks is None else tasks)]

    # ---- data preparation --------------------------------------------------------------------
    @property
    def mirror(self) -> str | None:
        given = self.config["data"].get("mirror")
        return self.portable(self.root / given) if given else None  # an absolute mirror stays as it is

    def prepare_inputs(self, task: str) -> dict[str, Any]:
        """A world task needs the world; a local task its files; a real task read from a mirror its files."""
        inputs: dict[str, Any] = {"task": self.task_file(task), "task_includes": self.task_includes(task)}
        source = self.source(task)
        if source == "world":
            inputs["world"] = f"{RESULTS}/world/world.json"
        elif source == "local":
            inputs["files"] = [self.portable(f) for f in self.tasks[task].dataset["files"].values()]
        elif self.config["data"]["source"] == "mirror" and self.mirror:
            folder = Path(self.mirror) / task
            inputs["mirror"] = sorted(str(p) for p in folder.glob("*") if p.suffix in (".parquet", ".jsonl"))
        return inputs

    def prepare_arguments(self, task: str, world: str | None) -> list[str]:
        """Where the rows come from, and the pilot run's test limit (with the seed that samples it)."""
        limit = self.evaluation["test_limit_per_task"].get(task, self.evaluation["test_limit"])
        args = ["--test-limit", str(limit), "--seed", str(self.config["seed"])] if limit else []
        source = self.source(task)
        if source == "world":
            args += ["--world", str(world)]
        elif source != "local":
            args += ["--source", self.config["data"]["source"]]
            if self.config["data"]["source"] == "mirror":
                args += ["--mirror", str(self.mirror)]
        return args

    # ---- models --------------------------------------------------------------------------------
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

    def model_options(self, model: str, role: str) -> str:
        return dumps(model_options(self.entry(model), role))

    def chat_template(self, model: str, role: str) -> bool:
        return bool(model_options(self.entry(model), role)["chat_template"])

    def random_settings(self, model: str) -> dict[str, Any]:
        return random_spec(self.entry(model))

    def random_vocabularies(self) -> list[int]:
        return sorted({self.random_settings(m)["vocab_size"] for m in self.models_of_kind("random")})

    def resource(self, model: str, key: str) -> Any:
        """A model job's resource: evaluation.resources, overridden by the entry's resources; a kind
        with small CPU jobs (the zoo) asks for no GPU, 2 GB and 30 minutes."""
        resources = self.evaluation["resources"]
        if self.kinds[model].small_cpu_jobs:
            return {**resources, "gpu": 0, "mem_mb": 2000, "runtime": 30, "cpus": self.evaluation["threads"]}[key]
        return {**resources, **self.entry(model).get("resources", {})}[key]

    @property
    def model_resource_keys(self) -> list[str]:
        """What every model job asks the scheduler for; gpu_model only where a site names one."""
        return ["gpu", "mem_mb", "runtime"] + (["gpu_model"] if "gpu_model" in self.evaluation["resources"] else [])

    # ---- job settings (the JSON each job parses) ----------------------------------------------
    def world_settings(self) -> str:
        return dumps({**self.config["world"], "seed": self.config["seed"]})

    def zoo_settings(self, section: str) -> str:
        """tokenizer or probe: a zoo section as it is."""
        return dumps(self.config["zoo"][section])

    def pretrain_settings(self, model: str) -> str:
        """Everything that determines a base model's weights."""
        zoo, recipe = self.config["zoo"], self.entry(model)["zoo"]
        return dumps(
            {
                "recipe": {k: recipe[k] for k in ("coverage", "format_exposure")},
                "corpus": zoo["corpus"],
                "size": zoo["sizes"][recipe["size"]],
                "pretrain": zoo["pretrain"],
                "seed": self.config["seed"],
                # the weights' bytes depend on it: changing it retrains the zoo (and so reruns its jobs)
                "cpu_kernels": self.config["cpu_kernels"],
            }
        )

    def posttrain_settings(self) -> str:
        return dumps({"posttrain": self.config["zoo"]["posttrain"], "seed": self.config["seed"]})

    def zoo_report_settings(self) -> str:
        return dumps({"models": [self.entry(m) for m in self.zoo_models]})

    def tune_settings(self) -> str:
        tune = {k: v for k, v in self.evaluation["tune"].items() if k != "snapshots"}
        return dumps({**tune, "snapshots": self.steps, "seed": self.config["seed"]})

    def generate_settings(self) -> str:
        return dumps(
            {"few_shot_k": self.evaluation["few_shot"]["k"], "seed": self.config["seed"], **self.evaluation["generate"]}
        )

    def loglik_settings(self) -> str:
        return dumps(
            {"few_shot_k": self.evaluation["few_shot"]["k"], "seed": self.config["seed"], **self.evaluation["loglik"]}
        )

    def judge_settings(self) -> str:
        return dumps(self.judge)

    def aggregate_settings(self) -> str:
        return json.dumps({"bootstrap": self.config["analysis"]["bootstrap"], "seed": self.config["seed"]})

    def analysis_settings(self) -> str:
        """What the tables, figures and claims are computed with."""
        analysis = self.config["analysis"]
        return dumps(
            {
                "steps": self.steps,
                "reference_method": analysis["reference_method"],
                "metric": analysis["metric"],
                "bootstrap": analysis["bootstrap"],
                "seed": self.config["seed"],
                "closed_tasks": self.closed_tasks,  # the figures draw closed and open tasks apart
            }
        )

    def export_settings(self) -> str:
        """softeval export --settings: the seed, the evaluation section and what each model role loaded."""
        loaded = {
            m: {r: {"ref": self.model_ref(m, r), **model_options(self.entry(m), r)} for r in self.roles(m)}
            for m in self.models
        }
        return dumps({"seed": self.config["seed"], "evaluation": self.evaluation, "loaded": loaded})

    def lm_eval_files(self) -> list[str]:
        """results/lm_eval/results_<model>.json (and .post.json): lm-evaluation-harness's layout."""
        return [f"{RESULTS}/{LM_EVAL}/{results_file_name(m, r)}" for m in self.models for r in self.roles(m)]

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

    # ---- files ----------------------------------------------------------------------------------
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
        files = [f"{RESULTS}/data/{task}/{split}.jsonl" for task in self.tasks for split in SPLITS]
        for model, role, task in self.unit_triples():
            files += self.unit_files(GENERATIONS, model, role, task)
            if task in self.closed_tasks:
                files += self.unit_files(LOGLIK, model, role, task)
            if self.tunes:
                names = ["prompt.safetensors", "curve.csv", *(snapshot_name(step) for step in self.steps)]
                files += [softprompt_file(name, model, role, task) for name in names]
        files += [f"{RESULTS}/probes/{model}/{role}.jsonl" for model in self.zoo_models for role in self.roles(model)]
        return files + self.all_scores()

    def base_choice_files(self) -> list[str]:
        """The option log-likelihoods of the base models' soft-prompt units on closed tasks: which
        option each test example chose (the claims check that choices did not collapse onto one)."""
        if not self.tunes:
            return []
        return [
            unit_file(LOGLIK, unit_name(SOFT_PROMPT, step), model, "base", task)
            for model in self.models
            for task in self.closed_tasks
            for step in self.steps
        ]

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
        tables = f"{RESULTS}/tables"
        files = [f"{RESULTS}/data/{task}/meta.json" for task in self.tasks]
        files += [f"{tables}/zoo.{ext}" for ext in ("csv", "md")] if self.zoo_models else []
        files += [f"{tables}/scores.csv", *self.per_example_files()]
        files += [f"{tables}/{name}.{ext}" for name in PUBLICATION_TABLES for ext in ("csv", "md", "tex")]
        files += [f"{RESULTS}/figures/{name}.{ext}" for name in FIGURES for ext in ("png", "pdf")]
        files += [f"{tables}/claims.{ext}" for ext in ("csv", "md", "tex")]
        files += [f"{tables}/judge_validation.{ext}" for ext in ("csv", "md", "tex", "json")]
        files += self.lm_eval_files()
        return files + [f"{tables}/timings.{ext}" for ext in ("csv", "md")]

    # ---- jobs and their benchmark files ---------------------------------------------------------
    def jobs(self) -> dict[str, list[dict[str, str]]]:
        """Each rule's jobs, as their wildcards (the same jobs `all` asks for, one each)."""
        once = [{}]
        zoo = self.zoo_models
        triples = [{"model": m, "role": r, "task": t} for m, r, t in self.unit_triples()]
        pairs = [{"model": m, "role": r} for m in self.models for r in self.roles(m)]
        randoms = self.models_of_kind("random")
        jobs: dict[str, list[dict[str, str]]] = {
            "build_world": once if self.world_tasks or zoo else [],
            "prepare_task": [{"task": t} for t in self.tasks],
            "train_tokenizer": once if zoo else [],
            "pretrain": [{"model": m} for m in zoo],
            "posttrain": [{"model": m} for m in zoo],
            "probe_zoo_model": [{"model": m} for m in zoo],
            "zoo_report": once if zoo else [],
            "random_tokenizer": [{"vocab": str(v)} for v in self.random_vocabularies()],
            "random_model": [{"model": m, "role": r} for m in randoms for r in self.roles(m)],
            "convert_gguf": [{"model": m} for m in self.models_of_kind("gguf")],
            "tune": pairs if self.tunes else [],
            "evaluate": pairs if self.plain_methods else [],
            "evaluate_soft_prompt": pairs if self.tunes else [],
            "judge": triples,
            "aggregate": once,
            "tables": once,
            "figures": once,
            "claims": once,
            "judge_validation": once,
            "export_lm_eval": once,
        }
        return jobs

    def benchmark_files(self) -> list[str]:
        """The benchmark file of every job this config runs."""
        return [benchmark_pattern(rule).format(**w) for rule, each in self.jobs().items() for w in each]

    @staticmethod
    def benchmark_patterns() -> dict[str, str]:
        return {rule: benchmark_pattern(rule) for rule in RULES}

    @staticmethod
    def upstream() -> dict[str, list[str]]:
        """Each rule's upstream rules, for the timings job."""
        return {rule: list(shape.upstream) for rule, shape in RULES.items()}
