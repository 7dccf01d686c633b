"""Where a run's files live under results/: the one owner of every path there.

A unit is one model x role x task x method (x soft-prompt step). Its generations, option
log-likelihoods and verdicts live in files of the same relative name under three folders,
and its tuned prompt under softprompts/. The workflow's rules, the judge and aggregate jobs,
the tables and `softeval review` all build and parse those paths here, so moving a file is a
one-line change. The run's other files are named here too: the prepared splits (data/), the
synthetic world, the models the workflow builds (zoo/, random/, gguf/), the zoo's probes, the
tables, figures, lm-evaluation-harness exports and each job's benchmark file. A function whose
arguments default to "{model}", "{task}", ... returns the Snakemake pattern with those
wildcards. Pure string work: no imports beyond the standard library.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from softeval.names import BASE, POST, SOFT_PROMPT
from softeval.schema import InputError

RESULTS = "results"
GENERATIONS, LOGLIK, SCORES, SOFTPROMPTS = "generations", "loglik", "scores", "softprompts"
UNIT_KINDS = (GENERATIONS, LOGLIK, SCORES)  # per-unit files with one row per test example
LM_EVAL = "lm_eval"  # results/lm_eval/: one lm-evaluation-harness results file per model and role
ROLE_SUFFIX = {BASE: "", POST: ".post"}  # a slug never holds '.': results_x-post.json stays model x-post's
SPLITS = ("train", "test", "few_shot")  # results/data/<task>/<split>.jsonl: a task's prepared splits


def meta_path(out: Path | str) -> Path:
    """The provenance file written beside a JSONL artifact: <name>.meta.json."""
    out = Path(out)
    return out.with_name(out.stem + ".meta.json")


def results_file_name(model: str, role: str = BASE) -> str:
    """results_<model>.json (base role) or results_<model>.post.json (post-trained twin)."""
    if role not in ROLE_SUFFIX:
        raise InputError(f"role {role!r}; use one of {', '.join(ROLE_SUFFIX)}")
    return f"results_{model}{ROLE_SUFFIX[role]}.json"


def unit_root(kind: str) -> str:
    """results/<kind>: the folder of one kind's per-unit files (what aggregate, tables and claims read)."""
    return f"{RESULTS}/{kind}"


def data_file(split: str, task: str = "{task}") -> str:
    """results/data/<task>/<split>.jsonl: one of a task's prepared splits (SPLITS)."""
    return f"{RESULTS}/data/{task}/{split}.jsonl"


def data_meta(task: str = "{task}") -> str:
    """results/data/<task>/meta.json: a prepared task's versions and split sizes."""
    return f"{RESULTS}/data/{task}/meta.json"


def world_file() -> str:
    """results/world/world.json: the synthetic world the world tasks and the zoo are made from."""
    return f"{RESULTS}/world/world.json"


def zoo_tokenizer_dir() -> str:
    """results/zoo/_tokenizer: the zoo's tokenizer."""
    return f"{RESULTS}/zoo/_tokenizer"


def zoo_model_dir(model: str = "{model}", role: str = "{role}") -> str:
    """results/zoo/<model>/<role>: a zoo model the workflow trains."""
    return f"{RESULTS}/zoo/{model}/{role}"


def probe_file(ext: str, model: str = "{model}", role: str = "{role}") -> str:
    """results/probes/<model>/<role>.<ext>: a zoo model's probe (json: its summary; jsonl: per example)."""
    return f"{RESULTS}/probes/{model}/{role}.{ext}"


def random_tokenizer_dir(vocab: int | str = "{vocab}") -> str:
    """results/random/_tokenizer/<vocab>: the random models' tokenizer of one vocabulary size."""
    return f"{RESULTS}/random/_tokenizer/{vocab}"


def random_model_dir(model: str = "{model}", role: str = "{role}") -> str:
    """results/random/<model>/<role>: a randomly initialised model the workflow builds."""
    return f"{RESULTS}/random/{model}/{role}"


def gguf_model_dir(model: str = "{model}") -> str:
    """results/gguf/<model>: a GGUF checkpoint converted to a Hugging Face directory (both roles)."""
    return f"{RESULTS}/gguf/{model}"


# The swap-distance bootstrap's draws (analysis.tables.write_swap_draws): written by the tables job
# beside the swap table, read by the claims job, so that the bootstrap runs once.
SWAP_DRAWS_TABLE = "swap_distance_draws"


def table_file(name: str, ext: str) -> str:
    """results/tables/<name>.<ext>: a table (scores, the publication tables, claims, timings, ...)."""
    return f"{RESULTS}/tables/{name}.{ext}"


def figure_file(name: str, ext: str) -> str:
    """results/figures/<name>.<ext>: a figure."""
    return f"{RESULTS}/figures/{name}.{ext}"


def lm_eval_file(model: str, role: str = BASE) -> str:
    """results/lm_eval/results_<model>.json (.post.json): a model role's lm-evaluation-harness results."""
    return f"{RESULTS}/{LM_EVAL}/{results_file_name(model, role)}"


def benchmark_file(rule: str, wildcards: Sequence[str] = ()) -> str:
    """results/benchmarks/<rule>/{w1}/{w2}.tsv: a rule's benchmark file, with its wildcards in path order."""
    return os.path.join(RESULTS, "benchmarks", rule, *(f"{{{w}}}" for w in wildcards)) + ".tsv"


def unit_name(method: str, step: int | None) -> str:
    """A unit's file name under <kind>/<model>/<role>/<task>/ (without .jsonl): the method,
    or soft_prompt/step<N> for a soft-prompt snapshot."""
    if method != SOFT_PROMPT:
        return method
    if step is None:
        raise InputError("soft_prompt has one unit per tuning step; pass --step <N> (e.g. --step 80)")
    return f"{SOFT_PROMPT}/step{step}"


def unit_folder(model: str = "{model}", role: str = "{role}", task: str = "{task}") -> str:
    """<model>/<role>/<task>: the folder of a model's files for one task (Snakemake wildcards by default)."""
    return f"{model}/{role}/{task}"


def unit_file(
    kind: str, unit: str, model: str = "{model}", role: str = "{role}", task: str = "{task}", root: str = RESULTS
) -> str:
    """results/<kind>/<model>/<role>/<task>/<unit>.jsonl; with the default arguments, the
    Snakemake pattern of that file with {model}, {role} and {task} wildcards."""
    if kind not in UNIT_KINDS:
        raise ValueError(f"unknown unit file kind {kind!r}; one of {', '.join(UNIT_KINDS)}")
    return f"{root}/{kind}/{unit_folder(model, role, task)}/{unit}.jsonl"


def unit_path(kind_folder: Path, model: str, role: str, task: str, method: str, step: int | None) -> Path:
    """One unit's file under a kind's folder (results/scores, results/generations, results/loglik)."""
    return kind_folder / unit_folder(model, role, task) / f"{unit_name(method, step)}.jsonl"


def softprompt_file(name: str, model: str = "{model}", role: str = "{role}", task: str = "{task}") -> str:
    """results/softprompts/<model>/<role>/<task>/<name>: a tuned prompt's files (prompt.safetensors,
    step<N>.safetensors, curve.csv, meta.json, peft/)."""
    return f"{RESULTS}/{SOFTPROMPTS}/{unit_folder(model, role, task)}/{name}"


def snapshot_name(step: int) -> str:
    """The file name of the soft prompt after `step` tuning steps."""
    return f"step{step}.safetensors"


@dataclass(frozen=True)
class UnitKey:
    """Which unit (model, role, task, method, step) a per-unit file belongs to, read back from its path."""

    model: str
    role: str
    task: str
    method: str
    step: int | None

    def as_row(self) -> dict[str, object]:
        return {"model": self.model, "role": self.role, "task": self.task, "method": self.method, "step": self.step}


def parse_unit_path(kind_folder: Path, path: Path) -> UnitKey:
    """The unit of <kind_folder>/<model>/<role>/<task>/<method>[/step<N>].jsonl."""
    parts = path.relative_to(kind_folder).with_suffix("").parts
    if len(parts) == 4:
        model, role, task, method = parts
        return UnitKey(model, role, task, method, None)
    if len(parts) == 5 and parts[4].startswith("step") and parts[4][4:].isdigit():
        model, role, task, method, step = parts
        return UnitKey(model, role, task, method, int(step[4:]))
    raise InputError(f"{path}: not a per-unit file of the layout <model>/<role>/<task>/<method>[/step<N>].jsonl")
