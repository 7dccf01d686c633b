"""`softeval claims-explain`: every claim's estimates recomputed with pandas alone match
claims.csv, on hand-made per-example score files run through the real claims job."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from softeval.analysis import explain
from softeval.analysis.aggregate import aggregate_scores, write_summary
from softeval.cli import main
from softeval.jobs.claims import run_claims
from softeval.jobs.tables import run_tables
from softeval.settings import AnalysisSettings

N = 30
SETTINGS = AnalysisSettings(closed_tasks=(), steps=(0, 4, 8), reference_method="zero_shot", bootstrap=100, seed=0)
UNITS = [("zero_shot", None), ("few_shot", None), ("soft_prompt", 0), ("soft_prompt", 4), ("soft_prompt", 8)]


TWINNED = (("a", ("base", "post")), ("b", ("base", "post")), ("c", ("base",)))


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> Path:
    """results/ with random per-example verdicts (3 base models, 2 with a twin, 2 open tasks) and
    every table the claims job reads. Zero-shot never formats on t1 for base models: those units
    are at 0 (near zero, and a and b tied: claim 4 has something to count)."""
    return make_results(tmp_path_factory.mktemp("results"), TWINNED)


@pytest.fixture(scope="module")
def results_five(tmp_path_factory) -> Path:
    """The same with five models, each with a twin: claims 3 and 5's pairing guard is tested."""
    models = tuple((m, ("base", "post")) for m in "abcde")
    return make_results(tmp_path_factory.mktemp("results"), models)


def make_results(root: Path, models: tuple) -> Path:
    rng = np.random.default_rng(7)
    for task in ("t1", "t2"):
        for model, roles in models:
            for role in roles:
                for method, step in UNITS:
                    name = f"{method}/step{step}" if method == "soft_prompt" else method
                    p_format = 0.3 + 0.08 * (step or 0) if method == "soft_prompt" else 0.5
                    if (task, role, method) == ("t1", "base", "zero_shot"):
                        p_format = 0.0
                    rows = []
                    for i in range(N):
                        knowledge, fmt = bool(rng.random() < 0.6), bool(rng.random() < p_format)
                        rows.append(
                            {
                                "id": f"{task}-{i}",
                                "method": method,
                                "step": step,
                                "knowledge": knowledge,
                                "format": fmt,
                                "strict": knowledge and fmt,
                                "gold": "#### 7",
                                "response": " 7",
                                "judge": "rule",
                                "knowledge_from": "judge",
                            }
                        )
                    path = root / "scores" / model / role / task / f"{name}.jsonl"
                    path.parent.mkdir(parents=True, exist_ok=True)
                    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    summary = aggregate_scores(root / "scores", sorted((root / "scores").rglob("*.jsonl")), n_resamples=50, seed=0)
    tables = root / "tables"
    write_summary(summary, tables / "scores.csv", tables / "scores.parquet")
    run_tables(
        summary_path=tables / "scores.parquet",
        scores_root=root / "scores",
        loglik_root=root / "loglik",
        zoo_csv=None,
        settings=SETTINGS,
        out_dir=tables,
    )
    run_claims(
        summary_path=tables / "scores.parquet",
        swap_csv=tables / "swap_distance.csv",
        swap_draws=tables / "swap_distance_draws.parquet",
        scores_root=root / "scores",
        loglik_root=root / "loglik",
        settings=SETTINGS,
        out_stem=tables / "claims",
    )
    return root


@pytest.mark.parametrize("claim", [1, 2, 3, 4, 5])
def test_explain_recomputes_the_claims_tables_estimates(results, claim):
    table = explain.compare(results, claim)
    claims = pd.read_csv(results / "tables" / "claims.csv")
    expected = {
        1: {"open tasks: format climbs", "open tasks: format reaches >= 0.9", "open tasks: knowledge flat"},
        2: {f"{who} models vs {b}" for who in ("base", "post-trained") for b in ("zero-shot", "few-shot")},
        3: {"vs zero-shot", "vs few-shot", "vs the prompt before tuning"},
        4: {
            f"{b}: {what}"
            for b in ("zero-shot", "few-shot")
            for what in ("more near-zero scores than the soft prompt", "agreement owed to tie-breaks")
        },
        5: {f"vs {b}" for b in ("zero-shot", "few-shot")}
        | {"vs the prompt before tuning"}
        | {
            f"vs {b}: soft prompt not below it ({r} models)"
            for b in ("zero-shot", "few-shot")
            for r in ("base", "post-trained")
        },
    }[claim]
    assert set(table["part"]) == expected
    assert set(table["part"]) <= set(claims[claims["claim"] == claim]["part"])
    assert table["estimate"].notna().all() and table["match"].all(), table.to_string()
    assert table["recomputed"].abs().sum() > 0  # not trivially all zero


@pytest.mark.parametrize("claim", [3, 5])
def test_explain_recomputes_the_guards_with_five_twins(results_five, claim):
    table = explain.compare(results_five, claim).set_index("part")
    guards = ["vs the prompt before tuning", "own twins, not twins reassigned at random"]
    assert set(guards) <= set(table.index)
    assert table.loc[guards, "match"].all() and table.loc[guards, "recomputed"].abs().min() > 0, table.to_string()


def test_explain_imports_no_softeval_code():
    tree = ast.parse(Path(explain.__file__).read_text())
    imported = {
        alias.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names
    }
    imported |= {node.module.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    assert imported <= {"__future__", "json", "pathlib", "numpy", "pandas"}


def test_claims_explain_command_prints_both_columns(results, capsys):
    assert main(["claims-explain", "2", "--results", str(results)]) == 0
    out = capsys.readouterr().out
    assert "base models vs zero-shot" in out and "recomputed" in out and "estimate" in out
    assert main(["claims-explain", "4", "--results", str(results)]) == 0
    out = capsys.readouterr().out
    assert "zero-shot: more near-zero scores than the soft prompt" in out and "+0.500000" in out


def test_claims_explain_refuses_a_claim_with_nothing_to_recompute(results):
    assert main(["claims-explain", "6", "--results", str(results)]) != 0  # no such claim: says so


def test_explain_claim_3_and_4_values(results):
    """The values themselves, from the fixture's construction: zero-shot's base units on t1 are all
    at 0 (a/t1 and b/t1: 2 of the 4 twinned base units near zero, none under the soft prompt or
    few-shot); a and b tie there, so the tie-break term is +-0.5 on t1 and 0 elsewhere; the swap
    distances are those of the swap table's rows, recomputed."""
    four = explain.estimates(results, 4).set_index("part")["recomputed"]
    assert four["zero-shot: more near-zero scores than the soft prompt"] == 0.5
    assert four["few-shot: more near-zero scores than the soft prompt"] == 0.0
    assert abs(four["zero-shot: agreement owed to tie-breaks"]) == 0.5
    assert four["few-shot: agreement owed to tie-breaks"] == 0.0
    swap = pd.read_csv(results / "tables" / "swap_distance.csv").set_index(["task", "method"])["distance"]
    three = explain.estimates(results, 3).set_index("part")["recomputed"]
    for baseline, label in (("zero_shot", "zero-shot"), ("few_shot", "few-shot")):
        expected = swap[("all tasks", "soft_prompt")] - swap[("all tasks", baseline)]
        assert three[f"vs {label}"] == expected
    # a reference method other than the config's is another ranking: claims.csv no longer matches
    other = explain.compare(results, 3, reference="few_shot")
    assert set(other["part"]) == {"vs zero-shot", "vs few-shot", "vs the prompt before tuning"}


def test_swap_distance_and_tie_savings_by_hand():
    base = pd.Series({"a": 0.5, "b": 0.5, "c": 0.9})
    post = pd.Series({"a": 0.2, "b": 0.4, "c": 0.1})
    # rankings: base c > a > b (a, b tied: a first by name); post b > a > c: pairs (a,b), (a,c), (b,c) all differ
    assert explain.swap_distance(base, post) == 3
    assert explain.swap_distance(post, post) == 0
    # a, b tied in base; post puts b above a, against the names' order: random tie-breaks save 1/2
    assert explain.tie_savings(base, post) == -0.5
    assert explain.tie_savings(base, pd.Series({"a": 0.4, "b": 0.2, "c": 0.1})) == 0.5
    assert explain.tie_savings(post, base) == 0.0


def test_claims_md_names_inputs_interval_and_review_line(results):
    text = (results / "tables" / "claims.md").read_text()
    scores = "results/scores/<model>/base/<task>"
    assert f"{scores}/soft_prompt/step8.jsonl minus {scores}/zero_shot.jsonl" in text
    assert "interval: paired percentile bootstrap over test items (100 draws, seed 0" in text
    review = "`softeval review --model a --task t1 --method soft_prompt --step 8 --vs soft_prompt --vs-step 0"
    assert review + " --metric knowledge`" in text
    assert "reference method zero_shot (results/scores/<model>/post/<task>/zero_shot.jsonl)" in text
    assert "step 0 is the soft prompt before tuning" in text
    assert "units moved significantly" in text
