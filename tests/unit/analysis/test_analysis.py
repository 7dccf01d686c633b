"""Tables, claims, figures and review from a hand-made set of per-example verdicts."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pandas as pd
import pytest

from softeval.analysis.aggregate import aggregate_scores, write_summary
from softeval.analysis.claims import Inputs, check_claims, claim_verdicts
from softeval.analysis.figures import not_applicable
from softeval.analysis.review import format_example, list_units, unit_examples
from softeval.analysis.tables import (
    ALL_TASKS,
    consensus_table,
    knowledge_format_table,
    read_swap_draws,
    score_gap_table,
    swap_distance_table,
)
from softeval.jobs.claims import run_claims
from softeval.jobs.figures import run_figures
from softeval.jobs.report import UnitReader, per_example_reader
from softeval.jobs.tables import run_tables
from softeval.schema import InputError
from softeval.settings import AnalysisSettings

# True knowledge: a > b > c. Zero-shot and few-shot measure format (c > b > a); the soft
# prompt recovers knowledge; post-trained twins (zero-shot) rank by knowledge.
STRICT = {
    ("base", "zero_shot", None): {"a": 0.1, "b": 0.3, "c": 0.5},
    ("base", "few_shot", None): {"a": 0.1, "b": 0.3, "c": 0.5},
    ("base", "soft_prompt", 0): {"a": 0.0, "b": 0.1, "c": 0.4},
    ("base", "soft_prompt", 4): {"a": 0.8, "b": 0.6, "c": 0.3},
    ("post", "zero_shot", None): {"a": 0.9, "b": 0.7, "c": 0.4},
    ("post", "few_shot", None): {"a": 0.8, "b": 0.7, "c": 0.4},
    ("post", "soft_prompt", 0): {"a": 0.9, "b": 0.7, "c": 0.4},
    ("post", "soft_prompt", 4): {"a": 1.0, "b": 0.7, "c": 0.5},
}
N = 10
SETTINGS = AnalysisSettings(closed_tasks=(), steps=(0, 4), bootstrap=200, seed=0)


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> Path:
    """results/ with scores, generations and the tidy table for two tasks."""
    root = tmp_path_factory.mktemp("results")
    for task in ("t1", "t2"):
        for (role, method, step), table in STRICT.items():
            name = f"{method}/step{step}" if method == "soft_prompt" else method
            for model, share in table.items():
                right = round(share * N)
                rows = []
                for i in range(N):
                    ok = i < right
                    fmt = ok or (method == "soft_prompt" and step == 4)
                    rows.append(
                        {
                            "id": f"{task}-{i}",
                            "method": method,
                            "step": step,
                            "knowledge": ok or i == N - 1,
                            "format": fmt,
                            "strict": ok,
                            "gold": "#### 7",
                            "response": " 7" if ok else " x",
                            "judge": "rule",
                            "knowledge_from": "judge",
                        }
                    )
                for kind in ("scores", "generations"):
                    path = root / kind / model / role / task / f"{name}.jsonl"
                    path.parent.mkdir(parents=True, exist_ok=True)
                    extra = {"prompt": "Q?\nAnswer:", "stop_reason": "eos"} if kind == "generations" else {}
                    path.write_text("".join(json.dumps({**r, **extra}) + "\n" for r in rows))
    paths = sorted((root / "scores").rglob("*.jsonl"))
    summary = aggregate_scores(root / "scores", paths, n_resamples=200, seed=0)
    write_summary(summary, root / "tables" / "scores.csv", root / "tables" / "scores.parquet")
    pd.DataFrame(
        {"model": ["a", "b", "c"] * 2, "role": ["base"] * 3 + ["post"] * 3, "knowledge": [0.9, 0.6, 0.3] * 2}
    ).to_csv(root / "tables" / "zoo.csv", index=False)
    return root


def summary_of(results):
    return pd.read_parquet(results / "tables" / "scores.parquet")


def test_aggregate_means_and_intervals(results):
    summary = summary_of(results)
    assert len(summary) == 2 * 3 * len(STRICT)
    row = summary[(summary.model == "a") & (summary.role == "base") & (summary.method == "zero_shot")].iloc[0]
    assert row["strict"] == pytest.approx(0.1) and row["n"] == N
    assert row["strict_low"] <= row["strict"] <= row["strict_high"] and row["strict_high"] > row["strict_low"]
    constant = summary[(summary.method == "soft_prompt") & (summary.step == 4) & (summary.role == "base")]
    assert (constant["format_low"] == 1.0).all() and (constant["format_high"] == 1.0).all()


def test_swap_distances_and_ground_truth(results):
    summary = summary_of(results)
    swap = swap_distance_table(
        summary,
        per_example_reader(results / "scores", summary, "strict"),
        SETTINGS,
        truth={"a": 0.9, "b": 0.6, "c": 0.3},
    )
    one = swap[swap.task == "t1"].set_index("method")
    assert one.loc["zero_shot", "distance"] == 3 and one.loc["soft_prompt", "distance"] == 0
    assert one.loc["soft_prompt", "truth_distance"] == 0 and one.loc["few_shot", "truth_distance"] == 3
    assert one.loc["zero_shot", "kendall_tau_b"] == pytest.approx(-1.0)
    assert one.loc["soft_prompt", "ci_low"] <= 0 <= one.loc["soft_prompt", "ci_high"]
    total = swap[swap.task == ALL_TASKS].set_index("method")
    assert total.loc["zero_shot", "distance"] == 6 and total.loc["soft_prompt", "distance"] == 0
    consensus = consensus_table(swap, truth={"a": 0.9, "b": 0.6, "c": 0.3}).set_index("method")
    assert consensus.loc["zero_shot", "base_consensus"] == "c > b > a"
    assert (
        consensus.loc["zero_shot", "distance_to_post"] == 3 and consensus.loc["soft_prompt", "distance_to_truth"] == 0
    )
    assert (consensus["kemeny_distance"] == 0).all()  # both tasks agree under every method


def test_score_gap_and_knowledge_format(results):
    summary = summary_of(results)
    gap = score_gap_table(summary, SETTINGS)
    zs = gap[(gap.task == "t1") & (gap.method == "zero_shot")].iloc[0]
    assert zs["gap_signed"] == pytest.approx(((0.9 - 0.1) + (0.7 - 0.3) + (0.4 - 0.5)) / 3)
    assert zs["gap_abs"] == pytest.approx((0.8 + 0.4 + 0.1) / 3)
    kf = knowledge_format_table(summary)
    sp4 = kf[(kf.role == "base") & (kf.method == "soft_prompt") & (kf.step == 4)].iloc[0]
    assert sp4["format"] == 1.0 and sp4["units"] == 6
    assert sp4["strict"] == pytest.approx((0.8 + 0.6 + 0.3) / 3)


def test_claims_are_computed(results):
    summary = summary_of(results)
    swap = swap_distance_table(summary, per_example_reader(results / "scores", summary, "strict"), SETTINGS)
    reader = UnitReader(results / "scores")
    inputs = Inputs(summary=summary, swap=swap, read=reader, closed_tasks=set(), settings=SETTINGS)
    parts = check_claims(inputs)
    verdicts = claim_verdicts(parts)
    three = parts[parts["claim"] == 3].set_index("part")
    # 0 swaps against 6 (zero- and few-shot), 10 examples per unit; three models: their 6 reassignments
    # cannot tell the twins as paired from random ones at 2.5%, so the claim as a whole is not shown
    assert three.loc["vs zero-shot", "verdict"] == three.loc["vs few-shot", "verdict"] == "holds"
    assert three.loc["own twins, not twins reassigned at random", "verdict"] == "not applicable"
    assert verdicts[3] == "not shown"
    assert (
        "soft prompt 0" in three.loc["vs zero-shot", "evidence"]
        and "zero-shot 6" in three.loc["vs zero-shot", "evidence"]
    )
    # knowledge is the strict score plus the last example: it moves with the strict score from step 0 to 4
    assert verdicts[1] == "refuted"


def test_table_figure_and_claim_jobs_write_every_file(results, tmp_path):
    settings = AnalysisSettings(closed_tasks=(), steps=(0, 4), reference_method="zero_shot", bootstrap=100, seed=0)
    summary = results / "tables" / "scores.parquet"
    run_tables(
        summary_path=summary,
        scores_root=results / "scores",
        loglik_root=results / "loglik",
        zoo_csv=results / "tables" / "zoo.csv",
        settings=settings,
        out_dir=tmp_path,
    )
    for name in ("swap_distance", "score_gap", "knowledge_format", "consensus", "unit_checks"):
        for ext in ("csv", "md", "tex"):
            assert (tmp_path / f"{name}.{ext}").stat().st_size > 0
    checks = pd.read_csv(tmp_path / "unit_checks.csv").set_index(["task", "model"])
    a, c = checks.loc[("t1", "a")], checks.loc[("t1", "c")]
    # a: soft prompt 8/10 right, zero-shot 1/10 (the same first example): 7 examples only the soft prompt gets
    assert (a["only_soft_prompt_vs_zero_shot"], a["only_zero_shot"]) == (7, 0)
    assert a["p_vs_zero_shot"] == pytest.approx(2 * 0.5**7, abs=1e-4) and bool(a["strict_ok"])
    assert (c["only_soft_prompt_vs_few_shot"], c["only_few_shot"], c["p_vs_few_shot"]) == (0, 2, 0.5)
    # two examples, p = 0.5: within noise, not a shortfall
    assert c["vs_few_shot"] == "within noise" and bool(c["strict_ok"])
    assert bool(c["format_ok"]) and pd.isna(c["knowledge_flat_ok"])  # open task
    assert c["knowledge_change"] == pytest.approx(0.3 - 0.4)
    assert "format >= 0.9 in 6 of 6 units" in (tmp_path / "unit_checks.md").read_text()
    tex = (tmp_path / "swap_distance.tex").read_text()
    assert r"\toprule" in tex and r"\textbf{0}" in tex and "soft\\_prompt" in tex
    run_figures(
        summary_path=summary,
        swap_csv=tmp_path / "swap_distance.csv",
        gap_csv=tmp_path / "score_gap.csv",
        settings=settings,
        out_dir=tmp_path / "fig",
    )
    assert len(list((tmp_path / "fig").glob("*.png"))) == len(list((tmp_path / "fig").glob("*.pdf"))) == 4
    run_claims(
        summary_path=summary,
        swap_csv=tmp_path / "swap_distance.csv",
        swap_draws=tmp_path / "swap_distance_draws.parquet",
        scores_root=results / "scores",
        loglik_root=results / "loglik",
        settings=settings,
        out_stem=tmp_path / "claims",
    )
    text = (tmp_path / "claims.md").read_text()
    # claim 3 read the tables job's bootstrap draws; computed again from the per-example files they agree
    draws = read_swap_draws(tmp_path / "swap_distance_draws.parquet", settings.bootstrap)
    with pytest.raises(InputError, match="not the settings' bootstrap of 50"):
        read_swap_draws(tmp_path / "swap_distance_draws.parquet", 50)
    assert sorted(draws) == [(t, m) for t in ("t1", "t2") for m in ("few_shot", "soft_prompt", "zero_shot")]
    assert all(len(d) == settings.bootstrap for d in draws.values())
    reader = UnitReader(results / "scores")
    fresh = Inputs(
        summary=summary_of(results), swap=pd.read_csv(tmp_path / "swap_distance.csv"), read=reader,
        closed_tasks=set(), settings=settings, items=reader.items(summary_of(results)),
    )  # fmt: skip
    written = pd.read_csv(tmp_path / "claims.csv")
    recomputed = check_claims(fresh)
    for frame in (written, recomputed):
        assert len(frame[frame["claim"] == 3]) == 4  # vs zero-shot, vs few-shot and the two guards
    three = [
        f[f["claim"] == 3][["part", "estimate", "ci_low", "ci_high"]].reset_index(drop=True)
        for f in (written, recomputed)
    ]
    pd.testing.assert_frame_equal(three[0], three[1].round(4), check_dtype=False)
    # three models: the pairing guard is not applicable, so the claim is not shown
    assert "## 3. Soft-prompted base rankings predict post-trained rankings — not shown" in text
    assert "to the zoo's true knowledge ranking: soft prompt 0, zero-shot 6" in text
    assert "true knowledge ranking" in text and "## 4." in text and "## 5." in text


def test_table_job_names_the_score_files_whose_examples_differ(results, tmp_path):
    copy = tmp_path / "results"
    shutil.copytree(results, copy)
    for model in ("a", "b", "c"):  # every model's zero-shot file loses its first example
        path = copy / "scores" / model / "base" / "t1" / "zero_shot.jsonl"
        path.write_text("".join(path.read_text().splitlines(keepends=True)[1:]))
    settings = AnalysisSettings(closed_tasks=(), steps=(0, 4), reference_method="zero_shot", bootstrap=10, seed=0)
    zero_shot = copy / "scores" / "a" / "base" / "t1" / "zero_shot.jsonl"
    step4 = copy / "scores" / "a" / "base" / "t1" / "soft_prompt" / "step4.jsonl"
    with pytest.raises(InputError, match=re.escape(f"{zero_shot} and {step4} score different test examples")):
        run_tables(
            summary_path=copy / "tables" / "scores.parquet",
            scores_root=copy / "scores",
            loglik_root=copy / "loglik",
            zoo_csv=None,
            settings=settings,
            out_dir=tmp_path / "tables",
        )


def test_review_lists_units_and_shows_examples(results):
    units = list_units(results, model="a", role="base", method="zero_shot")
    assert len(list_units(results, model="a", role="base", method="soft_prompt", step=4)) == 2  # both tasks
    with pytest.raises(InputError, match=r"scores.csv has no model 'zz'; it has: a, b, c"):
        list_units(results, model="zz")
    with pytest.raises(InputError, match=r"no unit matches model=a, step=99"):
        list_units(results, model="a", step=99)
    assert len(units) == 2 and set(units["task"]) == {"t1", "t2"}
    wrong = unit_examples(results, "a", "base", "t1", "zero_shot", None, "not-strict")
    assert len(wrong) == N - 1 and all(not e["strict"] for e in wrong)
    text = format_example(wrong[0])
    assert "prompt   | Answer:" in text and "gold     | '#### 7'" in text and "strict=no" in text
    with pytest.raises(InputError, match="pass --step"):
        unit_examples(results, "a", "base", "t1", "soft_prompt", None)
    with pytest.raises(InputError, match="not found"):
        unit_examples(results, "zz", "base", "t1", "zero_shot", None)


def test_paired_split_and_exact_mcnemar():
    from softeval.analysis.unit_checks import Paired, paired

    assert Paired(0, 0).p_value == 1.0 and Paired(0, 1).p_value == 1.0
    assert Paired(0, 6).p_value == pytest.approx(0.03125) and Paired(6, 0).p_value == pytest.approx(0.03125)
    first = [{"id": i, "strict": ok} for i, ok in enumerate([1, 1, 0, 0, 1])]
    second = [{"id": i, "strict": ok} for i, ok in enumerate([1, 0, 1, 0, 0])]
    assert paired(first, second, "strict") == Paired(2, 1)
    with pytest.raises(ValueError):
        paired(first, second[::-1], "strict")


def test_unit_checks_name_the_unit_whose_files_disagree_and_skip_missing_methods():
    from softeval.analysis.unit_checks import summary_line, unit_checks

    def read(model, task, method, step):
        ids = range(4) if method != "zero_shot" else range(1, 5)
        return [{"id": i, "strict": 1, "knowledge": 1, "format": 1} for i in ids]

    with pytest.raises(InputError, match=r"^m/t zero_shot and m/t soft_prompt step 4 score different"):
        unit_checks(["m"], ["t"], ["zero_shot"], read, SETTINGS)

    def locate(model, task, method, step):
        return f"/runs/{model}/{task}/{method}{step}.jsonl"

    with pytest.raises(InputError, match=r"^/runs/m/t/zero_shotNone.jsonl and /runs/m/t/soft_prompt4.jsonl score"):
        unit_checks(["m"], ["t"], ["zero_shot"], read, SETTINGS, locate)
    only_few_shot = unit_checks(["m"], ["t"], ["few_shot"], read, SETTINGS)
    assert "strict_zero_shot" not in only_few_shot.columns and bool(only_few_shot["strict_ok"].iloc[0])
    assert (
        summary_line(unit_checks([], ["t"], ["few_shot"], read, SETTINGS), "strict")
        == "no soft-prompt units in this run"
    )


# ---- models without a post-trained twin ---------------------------------------------------------


def without_post(results: Path, folder: Path, *models: str) -> Path:
    """A copy of the results whose `models` have no post-trained twin (base-only entries), re-aggregated."""
    copy = folder / "results"
    shutil.copytree(results, copy)
    for model in models:
        for kind in ("scores", "generations"):
            shutil.rmtree(copy / kind / model / "post")
    paths = sorted((copy / "scores").rglob("*.jsonl"))
    write_summary(
        aggregate_scores(copy / "scores", paths, n_resamples=200, seed=0),
        copy / "tables" / "scores.csv",
        copy / "tables" / "scores.parquet",
    )
    return copy


def test_rankings_and_gaps_of_post_trained_models_leave_out_models_without_a_twin(results, tmp_path):
    mixed = without_post(results, tmp_path, "c")
    summary = summary_of(mixed)
    assert set(summary[summary.role == "post"]["model"]) == {"a", "b"}
    swap = swap_distance_table(
        summary,
        per_example_reader(mixed / "scores", summary, "strict"),
        SETTINGS,
        truth={"a": 0.9, "b": 0.6, "c": 0.3},
    )
    one = swap[swap.task == "t1"].set_index("method")
    # over a and b only: zero-shot b (0.3) > a (0.1), post-trained a (0.9) > b (0.7)
    assert one.loc["zero_shot", "base_ranking"] == "b > a" and one.loc["zero_shot", "post_ranking"] == "a > b"
    assert one.loc["zero_shot", "distance"] == 1 and one.loc["soft_prompt", "distance"] == 0
    assert one.loc["few_shot", "truth_distance"] == 1 and one.loc["soft_prompt", "truth_distance"] == 0
    total = swap[swap.task == ALL_TASKS].set_index("method")
    assert total.loc["zero_shot", "distance"] == 2 and total.loc["soft_prompt", "distance"] == 0
    assert set(swap["note"]) == {"ranked: a, b; no post-trained twin: c"}
    consensus = consensus_table(swap).set_index("method")
    assert (
        consensus.loc["zero_shot", "base_consensus"] == "b > a"
        and consensus.loc["zero_shot", "post_consensus"] == "a > b"
    )
    gap = score_gap_table(summary, SETTINGS)
    zs = gap[(gap.task == "t1") & (gap.method == "zero_shot")].iloc[0]
    assert zs["gap_signed"] == pytest.approx(((0.9 - 0.1) + (0.7 - 0.3)) / 2)
    assert zs["gap_abs"] == pytest.approx((0.8 + 0.4) / 2) and zs["base"] == pytest.approx(0.2)
    assert set(gap["note"]) == {"mean over a, b; no post-trained twin: c"}
    full = score_gap_table(summary_of(results), SETTINGS)
    assert (
        "note" not in full.columns
        and "note"
        not in swap_distance_table(
            summary_of(results), per_example_reader(results / "scores", summary_of(results), "strict"), SETTINGS
        ).columns
    )  # every model has a twin: the tables stay as they were


def test_without_two_twins_the_ranking_comparison_is_not_applicable(results, tmp_path):
    solo = without_post(results, tmp_path, "b", "c")
    summary = summary_of(solo)
    swap = swap_distance_table(summary, per_example_reader(solo / "scores", summary, "strict"), SETTINGS)
    reason = "not applicable: fewer than 2 models with a post-trained twin (a has one; b, c are base only)"
    assert len(swap) == 3 * 3  # every method per task and over all tasks, none computed
    assert swap["distance"].isna().all() and set(swap["note"]) == {reason}
    assert set(consensus_table(swap)["note"]) == {reason}
    gap = score_gap_table(summary, SETTINGS)  # a still has its gap
    zs = gap[(gap.task == "t1") & (gap.method == "zero_shot")].iloc[0]
    assert zs["gap_signed"] == pytest.approx(0.9 - 0.1) and zs["note"] == "mean over a; no post-trained twin: b, c"
    bases = summary[summary.role == "base"]
    none = swap_distance_table(bases, per_example_reader(solo / "scores", bases, "strict"), SETTINGS)
    assert set(none["note"]) == {"not applicable: no post-trained models (every model is base only)"}
    gap = score_gap_table(bases, SETTINGS)
    assert len(gap) == 3 * 3 and gap["gap_abs"].isna().all()
    assert set(gap["note"]) == {"not applicable: no model has a post-trained twin"}


def test_report_jobs_run_on_models_without_a_post_trained_twin(results, tmp_path):
    solo = without_post(results, tmp_path, "b", "c")
    settings = AnalysisSettings(closed_tasks=(), steps=(0, 4), reference_method="zero_shot", bootstrap=100, seed=0)
    summary = solo / "tables" / "scores.parquet"
    out = tmp_path / "tables"
    run_tables(
        summary_path=summary,
        scores_root=solo / "scores",
        loglik_root=solo / "loglik",
        zoo_csv=None,
        settings=settings,
        out_dir=out,
    )
    swap_md = (out / "swap_distance.md").read_text()
    assert "fewer than 2 models with a post-trained twin" in swap_md
    gap_md = (out / "score_gap.md").read_text()
    assert gap_md.startswith("Score gap") and "no post-trained twin: b, c" in gap_md.splitlines()[0]
    assert len(pd.read_csv(out / "unit_checks.csv")) == 2 * 3  # every base model and task
    kf = pd.read_csv(out / "knowledge_format.csv")
    assert set(kf[kf.role == "post"]["units"]) == {2}  # a's two tasks
    run_figures(
        summary_path=summary,
        swap_csv=out / "swap_distance.csv",
        gap_csv=out / "score_gap.csv",
        settings=settings,
        out_dir=tmp_path / "fig",
    )
    assert len(list((tmp_path / "fig").glob("*.png"))) == len(list((tmp_path / "fig").glob("*.pdf"))) == 4
    # the swap figure says why instead of drawing empty axes; the gap figure has a's bars
    assert not_applicable(pd.read_csv(out / "swap_distance.csv"), "distance", "swap", tmp_path / "na")
    assert not not_applicable(pd.read_csv(out / "score_gap.csv"), "gap_abs", "gap", tmp_path / "gap")
    assert (tmp_path / "na.png").is_file() and not (tmp_path / "gap.png").exists()
    run_claims(
        summary_path=summary,
        swap_csv=out / "swap_distance.csv",
        swap_draws=out / "swap_distance_draws.parquet",
        scores_root=solo / "scores",
        loglik_root=solo / "loglik",
        settings=settings,
        out_stem=out / "claims",
    )
    text = (out / "claims.md").read_text()
    assert "## 3. Soft-prompted base rankings predict post-trained rankings — not applicable" in text
    assert "fewer than 2 models with a post-trained twin (a has one; b, c are base only)" in text
    parts = pd.read_csv(out / "claims.csv")
    five = parts[parts.claim == 5].set_index("part")
    assert five.loc["models without a post-trained twin", "evidence"] == "no post-trained twin: b, c"
    assert "over 2 units" in five.loc["vs zero-shot", "evidence"]  # a on two tasks


def test_one_model_with_its_twin_has_gaps_but_no_ranking(results, tmp_path):
    solo = tmp_path / "results"
    shutil.copytree(results, solo)
    for model in ("b", "c"):
        for kind in ("scores", "generations"):
            shutil.rmtree(solo / kind / model)
    paths = sorted((solo / "scores").rglob("*.jsonl"))
    write_summary(aggregate_scores(solo / "scores", paths, 200, 0), solo / "tables" / "scores.csv")
    summary = pd.read_csv(solo / "tables" / "scores.csv", dtype={"step": "Int64"})
    swap = swap_distance_table(summary, per_example_reader(solo / "scores", summary, "strict"), SETTINGS)
    assert swap["distance"].isna().all() and set(swap["note"]) == {"not applicable: one model: no ranking to compare"}
    gap = score_gap_table(summary, SETTINGS)
    assert "note" not in gap.columns and gap["gap_abs"].notna().all()  # a has its twin: nothing left out


def test_llm_judged_is_the_share_of_a_units_verdicts_not_made_by_the_rule_judge(tmp_path):
    """scores.csv's llm_judged: what share of a unit's verdicts the cascade passed to the LLM judge."""
    path = tmp_path / "scores" / "a" / "base" / "t1" / "zero_shot.jsonl"
    path.parent.mkdir(parents=True)
    judges = ["rule", "hf:judge", "rule", "hf:judge", "rule"]
    rows = [{"id": str(i), "knowledge": 1, "format": 1, "strict": 1, "judge": j} for i, j in enumerate(judges)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    table = aggregate_scores(tmp_path / "scores", [path], n_resamples=10, seed=0)
    assert table["llm_judged"].tolist() == [pytest.approx(2 / 5)]
