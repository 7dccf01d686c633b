# Shared set-up: validate the config (one-line errors), load tasks, input functions.
import json
import os
from pathlib import Path

from snakemake.exceptions import WorkflowError
from snakemake.utils import validate

from softeval.config import check_config, model_entry, soft_prompt_steps, task_dir
from softeval.methods import unit_name
from softeval.tasks import load_task
from softeval.schema import InputError

ROOT = Path(workflow.basedir)
# Jobs run `python -m softeval`; the prefix makes the package importable in any job
# environment (a conda env from envs/ included), whether or not it was pip-installed there.
# (Braces are doubled twice: once for this f-string, once for Snakemake's own formatting.)
shell.prefix(f"set -euo pipefail; export PYTHONPATH='{ROOT / 'workflow'}'${{{{PYTHONPATH:+:$PYTHONPATH}}}}; ")
CONFIG_SOURCE = ", ".join(str(f) for f in workflow.configfiles) or "config"

try:
    check_config(config, CONFIG_SOURCE, ROOT)
except InputError as err:
    raise WorkflowError(str(err)) from None
# The same schema through Snakemake's own validator (defaults are already filled in).
validate(config, "../schemas/config.schema.yaml", set_default=True)

TASKS = list(config["tasks"])
MODELS = [m["name"] for m in config["models"]]
ROLES = ["base", "post"]
TASK_DIR = str(task_dir(config, ROOT))
ZOO = config["zoo"]


wildcard_constraints:
    model="[a-z0-9][a-z0-9_-]{0,63}",
    task="[a-z0-9][a-z0-9_-]{0,63}",
    role="base|post",


def task_files(wildcards=None):
    return [f"{TASK_DIR}/{task}.yaml" for task in TASKS]


def task_dir_of(wildcards, input):
    """The folder of the task files among a job's inputs."""
    return os.path.dirname(input.tasks[0])


def data_root_of(wildcards, input):
    """results/data, as found among a job's inputs (results/data/<task>/<split>.jsonl)."""
    split = input.train if hasattr(input, "train") else input.test
    return os.path.dirname(os.path.dirname(split[0]))


def split_files(split):
    return expand("results/data/{task}/{split}.jsonl", task=TASKS, split=split)


def pretrain_params(wildcards):
    """Everything that determines a base model's weights, as one JSON object."""
    model = model_entry(config, wildcards.model)
    return json.dumps(
        {
            "recipe": {k: model["zoo"][k] for k in ("coverage", "format_exposure")},
            "corpus": ZOO["corpus"],
            "size": ZOO["sizes"][model["zoo"]["size"]],
            "pretrain": ZOO["pretrain"],
            "seed": config["seed"],
        },
        sort_keys=True,
    )


def posttrain_params(wildcards):
    return json.dumps({"posttrain": ZOO["posttrain"], "seed": config["seed"]}, sort_keys=True)


# ---- evaluation ---------------------------------------------------------------------
EVAL = config["evaluation"]
# Judge prompts and the validation set ship with the workflow: paths relative to its root.
if not os.path.isabs(EVAL["judge"]["prompts"]):
    EVAL["judge"]["prompts"] = str(ROOT / EVAL["judge"]["prompts"])
VALIDATION_SET = str(ROOT / "config" / "judges" / "validation.jsonl")
STEPS = soft_prompt_steps(config)
METHODS = list(EVAL["methods"])
CLOSED_TASKS = [task for task in TASKS if load_task(TASK_DIR, task).closed]
# A unit's outputs: one file per plain method, one per soft-prompt step.
UNITS = [unit_name(m, None) for m in METHODS if m != "soft_prompt"] + (
    [unit_name("soft_prompt", step) for step in STEPS] if "soft_prompt" in METHODS else []
)


wildcard_constraints:
    method="zero_shot|few_shot",


def model_dir(wildcards):
    """The Hugging Face directory of a model in a role (the embedded zoo builds them)."""
    return f"results/zoo/{wildcards.model}/{wildcards.role}"


def data_dir_of(wildcards, input):
    """results/data/<task>, as found among a job's inputs."""
    return os.path.dirname(input.test)


def tune_params(wildcards):
    spec = {k: v for k, v in EVAL["tune"].items() if k != "snapshots"}
    return json.dumps({**spec, "snapshots": STEPS, "seed": config["seed"]}, sort_keys=True)


def generate_params(wildcards):
    settings = {"few_shot_k": EVAL["few_shot"]["k"], "seed": config["seed"], **EVAL["generate"]}
    return json.dumps(settings, sort_keys=True)


def loglik_params(wildcards):
    settings = {"few_shot_k": EVAL["few_shot"]["k"], "seed": config["seed"], **EVAL["loglik"]}
    return json.dumps(settings, sort_keys=True)


def unit_files(kind, wildcards):
    """Every output file of one model/role/task under results/<kind>/."""
    return [f"results/{kind}/{wildcards.model}/{wildcards.role}/{wildcards.task}/{unit}.jsonl" for unit in UNITS]


def judge_model_inputs(wildcards=None):
    """An LLM judge's model directory and prompt file: changing either reruns the judging."""
    judge = EVAL["judge"]
    if judge["name"] == "hf":
        return {"judge_model": judge["model"], "judge_prompts": judge["prompts"]}
    return {"judge_prompts": judge["prompts"]} if judge["name"] == "openai" else {}


def judge_inputs(wildcards):
    inputs = {"generations": unit_files("generations", wildcards), **judge_model_inputs()}
    if wildcards.task in CLOSED_TASKS:
        inputs["logliks"] = unit_files("loglik", wildcards)
    return inputs


def all_scores():
    return [
        f"results/scores/{model}/{role}/{task}/{unit}.jsonl"
        for model in MODELS
        for role in ROLES
        for task in TASKS
        for unit in UNITS
    ]


def task_folder_of(wildcards, input):
    """The folder of the one task file among a job's inputs."""
    return os.path.dirname(input.task)


def analysis_params(wildcards):
    """What the tables, figures and claims are computed with."""
    settings = {
        "final_step": EVAL["tune"]["steps"],
        "first_step": STEPS[0],
        "reference_method": config["analysis"]["reference_method"],
        "bootstrap": config["analysis"]["bootstrap"],
        "seed": config["seed"],
    }
    return json.dumps(settings, sort_keys=True)


PUBLICATION_TABLES = ["swap_distance", "score_gap", "knowledge_format", "consensus"]
FIGURES = ["tuning_curve", "method_scores", "swap_distance", "score_gap"]
