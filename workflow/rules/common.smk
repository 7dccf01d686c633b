# Shared set-up: validate the config (one-line errors), build the run plan (softeval.plan), and
# the one-line input functions through which rules ask the plan.
import json
import os
import shlex
import sys
from pathlib import Path

from snakemake.exceptions import WorkflowError
from snakemake.utils import validate

from softeval.config import ConfigSources
from softeval.cpu_kernels import pin as pin_cpu_kernels
from softeval.layout import (
    GENERATIONS,
    LOGLIK,
    SCORES,
    SPLITS,
    SWAP_DRAWS_TABLE,
    data_file,
    data_meta,
    figure_file,
    gguf_model_dir,
    probe_file,
    random_model_dir,
    random_tokenizer_dir,
    snapshot_name,
    softprompt_file,
    table_file,
    unit_file,
    unit_root,
    world_file,
    zoo_model_dir,
    zoo_tokenizer_dir,
)
from softeval.plan import FIGURES, PUBLICATION_TABLES, ROLES, benchmark_pattern, dumps
from softeval.preflight import preflight
from softeval.provenance import CONFIG_ENV, file_sha256
from softeval.schema import InputError

ROOT = Path(workflow.basedir)
# Jobs run `python -m softeval`; the prefix makes the package importable in any job
# environment (a conda env from envs/ included), whether or not it was pip-installed there.
# (Braces are doubled twice: once for this f-string, once for Snakemake's own formatting.)
shell.prefix(f"set -euo pipefail; export PYTHONPATH='{ROOT / 'workflow'}'${{{{PYTHONPATH:+:$PYTHONPATH}}}}; ")
# Where the config came from, in Snakemake's order, for error lines (softeval.config.ConfigSources):
# the Snakefile's config/config.yaml (unless --replace-workflow-config discards it), each
# --configfile over it, then the --config overrides; a line names the one that set the key.
_settings = workflow.config_settings
_CLI_FILES = [str(f) for f in _settings.configfiles]
_OWN_FILES = [] if _settings.replace_workflow_config else [str(f) for f in workflow.configfiles[len(_CLI_FILES) :]]

try:
    CONFIG_SOURCES = ConfigSources.read([*_OWN_FILES, *_CLI_FILES], dict(_settings.config))
    CONFIG_SOURCE = str(CONFIG_SOURCES)
    # every artifact's provenance names the config files (path, sha256) and overrides that made it
    os.environ[CONFIG_ENV] = json.dumps(
        {
            "files": [{"path": str(Path(f).resolve()), "sha256": file_sha256(f)} for f in [*_OWN_FILES, *_CLI_FILES]],
            "overrides": dict(_settings.config),
        },
        default=str,
    )
    # the config's checks, its model folders (offline: the hub cache), the whole plan asked once
    PLAN = preflight(config, CONFIG_SOURCES, ROOT, uncached="warn")
    VALIDATION_TASK_FILES = PLAN.validation_task_files()
    PUBLISHED = PLAN.published_record()
except InputError as err:
    raise WorkflowError(str(err)) from None
# The same schema through Snakemake's own validator (defaults are already filled in).
validate(config, "../schemas/config.schema.yaml", set_default=True)
# Every job inherits this process's environment (a cluster job re-reads this file first).
pin_cpu_kernels(config["cpu_kernels"])
if len(PLAN.models) < 2:
    print(
        f"warning: {CONFIG_SOURCE}: one model ({', '.join(PLAN.models)}): its scores are computed, but rankings need "
        "at least two models, so the swap distances and claims 3 and 4 are reported as not applicable",
        file=sys.stderr,
    )
elif PLAN.base_only_note():
    print(f"note: {CONFIG_SOURCE}: {PLAN.base_only_note()}", file=sys.stderr)
TASKS, STEPS, ZOO = PLAN.task_names, PLAN.steps, config["zoo"]


wildcard_constraints:
    model="[a-z0-9][a-z0-9_-]{0,63}",
    task="[a-z0-9][a-z0-9_-]{0,63}",
    role="base|post",
    vocab="[0-9]+",
    method="zero_shot|few_shot",


# ---- input functions and parameters: each asks the plan ----------------------------------
def task_file(wildcards):
    return PLAN.task_file(wildcards.task)


def task_includes(wildcards):
    return PLAN.task_includes(wildcards.task)


def prepare_inputs(wildcards):
    return PLAN.prepare_inputs(wildcards.task)


def prepare_arguments(wildcards, input):
    return PLAN.prepare_arguments(wildcards.task, getattr(input, "world", None))


def model_inputs(wildcards):
    return PLAN.model_inputs(wildcards.model, wildcards.role)


def model_ref(wildcards):
    return PLAN.model_ref(wildcards.model, wildcards.role)


def model_options(wildcards):
    return PLAN.model_options(wildcards.model, wildcards.role)


def model_threads(wildcards):
    return PLAN.resource(wildcards.model, "cpus")


def model_resource(key):
    return lambda wildcards: PLAN.resource(wildcards.model, key)


# What every model job (tune, evaluate) asks the scheduler for.
MODEL_JOB_RESOURCES = {key: model_resource(key) for key in PLAN.model_resource_keys}


def judge_inputs(wildcards):
    return PLAN.judge_inputs(wildcards.model, wildcards.role, wildcards.task)


def unit_patterns(kind, units):
    """The files of these units under results/<kind>/, with {model}, {role} and {task} wildcards."""
    return [unit_file(kind, unit) for unit in units]


def folders(paths):
    """The folder of each path (a job's --data / --out-dir arguments)."""
    return [os.path.dirname(path) for path in paths]


def data_dir_of(wildcards, input):
    """results/data/<task>, as found among a job's inputs."""
    return os.path.dirname(input.test)


def data_root_of(wildcards, input):
    """results/data, as found among a job's inputs (results/data/<task>/<split>.jsonl)."""
    split = input.train if hasattr(input, "train") else input.test
    return os.path.dirname(os.path.dirname(split[0]))


def optional(name):
    """A params function: the named input or output files when the job has them, else none."""
    return lambda wildcards, input, output: getattr(output, name, None) or getattr(input, name, None) or []


def results_folder(kind):
    """results/<kind>, where aggregate, tables and claims read per-unit files (a params function:
    a path prefix given as a string would be a hard-coded one to Snakemake's linter)."""
    return lambda wildcards: unit_root(kind)
