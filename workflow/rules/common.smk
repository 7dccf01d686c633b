# Shared set-up: validate the config (one-line errors), load tasks, input functions.
import json
import os
import re
import shlex
import sys
from pathlib import Path

from snakemake.exceptions import WorkflowError
from snakemake.utils import validate

from softeval.cpu_kernels import pin as pin_cpu_kernels
from softeval.config import (
    check_config,
    model_entry,
    model_kind,
    model_options,
    random_spec,
    soft_prompt_steps,
    task_dir,
    workdir_relative,
)
from softeval.engine.gguf import locate_gguf
from softeval.judges.validation import load_validation
from softeval.data.tasks import load_task, task_includes
from softeval.layout import (
    GENERATIONS,
    LOGLIK,
    RESULTS,
    SCORES,
    snapshot_name,
    softprompt_file,
    unit_file,
    unit_name,
)
from softeval.schema import InputError

ROOT = Path(workflow.basedir)
# Jobs run `python -m softeval`; the prefix makes the package importable in any job
# environment (a conda env from envs/ included), whether or not it was pip-installed there.
# (Braces are doubled twice: once for this f-string, once for Snakemake's own formatting.)
shell.prefix(f"set -euo pipefail; export PYTHONPATH='{ROOT / 'workflow'}'${{{{PYTHONPATH:+:$PYTHONPATH}}}}; ")
# The files the config came from, for error lines: with --replace-workflow-config only those
# given on the command line (config/config.yaml is read, then discarded).
_settings = workflow.config_settings
_CONFIG_FILES = _settings.configfiles if _settings.replace_workflow_config else workflow.configfiles
CONFIG_SOURCE = ", ".join(str(f) for f in _CONFIG_FILES) or "config"


def portable(path):
    """Inside the working directory, relative to it (see softeval.config.workdir_relative)."""
    return workdir_relative(path, Path.cwd())


try:
    check_config(config, CONFIG_SOURCE, ROOT)
except InputError as err:
    raise WorkflowError(str(err)) from None
# The same schema through Snakemake's own validator (defaults are already filled in).
validate(config, "../schemas/config.schema.yaml", set_default=True)
# Every job inherits this process's environment (a cluster job re-reads this file first).
pin_cpu_kernels(config["cpu_kernels"])

TASKS = list(config["tasks"])
MODELS = [m["name"] for m in config["models"]]
ROLES = ["base", "post"]
TASK_DIR = portable(task_dir(config, ROOT))
ZOO = config["zoo"]
TASK_SOURCES = {task: load_task(TASK_DIR, task).dataset["source"] for task in TASKS}
WORLD_TASKS = [task for task in TASKS if TASK_SOURCES[task] == "world"]
KINDS = {m["name"]: model_kind(m) for m in config["models"]}
ZOO_MODELS = [name for name in MODELS if KINDS[name] == "zoo"]
if len(MODELS) < 2:
    print(
        f"warning: {CONFIG_SOURCE}: one model ({', '.join(MODELS)}): its scores are computed, but rankings need at least "
        "two models, so the swap distances compare nothing and claims 3 and 4 are reported as not applicable",
        file=sys.stderr,
    )
# The zoo's ground truth (what each model was taught) exists only when every model is a zoo model.
HAS_TRUTH = bool(MODELS) and ZOO_MODELS == MODELS
DATA = config["data"]
MIRROR = None
if DATA.get("mirror"):
    MIRROR = portable(ROOT / DATA["mirror"])  # an absolute mirror stays as it is


wildcard_constraints:
    model="[a-z0-9][a-z0-9_-]{0,63}",
    task="[a-z0-9][a-z0-9_-]{0,63}",
    role="base|post",
    vocab="[0-9]+",


def included_files(task_dir, task):
    """The shared blocks a task file includes (include: _name.yaml): inputs of its jobs, so that
    editing one reruns every task built on it."""
    return [str(path) for path in task_includes(task_dir, task)]


# Read once here, not once per planned job.
TASK_INCLUDES = {task: included_files(TASK_DIR, task) for task in TASKS}


def task_includes_of(wildcards):
    return TASK_INCLUDES[wildcards.task]


def task_files(wildcards=None):
    """The world tasks' files: what the zoo's corpus, tokenizer and probes are built from."""
    files = [f"{TASK_DIR}/{task}.yaml" for task in WORLD_TASKS]
    return files + sorted({path for task in WORLD_TASKS for path in TASK_INCLUDES[task]})


def task_dir_of(wildcards, input):
    """The folder of the task files among a job's inputs."""
    return os.path.dirname(input.tasks[0])


def data_root_of(wildcards, input):
    """results/data, as found among a job's inputs (results/data/<task>/<split>.jsonl)."""
    split = input.train if hasattr(input, "train") else input.test
    return os.path.dirname(os.path.dirname(split[0]))


def split_files(split):
    """A split of every world task (what the zoo post-trains and probes on)."""
    return expand("results/data/{task}/{split}.jsonl", task=WORLD_TASKS, split=split)


def prepare_inputs(wildcards):
    """A world task needs the world; a local task its files; a real task read from a local mirror its files."""
    inputs = {"task": f"{TASK_DIR}/{wildcards.task}.yaml", "task_includes": task_includes_of(wildcards)}
    if TASK_SOURCES.get(wildcards.task) == "world":
        inputs["world"] = "results/world/world.json"
    elif TASK_SOURCES.get(wildcards.task) == "local":
        inputs["files"] = [portable(f) for f in load_task(TASK_DIR, wildcards.task).dataset["files"].values()]
    elif DATA["source"] == "mirror" and MIRROR:
        folder = Path(MIRROR) / wildcards.task
        inputs["mirror"] = sorted(str(p) for p in folder.glob("*") if p.suffix in (".parquet", ".jsonl"))
    return inputs


def prepare_source_args(wildcards, input):
    """Where the rows come from, and the pilot run's test limit (with the seed that samples it)."""
    limit = EVAL["test_limit_per_task"].get(wildcards.task, EVAL["test_limit"])
    args = [f"--test-limit {limit} --seed {config['seed']}"] if limit else []
    if TASK_SOURCES.get(wildcards.task) == "world":
        args.append(f"--world {input.world}")
    elif TASK_SOURCES.get(wildcards.task) != "local":
        args.append(f"--source {DATA['source']}")
        if DATA["source"] == "mirror":
            args.append(f"--mirror {shlex.quote(MIRROR)}")
    return " ".join(args)


def pretrain_settings(wildcards):
    """Everything that determines a base model's weights, as one JSON object."""
    model = model_entry(config, wildcards.model)
    return json.dumps(
        {
            "recipe": {k: model["zoo"][k] for k in ("coverage", "format_exposure")},
            "corpus": ZOO["corpus"],
            "size": ZOO["sizes"][model["zoo"]["size"]],
            "pretrain": ZOO["pretrain"],
            "seed": config["seed"],
            # the weights' bytes depend on it: changing it retrains the zoo (and so reruns its jobs)
            "cpu_kernels": config["cpu_kernels"],
        },
        sort_keys=True,
    )


def posttrain_settings(wildcards):
    return json.dumps({"posttrain": ZOO["posttrain"], "seed": config["seed"]}, sort_keys=True)


# ---- evaluation ---------------------------------------------------------------------
EVAL = config["evaluation"]
# Judge prompts and the validation set ship with the workflow: paths relative to its root.
EVAL["judge"]["prompts"] = portable(ROOT / EVAL["judge"]["prompts"])
VALIDATION_SET = portable(ROOT / "config" / "judges" / "validation.jsonl")
# The hand-labelled set's tasks: the judge is validated on them whatever tasks are evaluated.
try:
    VALIDATION_TASKS = sorted({row["task"] for row in load_validation(VALIDATION_SET)})
except InputError as err:
    raise WorkflowError(str(err)) from None
VALIDATION_TASK_DIR = portable(ROOT / "config" / "tasks")
VALIDATION_TASK_FILES = [f"{VALIDATION_TASK_DIR}/{task}.yaml" for task in VALIDATION_TASKS] + sorted(
    {path for task in VALIDATION_TASKS for path in included_files(VALIDATION_TASK_DIR, task)}
)
STEPS = soft_prompt_steps(config)
METHODS = list(EVAL["methods"])
CLOSED_TASKS = [task for task in TASKS if load_task(TASK_DIR, task).closed]
# A unit's outputs: one file per plain method, one per soft-prompt step.
UNITS = [unit_name(m, None) for m in METHODS if m != "soft_prompt"] + (
    [unit_name("soft_prompt", step) for step in STEPS] if "soft_prompt" in METHODS else []
)


PLAIN_METHODS = [m for m in METHODS if m != "soft_prompt"]
PLAIN_UNITS = [unit_name(m, None) for m in PLAIN_METHODS]
STEP_UNITS = [unit_name("soft_prompt", step) for step in STEPS]
OPEN_TASKS = [task for task in TASKS if task not in CLOSED_TASKS]


def task_pattern(names):
    """A wildcard constraint matching exactly these task names (none: a pattern that never matches)."""
    return "|".join(re.escape(name) for name in names) or "(?!x)x"


# Closed tasks' evaluation jobs also write option log-likelihoods (rules evaluate*_closed).
OPEN_TASK_PATTERN, CLOSED_TASK_PATTERN = task_pattern(OPEN_TASKS), task_pattern(CLOSED_TASKS)


wildcard_constraints:
    method="zero_shot|few_shot",


def model_ref(wildcards):
    """What a job loads: the zoo's, the random or the converted GGUF model's directory, or the entry's id
    (hub id or directory)."""
    kind = KINDS[wildcards.model]
    if kind == "zoo":
        return f"results/zoo/{wildcards.model}/{wildcards.role}"
    if kind == "random":
        return f"results/random/{wildcards.model}/{wildcards.role}"
    if kind == "gguf":
        return f"results/gguf/{wildcards.model}"
    return model_entry(config, wildcards.model)[wildcards.role]["id"]


def gguf_file(wildcards):
    """A GGUF model's file (a path, or inside an installed package): a new file reruns its conversion."""
    return portable(locate_gguf(model_entry(config, wildcards.model)["gguf"], ROOT))


def model_inputs(wildcards):
    """What a job's model is made of, as inputs whose changes rerun the job: a directory the
    workflow builds; each file of a local checkpoint directory (new weights written into it
    change no directory time stamp); nothing for a hub id, which the job resolves to a commit."""
    ref = model_ref(wildcards)
    if KINDS[wildcards.model] != "checkpoint":
        return {"model": ref}
    if os.path.isdir(ref):
        return {"model": sorted(str(p) for p in Path(ref).iterdir() if p.is_file() and not p.name.startswith("."))}
    return {}


def model_options_json(wildcards):
    return json.dumps(model_options(model_entry(config, wildcards.model), wildcards.role), sort_keys=True)


def job_resource(key):
    """A model job's resource: zoo jobs are small CPU jobs; others take evaluation.resources,
    overridden by the model entry's resources."""
    zoo_defaults = {**EVAL["resources"], "gpu": 0, "mem_mb": 2000, "runtime": 30, "cpus": EVAL["threads"]}

    def resource(wildcards):
        entry = model_entry(config, wildcards.model)
        if KINDS[wildcards.model] == "zoo":
            return zoo_defaults[key]
        return {**EVAL["resources"], **entry.get("resources", {})}[key]

    return resource


def job_threads(wildcards):
    return job_resource("cpus")(wildcards)


# What every model job (tune, evaluate) asks the scheduler for; gpu_model only where a site
# names one (SLURM's --gpus=<model>:<n>).
MODEL_JOB_RESOURCES = {key: job_resource(key) for key in ("gpu", "mem_mb", "runtime")}
if "gpu_model" in EVAL["resources"]:
    MODEL_JOB_RESOURCES["gpu_model"] = job_resource("gpu_model")


def data_dir_of(wildcards, input):
    """results/data/<task>, as found among a job's inputs."""
    return os.path.dirname(input.test)


def tune_settings(wildcards):
    tune = {k: v for k, v in EVAL["tune"].items() if k != "snapshots"}
    return json.dumps({**tune, "snapshots": STEPS, "seed": config["seed"]}, sort_keys=True)


def generate_settings(wildcards):
    settings = {"few_shot_k": EVAL["few_shot"]["k"], "seed": config["seed"], **EVAL["generate"]}
    return json.dumps(settings, sort_keys=True)


def loglik_settings(wildcards):
    settings = {"few_shot_k": EVAL["few_shot"]["k"], "seed": config["seed"], **EVAL["loglik"]}
    return json.dumps(settings, sort_keys=True)


def loglik_outputs(wildcards, output):
    """A closed task's option log-likelihood files among an evaluation job's outputs (else none)."""
    return output.logliks if hasattr(output, "logliks") else []


def per_unit_root(kind):
    """results/<kind>: where aggregate, tables and claims read per-unit files (a params function)."""
    return lambda wildcards: f"{RESULTS}/{kind}"


def unit_patterns(kind, units):
    """The files of these units under results/<kind>/, with {model}, {role} and {task} wildcards."""
    return [unit_file(kind, unit) for unit in units]


def unit_files(kind, wildcards):
    """Every output file of one model/role/task under results/<kind>/."""
    return [unit_file(kind, unit, wildcards.model, wildcards.role, wildcards.task) for unit in UNITS]


def judge_model_inputs(wildcards=None):
    """An LLM judge's model directory and prompt file: changing either reruns the judging."""
    judge = EVAL["judge"]
    if judge["name"] == "hf":
        return {"judge_model": judge["model"], "judge_prompts": judge["prompts"]}
    return {"judge_prompts": judge["prompts"]} if judge["name"] == "openai" else {}


def judge_inputs(wildcards):
    inputs = {"generations": unit_files(GENERATIONS, wildcards), **judge_model_inputs()}
    if wildcards.task in CLOSED_TASKS:
        inputs["logliks"] = unit_files(LOGLIK, wildcards)
    return inputs


def all_scores():
    return [
        unit_file(SCORES, unit, model, role, task)
        for model in MODELS
        for role in ROLES
        for task in TASKS
        for unit in UNITS
    ]


def per_example_files():
    """Every file with one row per example (splits, generations, option scores, verdicts, the
    zoo's probes) and every tuned prompt. `all` asks for each by name: Snakemake does not rebuild
    a missing intermediate file while what was made from it is up to date, so a file deleted by
    a killed forced rerun would otherwise stay missing for good."""
    units = [(model, role, task) for model in MODELS for role in ROLES for task in TASKS]
    files = expand("results/data/{task}/{split}.jsonl", task=TASKS, split=["train", "test", "few_shot"])
    for model, role, task in units:
        files += [unit_file(GENERATIONS, unit, model, role, task) for unit in UNITS]
        if task in CLOSED_TASKS:
            files += [unit_file(LOGLIK, unit, model, role, task) for unit in UNITS]
        if "soft_prompt" in METHODS:
            names = ["prompt.safetensors", "curve.csv", *(snapshot_name(step) for step in STEPS)]
            files += [softprompt_file(name, model, role, task) for name in names]
    files += expand("results/probes/{model}/{role}.jsonl", model=ZOO_MODELS, role=ROLES)
    return files + all_scores()


def base_choice_files():
    """The option log-likelihoods of the base models' soft-prompt units on closed tasks: which
    option each test example chose (the claims check that choices did not collapse onto one)."""
    if "soft_prompt" not in METHODS:
        return []
    return [
        unit_file(LOGLIK, unit_name("soft_prompt", step), model, "base", task)
        for model in MODELS
        for task in CLOSED_TASKS
        for step in STEPS
    ]


def task_folder_of(wildcards, input):
    """The folder of the one task file among a job's inputs."""
    return os.path.dirname(input.task)


def analysis_settings(wildcards):
    """What the tables, figures and claims are computed with."""
    settings = {
        "final_step": EVAL["tune"]["steps"],
        "first_step": STEPS[0],
        "reference_method": config["analysis"]["reference_method"],
        "bootstrap": config["analysis"]["bootstrap"],
        "seed": config["seed"],
        "closed_tasks": CLOSED_TASKS,  # the figures draw closed and open tasks apart
    }
    return json.dumps(settings, sort_keys=True)


def published_record():
    """The published record whose verdict stability claims.md quotes ([] when none is set);
    a relative path is relative to the repository root, as task_dir is."""
    name = config["analysis"].get("published")
    if not name:
        return []
    path = Path(name) if os.path.isabs(name) else ROOT / name
    if not path.is_file():
        raise WorkflowError(
            f"config analysis.published: {path} not found; "
            "give a record that `python -m softeval publish-ranges` writes, or null"
        )
    return portable(path)


PUBLICATION_TABLES = ["swap_distance", "score_gap", "knowledge_format", "consensus", "unit_checks"]
FIGURES = ["tuning_curve", "method_scores", "swap_distance", "score_gap"]


# ---- timings ---------------------------------------------------------------------------
# Every job's Snakemake benchmark file (seconds, max RSS, CPU time), one pattern per rule;
# the timings rule reads the wildcards back from the paths with these patterns.
BENCHMARKS = {
    name: os.path.join("results", "benchmarks", name, *(f"{{{w}}}" for w in wildcards)) + ".tsv"
    for name, wildcards in {
        "build_world": [],
        "prepare_task": ["task"],
        "train_tokenizer": [],
        "pretrain": ["model"],
        "posttrain": ["model"],
        "probe_zoo_model": ["model"],
        "zoo_report": [],
        "random_tokenizer": ["vocab"],
        "random_model": ["model", "role"],
        "convert_gguf": ["model"],
        "tune": ["model", "role"],
        "evaluate": ["model", "role", "task"],
        "evaluate_closed": ["model", "role", "task"],
        "evaluate_soft_prompt": ["model", "role", "task"],
        "evaluate_soft_prompt_closed": ["model", "role", "task"],
        "judge": ["model", "role", "task"],
        "aggregate": [],
        "tables": [],
        "figures": [],
        "claims": [],
        "judge_validation": [],
    }.items()
}


def benchmark_files():
    """The benchmark file of every job this config runs (the same jobs `all` asks for, one each)."""
    random_models = [m for m in MODELS if KINDS[m] == "random"]
    jobs = {
        "build_world": [{}] if WORLD_TASKS or ZOO_MODELS else [],
        "prepare_task": [{"task": t} for t in TASKS],
        "train_tokenizer": [{}] if ZOO_MODELS else [],
        "pretrain": [{"model": m} for m in ZOO_MODELS],
        "posttrain": [{"model": m} for m in ZOO_MODELS],
        "probe_zoo_model": [{"model": m} for m in ZOO_MODELS],
        "zoo_report": [{}] if ZOO_MODELS else [],
        "random_tokenizer": [
            {"vocab": v} for v in sorted({random_spec(model_entry(config, m))["vocab_size"] for m in random_models})
        ],
        "random_model": [{"model": m, "role": r} for m in random_models for r in ROLES],
        "convert_gguf": [{"model": m} for m in MODELS if KINDS[m] == "gguf"],
        "judge_validation": [{}],
        "aggregate": [{}],
        "tables": [{}],
        "figures": [{}],
        "claims": [{}],
    }
    units = [{"model": m, "role": r, "task": t} for m in MODELS for r in ROLES for t in TASKS]
    closed = {False: [u for u in units if u["task"] in OPEN_TASKS], True: [u for u in units if u["task"] in CLOSED_TASKS]}
    jobs["judge"] = units
    if PLAIN_METHODS:
        jobs["evaluate"], jobs["evaluate_closed"] = closed[False], closed[True]
    if "soft_prompt" in METHODS:
        jobs["tune"] = [{"model": m, "role": r} for m in MODELS for r in ROLES]
        jobs["evaluate_soft_prompt"], jobs["evaluate_soft_prompt_closed"] = closed[False], closed[True]
    return [BENCHMARKS[name].format(**w) for name, each in jobs.items() for w in each]
