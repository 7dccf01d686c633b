"""The rule table: each rule's wildcards and upstream rules, its jobs for a config, its benchmark files.

`RULES` is what the plan knows of every rule of workflow/rules/*.smk (a test checks the
upstream rules against Snakemake's rule graph); `Rules.jobs()` lists each rule's jobs as their
wildcard values (the same jobs `all` asks for, one each), and every job's benchmark file follows
one pattern: results/benchmarks/<rule>/<wildcard values>.tsv.
"""

from __future__ import annotations

from dataclasses import dataclass

from softeval.layout import benchmark_file
from softeval.plan.evaluated import Evaluated


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
    "calibration": RuleShape((), ("tables", "judge", "evaluate_soft_prompt")),
    "judge_validation": RuleShape((), ()),
    "export_lm_eval": RuleShape((), ("aggregate", "prepare_task")),
}

# The rules whose jobs load a model under evaluation (rules/tune.smk, rules/evaluate.smk): what
# evaluation.resources sizes, a GPU each on a cluster, and what plan-cost prices.
MODEL_JOB_RULES = ("tune", "evaluate", "evaluate_soft_prompt")


def benchmark_pattern(rule: str) -> str:
    """results/benchmarks/<rule>/{w1}/{w2}.tsv: the one pattern of every rule's benchmark file."""
    return benchmark_file(rule, RULES[rule].wildcards)


class Rules(Evaluated):
    """The plan's jobs: each rule's, and their benchmark files."""

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
            "calibration": once,
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
