"""docs/extending.md's recipes, followed with a toy judge and a toy claim: what the recipe says
to write is all it takes for the config, the plan, the command line and the claims table to
use the new plug-in."""

from __future__ import annotations

import copy
import json

import numpy as np
import pytest

from softeval.analysis.claims import CLAIMS, HOLDS, Part, check_claims, claim, claim_verdicts, write_claims
from softeval.analysis.evidence import Interval
from softeval.cli import main
from softeval.config import check_config, load_config_file
from softeval.judges.factory import JUDGES, make_judge, register_judge
from softeval.judges.rule import Verdict
from softeval.plan import Plan
from softeval.schema import load_schema
from tests.conftest import ROOT
from tests.unit.analysis.test_claims import World

RECIPES = (ROOT / "docs" / "extending.md").read_text(encoding="utf-8")


class SaysYes:
    """A toy judge: every response is right in knowledge and format."""

    name = "says-yes"

    def judge(self, task, examples, responses, kinds=("knowledge", "format")):
        return [Verdict(knowledge=True, format=True, strict=True, judge=self.name) for _ in responses]


@pytest.fixture
def toy_judge(monkeypatch):
    """Recipe step 1 (factory.py: a registered builder) and step 2 (the schema's enum)."""
    assert "@register_judge(" in RECIPES and "evaluation.judge.name" in RECIPES
    register_judge("says-yes", workflow_inputs={"judge_prompts": "prompts"})(lambda settings, threads: SaysYes())
    judge_name = load_schema("config")["properties"]["evaluation"]["properties"]["judge"]["properties"]["name"]
    monkeypatch.setitem(judge_name, "enum", [*judge_name["enum"], "says-yes"])
    yield
    JUDGES.remove("says-yes")


def test_a_toy_judge_is_usable_everywhere_after_the_recipe(toy_judge, tmp_path):
    config = load_config_file(ROOT / "config" / "config.yaml")
    config["evaluation"]["judge"] = {"name": "says-yes"}
    config = check_config(copy.deepcopy(config), "toy", ROOT)
    plan = Plan.from_config(config, ROOT, ROOT)
    assert json.loads(plan.judge_settings())["name"] == "says-yes"
    assert plan.judge_model_inputs() == {"judge_prompts": "config/judges/default.yaml"}
    assert isinstance(make_judge("says-yes"), SaysYes)
    # the judge validation command builds it from its name, as the workflow's rule does
    out = tmp_path / "validation"
    assert main(["judge", "validate", "--settings", '{"name": "says-yes"}', "--out", str(out)]) == 0
    summary = json.loads(out.with_suffix(".json").read_text())
    labels = [json.loads(line) for line in (ROOT / "config" / "judges" / "validation.jsonl").read_text().splitlines()]
    assert summary["judge"] == "says-yes" and summary["n"] == len(labels)
    # it says yes to all: its accuracy is the share of rows labelled right
    assert summary["knowledge"]["accuracy"] == pytest.approx(np.mean([bool(r["knowledge"]) for r in labels]))


def test_without_the_schema_line_the_config_refuses_the_name():
    register_judge("says-yes")(lambda settings, threads: SaysYes())
    try:
        config = load_config_file(ROOT / "config" / "config.yaml")
        config["evaluation"]["judge"] = {"name": "says-yes"}
        with pytest.raises(Exception, match="says-yes"):
            check_config(config, "toy", ROOT)
    finally:
        JUDGES.remove("says-yes")


def test_a_toy_claim_is_checked_and_written_after_the_recipe(tmp_path):
    assert "@claim(" in RECIPES
    number = len(CLAIMS) + 1

    def every_model_scores(inputs):
        means = inputs.summary["strict"]
        return [Part(number, "every unit", HOLDS if means.min() > 0 else "refuted", "toy", Interval(means.min(), 0, 1))]

    claim(number, "Toy claim: every unit scores above zero", needs=("soft_prompt",))(every_model_scores)
    try:
        world = World()
        parts = check_claims(world.inputs())
        assert claim_verdicts(parts)[number] == HOLDS
        assert list(parts["claim"].unique()) == [c.number for c in CLAIMS.values()]  # in registry order
        write_claims(parts, tmp_path / "claims")
        md = (tmp_path / "claims.md").read_text()
        assert f"## {number}. Toy claim — holds" in md and "*The paper:* Toy claim: every unit scores" in md
        no_soft = World()
        no_soft.arrays = {k: v for k, v in no_soft.arrays.items() if k[3] != "soft_prompt"}
        verdicts = claim_verdicts(check_claims(no_soft.inputs()))
        assert verdicts[number] == "not applicable"  # what it needs is missing: never called
    finally:
        CLAIMS.remove(str(number))
    assert number not in claim_verdicts(check_claims(World().inputs()))
