"""The plug-in points: each registry's names are exactly what the config schema offers, and
every document counts claims from the registry instead of naming a number."""

from __future__ import annotations

import re

import pytest
import yaml

from softeval.analysis.claims import CLAIMS
from softeval.engine.backends import BACKENDS
from softeval.judges.factory import JUDGES
from softeval.model_kinds import FALLBACK, MODEL_KINDS, kind_of, selecting_keys
from softeval.registry import Registry
from softeval.schema import InputError, load_schema
from tests.conftest import ROOT

SCHEMA = load_schema("config")


def test_the_judge_enum_is_the_judge_registry():
    enum = SCHEMA["properties"]["evaluation"]["properties"]["judge"]["properties"]["name"]["enum"]
    assert enum == JUDGES.names() == ["rule", "hf", "openai"]


def test_the_backend_enum_is_the_backend_registry():
    enum = SCHEMA["properties"]["evaluation"]["properties"]["generate"]["properties"]["backend"]["enum"]
    assert enum == BACKENDS.names()


def test_the_model_kinds_the_schema_tells_apart_are_the_registry():
    entry = SCHEMA["properties"]["models"]["items"]
    selecting = [branch.get("required") for branch in entry["oneOf"]]
    # one branch per kind: a kind's own key, or (the fallback, a checkpoint) none of them, its base
    # required (post optional: a base-only model)
    assert sorted(r[0] for r in selecting if r) == sorted(selecting_keys()) and all(len(r) == 1 for r in selecting if r)
    assert selecting.count(None) == 1 and entry["then"] == {"required": ["base"]}
    assert set(selecting_keys()) <= set(entry["properties"]) and FALLBACK in MODEL_KINDS
    assert kind_of({"name": "x", "base": {"id": "a"}, "post": {"id": "b"}}).name == FALLBACK
    assert [kind_of({"name": "x", key: {}}).name for key in selecting_keys()] == selecting_keys()


def test_claims_are_numbered_as_the_paper_and_published_records_name_only_registered_ones():
    numbers = [claim.number for claim in CLAIMS.values()]
    assert numbers == list(range(1, len(numbers) + 1)) and CLAIMS.names() == [str(n) for n in numbers]
    for record in sorted((ROOT / "config" / "published").glob("*.yaml")):
        # a record made before a claim existed stays valid: verify compares the claims it has
        assert set(yaml.safe_load(record.read_text())["verdicts"]) <= set(numbers), record.name


DOCUMENTS = [
    ROOT / "README.md",
    ROOT / "results" / "README.md",
    ROOT / "config" / "README.md",
    ROOT / "workflow" / "report" / "claims.rst",
    *sorted((ROOT / "docs").glob("*.md")),
]


@pytest.mark.parametrize("path", DOCUMENTS, ids=lambda p: str(p.relative_to(ROOT)))
def test_documents_count_claims_rather_than_naming_a_number(path):
    text = path.read_text(encoding="utf-8")
    assert not re.search(r"\b(five|four|six|\d) (of the paper's )?claims\b", text, re.IGNORECASE)
    assert not re.search(r"claims? 1[-\u2013]\d\b", text)


def test_a_registry_names_the_config_key_and_refuses_a_second_entry_of_a_name():
    registry: Registry[int] = Registry("widget", "evaluation.widget")
    registry.add("a", 1)
    with pytest.raises(ValueError, match="registered twice"):
        registry.add("a", 2)
    with pytest.raises(InputError, match=r"unknown widget 'b'; use one of a \(config key evaluation\.widget\)"):
        registry.get("b")
    registry.remove("a")
    assert len(registry) == 0 and "a" not in registry
