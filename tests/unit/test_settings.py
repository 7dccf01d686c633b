"""Typed job settings: parsed once, defaults from the config schema, bad keys are one line."""

from __future__ import annotations

import dataclasses
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from softeval import settings as job_settings
from softeval.engine.softprompt import TuneSettings
from softeval.schema import InputError, load_schema
from softeval.settings import AnalysisSettings, GenerateSettings, JobSettings, JudgeSettings, LoglikSettings

ALL = [
    cls
    for cls in vars(job_settings).values()
    if isinstance(cls, type) and issubclass(cls, JobSettings) and cls is not JobSettings
] + [TuneSettings]


def schema_section(section):
    node = load_schema("config")
    for part in section.split("."):
        node = node["properties"][part.removesuffix("[]")]
        if part.endswith("[]"):  # a key of every item of a list (models[].random)
            node = node["items"]
    return node["properties"]


@pytest.mark.parametrize("cls", ALL, ids=lambda c: c.__name__)
def test_defaults_are_the_schemas_and_written_nowhere_else(cls):
    """Every field the schema gives a default takes exactly that default (lists as tuples)."""
    assert dataclasses.is_dataclass(cls) and cls.__dataclass_params__.frozen
    if cls.SECTION is None:
        return
    properties = schema_section(cls.SECTION)
    for field in dataclasses.fields(cls):
        if field.name in properties and "default" in properties[field.name]:
            default = field.default_factory() if field.default_factory is not dataclasses.MISSING else field.default
            expected = properties[field.name]["default"]
            assert default == (tuple(expected) if isinstance(expected, list) else expected), field.name


@pytest.mark.parametrize(
    ("cls", "section", "added"),
    [
        (GenerateSettings, "evaluation.generate", {"few_shot_k", "seed"}),
        (LoglikSettings, "evaluation.loglik", {"few_shot_k", "seed"}),
        (TuneSettings, "evaluation.tune", {"seed"}),
        (JudgeSettings, "evaluation.judge", set()),
        (job_settings.RandomModelSettings, "models[].random", set()),
        (job_settings.WorldSettings, "world", {"seed"}),
        (job_settings.TokenizerSettings, "zoo.tokenizer", set()),
        (job_settings.ProbeSettings, "zoo.probe", set()),
    ],
)
def test_a_jobs_fields_are_its_config_section_plus_what_the_rule_adds(cls, section, added):
    fields = {f.name for f in dataclasses.fields(cls)} - {"given"}
    assert fields == set(schema_section(section)) | added


def test_the_rules_json_round_trips_into_provenance_unchanged():
    """What a job records is what the rule passed: same keys, same order, same values."""
    sent = {"batch_size": 8, "chunk_size": 64, "few_shot_k": 3, "seed": 0, "share_prompt": True}
    settings = LoglikSettings.parse(sent, "loglik")
    assert json.dumps(settings.to_json()) == json.dumps(sent)
    assert settings.batch_size == 8 and settings.share_prompt is True


def test_a_missing_key_takes_the_schemas_default_but_is_not_recorded_as_given():
    settings = GenerateSettings.parse({"few_shot_k": 3, "seed": 0}, "generate")
    assert settings.max_new_tokens == 24 and settings.backend == "hf" and settings.vllm == {}
    assert settings.to_json() == {"few_shot_k": 3, "seed": 0}


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        ({"few_shot_k": 3, "seed": 0, "max_new_tokns": 4}, "unknown key 'max_new_tokns'"),
        ({"few_shot_k": 3, "seed": 0, "backend": "tgi"}, "backend is 'tgi'; use one of 'hf', 'vllm'"),
        ({"seed": 0}, "key 'few_shot_k' is missing"),
    ],
)
def test_bad_settings_are_one_line_naming_the_job_and_key(data, expected):
    with pytest.raises(InputError) as info:
        GenerateSettings.parse(data, "generate")
    message = str(info.value)
    assert "\n" not in message and message.startswith("generate --settings:") and expected in message


def test_settings_are_frozen():
    settings = AnalysisSettings(closed_tasks=(), steps=(0, 4))
    with pytest.raises(dataclasses.FrozenInstanceError):
        settings.steps = (8,)  # type: ignore[misc]
    assert (settings.first_step, settings.final_step) == (0, 4)
    assert settings.reference_method == "zero_shot" and settings.bootstrap == 1000 and settings.metric == "strict"


@given(
    st.fixed_dictionaries(
        {
            "steps": st.lists(st.integers(0, 10_000), min_size=1, unique=True).map(sorted),
            "seed": st.integers(0, 2**31),
            "closed_tasks": st.lists(st.sampled_from(["mmlu", "world_choice"]), unique=True),
        },
        optional={
            "reference_method": st.sampled_from(["zero_shot", "few_shot", "soft_prompt"]),
            "bootstrap": st.integers(1, 10_000),
        },
    )
)
def test_any_valid_analysis_json_parses_and_records_itself(data):
    settings = AnalysisSettings.parse(data, "tables")
    assert settings.to_json() == data
    assert settings.closed_tasks == tuple(data["closed_tasks"])
