"""Typed settings of each job: the one JSON object a rule passes (`--settings`), parsed once.

Every job reads its settings as a frozen dataclass instead of a dict, so a misspelt key is
caught where the JSON enters, not as a KeyError deep in a job. Defaults come from the config
schema (a key the rule leaves out takes the schema's default), so no default is written
twice; keys the rule adds beside a config section (the seed, few_shot_k) have none. A key
neither knows is an error, and so is a value outside a `Literal`'s choices.

What a job records in its provenance is `to_json()`: exactly the keys the rule passed, in
their order, so the artifacts' bytes do not depend on this module.
"""

from __future__ import annotations

import dataclasses
import inspect
import typing
from collections.abc import Callable, Mapping
from typing import Any, ClassVar, Literal, Self, TypeVar

from softeval.names import FEW_SHOT, SOFT_PROMPT, ZERO_SHOT
from softeval.schema import InputError, load_schema

T = TypeVar("T")


def section_properties(section: str | None) -> dict[str, Any]:
    """The `properties` of a dotted config section (e.g. evaluation.generate; models[].random for
    a key of every model entry) in the schema, over the top level's (seed, cpu_kernels: keys a
    rule adds beside a section)."""
    top = load_schema("config")
    node = top
    for part in section.split(".") if section else ():
        node = node["properties"][part.removesuffix("[]")]
        node = node["items"] if part.endswith("[]") else node
    return {**top["properties"], **node.get("properties", {})} if section else dict(top["properties"])


def job_settings(section: str | None = None) -> Callable[[type[T]], type[T]]:
    """Make `cls` a frozen, keyword-only dataclass whose defaults are the schema's for `section`."""

    def wrap(cls: type[T]) -> type[T]:
        properties = section_properties(section)
        for name in inspect.get_annotations(cls):
            if name.isupper() or name in cls.__dict__:
                continue
            default = properties.get(name, {}).get("default", dataclasses.MISSING)
            if isinstance(default, dict):
                setattr(cls, name, dataclasses.field(default_factory=lambda d=default: dict(d)))
            elif isinstance(default, list):  # dataclasses refuse list defaults; the field is a tuple
                setattr(cls, name, tuple(default))
            elif default is not dataclasses.MISSING:
                setattr(cls, name, default)
        cls.SECTION = section  # type: ignore[attr-defined]
        return dataclasses.dataclass(frozen=True, kw_only=True)(cls)

    return wrap


@dataclasses.dataclass(frozen=True, kw_only=True)
class JobSettings:
    """Base of every job's settings: parsing, checks and the provenance record."""

    SECTION: ClassVar[str | None] = None
    given: tuple[str, ...] = dataclasses.field(default=(), repr=False, compare=False)

    @classmethod
    def parse(cls, data: Mapping[str, Any], job: str) -> Self:
        """The settings of `data` (a rule's JSON); errors name the job, the key and the fix."""
        names = [f.name for f in dataclasses.fields(cls) if f.name != "given"]
        where = f" (config section {cls.SECTION})" if cls.SECTION else ""
        unknown = sorted(set(data) - set(names))
        if unknown:
            raise InputError(f"{job} --settings: unknown key {unknown[0]!r}; use {', '.join(sorted(names))}{where}")
        hints = typing.get_type_hints(cls)
        for name in names:
            hint = hints[name]
            allowed = typing.get_args(hint) if typing.get_origin(hint) is Literal else cls.choices(name)
            if name in data and allowed is not None and data[name] not in allowed:
                choices = ", ".join(repr(c) for c in allowed)
                raise InputError(f"{job} --settings: {name} is {data[name]!r}; use one of {choices}{where}")
        missing = [f.name for f in dataclasses.fields(cls) if _required(f) and f.name not in data]
        if missing:
            raise InputError(f"{job} --settings: key {missing[0]!r} is missing; the rule passes it{where}")
        values = {
            name: tuple(value) if typing.get_origin(hints[name]) is tuple and isinstance(value, list) else value
            for name, value in data.items()
        }
        return cls(**values, given=tuple(data))

    @classmethod
    def choices(cls, name: str) -> tuple[Any, ...] | None:
        """The values the schema's enum allows for a field typed `str` (a registry's names: judges,
        backends; a test keeps each enum equal to its registry), or None when it has none."""
        enum = section_properties(cls.SECTION).get(name, {}).get("enum")
        return tuple(enum) if enum is not None else None

    def to_json(self) -> dict[str, Any]:
        """The keys the rule passed, in its order: what the job's provenance records."""
        return {name: _plain(getattr(self, name)) for name in self.given}

    def as_dict(self) -> dict[str, Any]:
        """Every setting, in field order (given or defaulted)."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name != "given"}


def _required(f: dataclasses.Field) -> bool:
    return f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING


def _plain(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


@job_settings("world")
class WorldSettings(JobSettings):
    """softeval world: the synthetic world's size and split."""

    n_entities: int
    test_fraction: float
    seed: int


@job_settings("zoo.tokenizer")
class TokenizerSettings(JobSettings):
    """softeval tokenizer: the zoo tokenizer's vocabulary."""

    vocab_size: int


@job_settings()
class PretrainSettings(JobSettings):
    """softeval pretrain: everything that determines a zoo base model's weights."""

    recipe: dict[str, Any]
    corpus: dict[str, Any]
    size: dict[str, Any]
    pretrain: dict[str, Any]
    seed: int
    cpu_kernels: Literal["native", "portable"]


@job_settings()
class PosttrainSettings(JobSettings):
    """softeval posttrain: the post-training (SFT) run of a zoo model."""

    posttrain: dict[str, Any]
    seed: int


@job_settings("zoo.probe")
class ProbeSettings(JobSettings):
    """softeval probe: the zoo's knowledge (cloze, and the task's question where asked) and format probes."""

    max_new_tokens: int
    batch_size: int
    knowledge: Literal["cloze", "cloze_or_question"] = "cloze"


@job_settings()
class ZooReportSettings(JobSettings):
    """softeval zoo-report: the zoo's model entries."""

    models: list[dict[str, Any]]


@job_settings("models[].random")
class RandomModelSettings(JobSettings):
    """softeval random-model: a randomly initialised Llama-style model."""

    vocab_size: int
    layers: int
    width: int
    heads: int
    seed: int


@job_settings("evaluation.tune")
class TuneSettings(JobSettings):
    """Hyper-parameters of one tuning run: evaluation.tune plus the seed (defaults: the schema's,
    the paper's)."""

    n_tokens: int
    steps: int
    batch_size: int
    lr: float
    weight_decay: float
    warmup_steps: int
    schedule: Literal["constant", "cosine"]
    init: Literal["vocab", "text", "random"]  # vocab: rows sampled from the vocabulary
    init_text: str | None = None
    seed: int
    snapshots: tuple[int, ...]
    gradient_checkpointing: bool


@job_settings("evaluation.generate")
class GenerateSettings(JobSettings):
    """Greedy generation (generate, evaluate): evaluation.generate plus few_shot_k and seed."""

    few_shot_k: int
    seed: int
    max_new_tokens: int
    batch_size: int
    chunk_size: int
    backend: str  # the schema's enum: softeval.engine.backends.BACKENDS's names
    vllm: dict[str, Any]


# Prompts per vLLM engine call (softeval.engine.backends.VLLMBackend). `LLM.generate` returns when
# all its requests have ended, so each call drains to its slowest sequence and saves nothing before:
# a window many times the sequences in flight (256) drains rarely and loses at most one window to a
# kill. plan-cost prices the drains from it.
VLLM_WINDOW = 4096


@job_settings("evaluation.loglik")
class LoglikSettings(JobSettings):
    """Option log-likelihoods (loglik, evaluate): evaluation.loglik plus few_shot_k and seed."""

    few_shot_k: int
    seed: int
    batch_size: int
    chunk_size: int
    share_prompt: bool


@job_settings("evaluation.judge")
class JudgeSettings(JobSettings):
    """softeval judge run / validate: evaluation.judge."""

    name: str  # the schema's enum: softeval.judges.factory.JUDGES's names
    model: str | None = None
    base_url: str | None = None
    base_url_env: str | None
    api_key_env: str | None
    concurrency: int
    timeout: float
    max_retries: int
    extra_body: dict[str, Any]
    prompts: str
    cascade: bool
    batch_size: int
    cache: str


@job_settings()
class AggregateSettings(JobSettings):
    """softeval aggregate: bootstrap resamples of the confidence intervals, and their seed."""

    bootstrap: int
    seed: int


@job_settings("analysis")
class AnalysisSettings(JobSettings):
    """softeval tables / figures / claims: what the evidence is computed with. `metric` is the
    score rankings order by (strict: right knowledge in the right format); rules do not pass it."""

    steps: tuple[int, ...]  # the soft prompt's evaluated steps (softeval.plan.soft_prompt_steps)
    reference_method: Literal[ZERO_SHOT, FEW_SHOT, SOFT_PROMPT]
    bootstrap: int
    seed: int
    closed_tasks: tuple[str, ...]  # the Plan's tasks scored by option likelihood (multiple choice)
    metric: Literal["strict", "knowledge", "format"] = "strict"

    @property
    def first_step(self) -> int:
        return self.steps[0]

    @property
    def final_step(self) -> int:
        """The last tuning step (evaluated whatever the snapshots are)."""
        return self.steps[-1]
