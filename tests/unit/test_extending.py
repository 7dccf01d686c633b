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
from softeval.data.splits import prepare_task
from softeval.jobs.judge import run_judge
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


class HearsStops(SaysYes):
    """A toy judge that takes the optional `stop_reasons` and keeps what it was given."""

    name = "hears-stops"

    def judge(self, task, examples, responses, kinds=("knowledge", "format"), stop_reasons=None):
        self.heard = stop_reasons
        return super().judge(task, examples, responses, kinds)


def test_the_judge_job_runs_plug_ins_with_and_without_stop_reasons(world, tasks, tmp_path, monkeypatch):
    """The recipe's `judge(task, examples, responses, kinds)` keeps working in the judge job; a
    judge naming `stop_reasons` gets each generation's (None where a row has none)."""
    world.save(tmp_path / "world.json")
    prepare_task(tasks["world_numeric"], tmp_path / "data", tmp_path / "world.json")
    test = [json.loads(line) for line in (tmp_path / "data" / "test.jsonl").read_text().splitlines()]
    stops = ["length" if i % 2 else None for i in range(len(test))]
    generation = tmp_path / "gen.jsonl"
    rows = [
        {"id": e["id"], "method": "zero_shot", "step": None, "response": " ::::"} | ({"stop_reason": s} if s else {})
        for e, s in zip(test, stops, strict=True)
    ]
    generation.write_text("".join(json.dumps(row) + "\n" for row in rows))
    hears = HearsStops()
    judge_name = load_schema("config")["properties"]["evaluation"]["properties"]["judge"]["properties"]["name"]
    monkeypatch.setitem(judge_name, "enum", [*judge_name["enum"], "says-yes", "hears-stops"])
    for name, judge in (("says-yes", SaysYes()), ("hears-stops", hears)):
        register_judge(name)(lambda settings, threads, judge=judge: judge)
        try:
            out = tmp_path / f"{name}.jsonl"
            run_judge(
                task=tasks["world_numeric"],
                data_dir=tmp_path / "data",
                settings=name,
                generations=[generation],
                logliks=[],
                outs=[out],
            )
        finally:
            JUDGES.remove(name)
        scores = [json.loads(line) for line in out.read_text().splitlines()]
        # the job records the plug-in's verdicts as given; a Verdict without a reason has none
        assert all(r["judge"] == name and r["format"] and r["degenerate"] is None for r in scores)
    assert hears.heard == stops


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
