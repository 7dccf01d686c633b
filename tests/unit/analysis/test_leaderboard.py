"""The base-model leaderboard from hand-made score files in the real layout: places, ties,
separability, validity flags, fallbacks and the written table."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from softeval.analysis.evidence import Interval
from softeval.analysis.leaderboard import (
    MOVED,
    NOT_EVALUATED,
    NOT_SHOWN_FLAT,
    SEPARABLE,
    WITHIN_NOISE,
    build_leaderboard,
    checks,
    degenerate_share,
    leaderboard_from_settings,
    looks_degenerate,
    place_models,
    tie_blocks,
    write_leaderboard,
)
from softeval.analysis.tables import ALL_TASKS
from softeval.layout import unit_path
from softeval.schema import InputError
from softeval.settings import AnalysisSettings

N = 100
STEP = 8
BOOT = 200


def ones(count: int, start: int = 0, n: int = N) -> list[bool]:
    """n verdicts, true at positions start .. start+count-1."""
    return [start <= i < start + count for i in range(n)]


def write_unit(
    root: Path,
    model: str,
    task: str,
    method: str = "soft_prompt",
    *,
    role: str = "base",
    strict: list[bool] | None = None,
    knowledge: list[bool] | None = None,
    fmt: list[bool] | None = None,
    responses: list[str] | None = None,
    golds: list[str] | None = None,
    extra: list[dict] | None = None,
    ids: list[str] | None = None,
) -> None:
    """One unit's score file: strict defaults to nothing right, knowledge to strict, format to all."""
    strict = strict if strict is not None else ones(0)
    n = len(strict)
    knowledge = knowledge if knowledge is not None else strict
    fmt = fmt if fmt is not None else [True] * n
    rows = []
    for i in range(n):
        row = {
            "id": (ids or [f"{task}-{k}" for k in range(n)])[i],
            "method": method,
            "step": STEP if method == "soft_prompt" else None,
            "knowledge": bool(knowledge[i]),
            "format": bool(fmt[i]),
            "strict": bool(strict[i]),
            "gold": golds[i] if golds else "#### 7",
            "response": responses[i] if responses else f"#### {i}",
            "judge": "rule",
            "knowledge_from": "judge",
        }
        rows.append(row | (extra[i] if extra else {}))
    path = unit_path(root / "scores", model, role, task, method, STEP if method == "soft_prompt" else None)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def write_model(root: Path, model: str, task: str, *, role: str = "base", **unit) -> None:
    """A model's soft-prompt unit and a zero-shot unit of the same knowledge (a flat prompt)."""
    write_unit(root, model, task, role=role, **unit)
    write_unit(root, model, task, "zero_shot", role=role, knowledge=unit.get("knowledge", unit.get("strict")))


def board(root: Path, **kwargs) -> pd.DataFrame:
    kwargs.setdefault("bootstrap", BOOT)
    return build_leaderboard(root / "scores", kwargs.pop("models", None), kwargs.pop("tasks", None), STEP, **kwargs)


def rows_of(table: pd.DataFrame, task: str = ALL_TASKS) -> dict[str, dict]:
    return {r["model"]: r for r in table[table["task"] == task].to_dict("records")}


# ----------------------------------------------------------------------------- places


def test_ranks_and_separable_places(tmp_path):
    for task in ("t1", "t2"):
        write_model(tmp_path, "kappa", task, strict=ones(90))
        write_model(tmp_path, "alpha", task, strict=ones(50))
        write_model(tmp_path, "mu", task, strict=ones(10))
    table = board(tmp_path)
    assert list(table["task"].unique()) == [ALL_TASKS, "t1", "t2"]
    assert list(table[table["task"] == ALL_TASKS]["model"]) == ["kappa", "alpha", "mu"]  # by score, not name
    for task in (ALL_TASKS, "t1"):
        rows = rows_of(table, task)
        assert {m: r["rank"] for m, r in rows.items()} == {"kappa": 1, "alpha": 2, "mu": 3}
        assert {m: r["place"] for m, r in rows.items()} == {"kappa": "1", "alpha": "2", "mu": "3"}
        assert rows["kappa"]["vs_above"] == "" and rows["kappa"]["above"] == ""
        assert rows["alpha"]["vs_above"] == SEPARABLE and rows["alpha"]["above"] == "kappa"
        assert rows["mu"]["vs_above"] == SEPARABLE and rows["mu"]["above"] == "alpha"
        assert rows["alpha"]["diff_above"] == pytest.approx(0.4)
        assert 0 < rows["alpha"]["diff_above_low"] <= 0.4 <= rows["alpha"]["diff_above_high"]
        assert rows["kappa"]["strict"] == pytest.approx(0.9)
        assert rows["kappa"]["strict_low"] < 0.9 < rows["kappa"]["strict_high"]
        assert rows["mu"]["knowledge"] == pytest.approx(0.1) and rows["mu"]["format"] == pytest.approx(1.0)
    rows = rows_of(table)
    assert rows["kappa"]["n"] == 2 * N and rows_of(table, "t1")["kappa"]["n"] == N
    assert rows["kappa"]["method"] == f"soft_prompt step {STEP}"
    assert table.attrs["metric"] == "strict" and "ranked by strict" in table.attrs["caption"]


@pytest.mark.parametrize("names", [("zulu", "alpha", "mike"), ("alpha", "zulu", "mike"), ("mike", "zulu", "alpha")])
def test_identical_scores_share_a_place_whatever_the_names(tmp_path, names):
    """Two models at 0.000 are tied, never ordered by name; a third is above them."""
    zero_a, zero_b, best = names
    write_model(tmp_path, zero_a, "t", strict=ones(0))
    write_model(tmp_path, zero_b, "t", strict=ones(0))
    write_model(tmp_path, best, "t", strict=ones(40))
    table = board(tmp_path)
    for task in (ALL_TASKS, "t"):
        rows = rows_of(table, task)
        assert rows[best]["rank"] == 1 and rows[best]["place"] == "1"
        assert rows[zero_a]["rank"] == rows[zero_b]["rank"] == 2
        assert rows[zero_a]["place"] == rows[zero_b]["place"] == "2="
        assert rows[zero_a]["tied_with"] == zero_b and rows[zero_b]["tied_with"] == zero_a
        assert rows[zero_a]["vs_above"] == rows[zero_b]["vs_above"] == SEPARABLE
        assert rows[best]["tied_with"] == ""


def test_equal_scores_on_different_examples_are_tied(tmp_path):
    write_model(tmp_path, "beta", "t", strict=ones(50, start=0))
    write_model(tmp_path, "alpha", "t", strict=ones(50, start=50))
    rows = rows_of(board(tmp_path), "t")
    assert rows["alpha"]["rank"] == rows["beta"]["rank"] == 1
    assert rows["alpha"]["place"] == "1=" and rows["alpha"]["vs_above"] == ""


def test_one_example_apart_is_within_noise(tmp_path):
    write_model(tmp_path, "aa", "t", strict=ones(50))
    write_model(tmp_path, "zz", "t", strict=ones(51))
    write_model(tmp_path, "mm", "t", strict=ones(5))
    rows = rows_of(board(tmp_path), "t")
    assert rows["zz"]["rank"] == 1 and rows["aa"]["rank"] == 2 and rows["mm"]["rank"] == 3
    assert rows["aa"]["vs_above"] == WITHIN_NOISE
    assert rows["aa"]["diff_above"] == pytest.approx(0.01) and rows["aa"]["diff_above_low"] <= 0
    assert rows["mm"]["vs_above"] == SEPARABLE


def test_separable_only_from_every_model_of_the_tied_place_above(tmp_path):
    """Below a tie, a model is separable only if it is from each tied model."""
    write_model(tmp_path, "p", "t", strict=ones(30, start=0))
    write_model(tmp_path, "q", "t", strict=ones(30, start=70))
    write_model(tmp_path, "r", "t", strict=ones(25, start=0))  # p's examples but five: separable from p only
    rows = rows_of(board(tmp_path), "t")
    assert rows["r"]["rank"] == 3 and rows["r"]["above"] == "p, q"
    assert rows["r"]["vs_above"] == WITHIN_NOISE
    assert rows["r"]["diff_above"] == pytest.approx(0.05) and rows["r"]["diff_above_low"] < 0  # q's: least separable
    write_model(tmp_path, "q", "t", strict=ones(30, start=0))  # now q answers as p does
    rows = rows_of(board(tmp_path), "t")
    assert rows["r"]["vs_above"] == SEPARABLE and rows["r"]["diff_above_low"] > 0


def test_metric_knowledge_changes_the_order(tmp_path):
    write_model(tmp_path, "formatter", "t", strict=ones(60), knowledge=ones(60))
    write_model(tmp_path, "knower", "t", strict=ones(20), knowledge=ones(90))
    strict = rows_of(board(tmp_path), "t")
    assert strict["formatter"]["rank"] == 1 and strict["knower"]["rank"] == 2
    table = board(tmp_path, metric="knowledge")
    knowledge = rows_of(table, "t")
    assert knowledge["knower"]["rank"] == 1 and knowledge["formatter"]["rank"] == 2
    assert knowledge["formatter"]["vs_above"] == SEPARABLE
    assert knowledge["formatter"]["diff_above"] == pytest.approx(0.3)
    assert table.attrs["metric"] == "knowledge"
    rows = rows_of(board(tmp_path, metric="format"))
    assert rows["knower"]["place"] == rows["formatter"]["place"] == "1="  # both fully formatted
    with pytest.raises(InputError, match="metric 'accuracy'"):
        board(tmp_path, metric="accuracy")


def test_renamed_models_keep_their_places(tmp_path):
    """The same scores under permuted names: every score keeps its rank and place."""
    shares = [40, 0, 40, 75, 0]
    names = ["ant", "bee", "cat", "dog", "eel"]
    results = []
    for k, order in enumerate([names, names[::-1], ["dog", "ant", "eel", "bee", "cat"]]):
        root = tmp_path / str(k)
        for name, share in zip(order, shares, strict=True):
            write_model(root, name, "t", strict=ones(share))
        rows = rows_of(board(root), "t")
        results.append([(rows[name]["rank"], rows[name]["place"], rows[name]["vs_above"]) for name in order])
    assert results[0] == results[1] == results[2]
    assert results[0] == [
        (2, "2=", SEPARABLE),
        (4, "4=", SEPARABLE),
        (2, "2=", SEPARABLE),
        (1, "1", ""),
        (4, "4=", SEPARABLE),
    ]


# ----------------------------------------------------------------------------- flags


def test_clean_units_raise_no_flag(tmp_path):
    write_model(tmp_path, "clean", "t", strict=ones(60))
    write_model(tmp_path, "clean", "t", role="post", strict=ones(80))
    row = rows_of(board(tmp_path), "t")["clean"]
    assert row["flag_format"] is False
    assert row["knowledge_vs_baseline"] == "flat" and row["flag_knowledge_moved"] is False
    assert row["knowledge_change"] == 0 and row["knowledge_change_low"] == row["knowledge_change_high"] == 0
    assert row["knowledge_vs_baseline_post"] == "flat" and row["flag_knowledge_moved_post"] is False
    assert row["flag_choices_collapsed"] is None  # an open task: no options to collapse
    assert row["degenerate"] == 0 and row["degenerate_source"] == "local" and row["flag_degenerate"] is False
    assert row["flags"] == ""
    assert rows_of(board(tmp_path))["clean"]["flags"] == ""


def test_format_below_threshold_is_flagged(tmp_path):
    write_model(tmp_path, "loose", "t", strict=ones(50), fmt=ones(85))
    write_model(tmp_path, "tight", "t", strict=ones(50), fmt=ones(90))
    rows = rows_of(board(tmp_path), "t")
    assert rows["loose"]["flag_format"] is True and rows["loose"]["flags"] == "format < 0.9"
    assert rows["tight"]["flag_format"] is False  # 0.90 is saturated


def test_knowledge_moved_against_zero_shot(tmp_path):
    write_unit(tmp_path, "moved", "t", strict=ones(70), knowledge=ones(80))
    write_unit(tmp_path, "moved", "t", "zero_shot", knowledge=ones(20))
    write_unit(tmp_path, "unclear", "t", strict=ones(40), knowledge=ones(45))
    write_unit(tmp_path, "unclear", "t", "zero_shot", knowledge=ones(40))  # +0.05: interval across the margin
    write_model(tmp_path, "flat", "t", strict=ones(40))
    write_unit(tmp_path, "nozero", "t", strict=ones(40))  # no zero-shot unit: not tested
    table = board(tmp_path)
    rows = rows_of(table, "t")
    assert rows["moved"]["knowledge_vs_baseline"] == MOVED and rows["moved"]["flag_knowledge_moved"] is True
    assert rows["moved"]["knowledge_change"] == pytest.approx(0.6) and rows["moved"]["knowledge_change_low"] > 0.05
    assert rows["moved"]["flags"] == "knowledge moved vs zero_shot (base)"
    assert rows["unclear"]["knowledge_vs_baseline"] == NOT_SHOWN_FLAT
    # too few examples to show it flat is no finding: the state column says so, the flag stays down
    assert rows["unclear"]["flag_knowledge_moved"] is False
    assert rows["unclear"]["knowledge_change_low"] < 0.05 < rows["unclear"]["knowledge_change_high"]
    assert rows["flat"]["flag_knowledge_moved"] is False
    assert rows["nozero"]["knowledge_vs_baseline"] == NOT_EVALUATED and rows["nozero"]["flag_knowledge_moved"] is None
    overall = rows_of(table)
    assert overall["moved"]["flag_knowledge_moved"] is True
    assert overall["moved"]["flags"] == "knowledge moved vs zero_shot (base) (t)"
    assert overall["flat"]["flag_knowledge_moved"] is False and overall["nozero"]["flag_knowledge_moved"] is None


def test_post_role_knowledge_moved(tmp_path):
    write_model(tmp_path, "twin", "t", strict=ones(50))
    write_unit(tmp_path, "twin", "t", role="post", strict=ones(90), knowledge=ones(95))
    write_unit(tmp_path, "twin", "t", "zero_shot", role="post", knowledge=ones(30))
    write_model(tmp_path, "solo", "t", strict=ones(50))  # base only: no post folder at all
    assert not (tmp_path / "scores" / "solo" / "post").exists()
    table = board(tmp_path)
    rows = rows_of(table, "t")
    assert rows["twin"]["flag_knowledge_moved"] is False
    assert rows["twin"]["knowledge_vs_baseline_post"] == MOVED and rows["twin"]["flag_knowledge_moved_post"] is True
    assert rows["twin"]["knowledge_change_post"] == pytest.approx(0.65)
    assert rows["twin"]["flags"] == "knowledge moved vs zero_shot (post)"
    assert rows["solo"]["knowledge_vs_baseline_post"] == NOT_EVALUATED
    assert rows["solo"]["flag_knowledge_moved_post"] is None and rows["solo"]["flags"] == ""
    assert rows["solo"]["rank"] == rows["twin"]["rank"] == 1  # the post scores never enter the ranking
    assert rows_of(table)["solo"]["flag_knowledge_moved_post"] is None


def closed_unit(tmp_path: Path, model: str, letters: list[int], loglik: bool = True) -> None:
    """A closed task's unit whose chosen options (by likelihood, and in the response) are `letters`."""
    golds = [i % 4 for i in range(N)]
    write_model(
        tmp_path,
        model,
        "mc",
        strict=[c == g for c, g in zip(letters, golds, strict=True)],
        responses=[f"{'ABCD'[c]}. option {c}" for c in letters],
        golds=[f"{'ABCD'[g]}. option {g}" for g in golds],
        extra=[{"knowledge_from": "loglik"}] * N,
    )
    if loglik:
        path = unit_path(tmp_path / "loglik", model, "base", "mc", "soft_prompt", STEP)
        path.parent.mkdir(parents=True, exist_ok=True)
        rows = [
            {"id": f"mc-{i}", "chosen": c, "options": ["A. a", "B. b", "C. c", "D. d"]} for i, c in enumerate(letters)
        ]
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def test_collapsed_choices_are_flagged_from_loglik(tmp_path):
    closed_unit(tmp_path, "collapsed", [3] * 95 + [0] * 5)
    closed_unit(tmp_path, "spread", [i % 4 for i in range(N)])
    rows = rows_of(board(tmp_path, loglik_root=tmp_path / "loglik"), "mc")
    assert rows["collapsed"]["flag_choices_collapsed"] is True
    assert rows["collapsed"]["choice_top"] == "D 95% (loglik)"
    assert rows["collapsed"]["choice_entropy"] < 0.5
    assert rows["collapsed"]["flags"] == "choices collapsed"
    assert rows["spread"]["flag_choices_collapsed"] is False and rows["spread"]["choice_entropy"] == pytest.approx(1.0)


def test_collapsed_choices_from_responses_without_loglik(tmp_path):
    """Without option log-likelihoods, the letters the responses start with (a task named closed)."""
    closed_unit(tmp_path, "collapsed", [1] * N, loglik=False)
    closed_unit(tmp_path, "spread", [i % 4 for i in range(N)], loglik=False)
    rows = rows_of(board(tmp_path, closed_tasks=("mc",)), "mc")
    assert rows["collapsed"]["flag_choices_collapsed"] is True
    assert rows["collapsed"]["choice_top"] == "B 100% (response)"
    assert rows["spread"]["flag_choices_collapsed"] is False
    overall = rows_of(board(tmp_path))
    assert overall["collapsed"]["flags"] == "choices collapsed (mc)" and overall["spread"]["flags"] == ""


def test_degenerate_share_from_the_judge_field_or_the_local_check(tmp_path):
    judged = [{"degenerate": i < 20} for i in range(N)]
    write_model(tmp_path, "judged", "t", strict=ones(50), extra=judged)
    reasons = [{"degenerate_reason": "repetition"} if i < 5 else {} for i in range(N)]
    write_model(tmp_path, "fewjudged", "t", strict=ones(50), extra=reasons)
    looping = ["7 " * 12 if i < 30 else f"#### {i}" for i in range(N)]
    write_model(tmp_path, "looping", "t", strict=ones(50), responses=looping)
    empty = ["" if i < 10 else f"#### {i}" for i in range(N)]  # 10%: not more than the threshold
    write_model(tmp_path, "terse", "t", strict=ones(50), responses=empty)
    rows = rows_of(board(tmp_path), "t")
    assert rows["judged"]["degenerate"] == pytest.approx(0.2) and rows["judged"]["degenerate_source"] == "judge"
    assert rows["judged"]["flag_degenerate"] is True and rows["judged"]["flags"] == "degenerate responses"
    assert rows["fewjudged"]["degenerate"] == pytest.approx(0.05) and rows["fewjudged"]["flag_degenerate"] is False
    assert rows["looping"]["degenerate"] == pytest.approx(0.3) and rows["looping"]["degenerate_source"] == "local"
    assert rows["looping"]["flag_degenerate"] is True
    assert rows["terse"]["degenerate"] == pytest.approx(0.1) and rows["terse"]["flag_degenerate"] is False
    assert rows_of(board(tmp_path, degenerate_threshold=0.05))["terse"]["flag_degenerate"] is True


def test_degenerate_checks():
    assert looks_degenerate("   ") == "empty"
    assert looks_degenerate("#### 12") is None
    assert looks_degenerate("the the the the the the the the") is not None
    assert looks_degenerate("x" * 25) is not None
    assert looks_degenerate("Paris is the capital of France and has been since long ago.") is None
    assert degenerate_share([{"response": "", "degenerate": "false"}, {"response": "", "degenerate": "loop"}]) == (
        0.5,
        "judge",
    )
    share, source = degenerate_share([{"id": 1}])
    assert np.isnan(share) and source == ""


def test_local_degenerate_check_without_the_judges(monkeypatch):
    """The simple check where the package has no judge-side test of degenerate responses."""
    monkeypatch.setattr(checks, "_judge_degenerate", None)  # where looks_degenerate reads it
    assert looks_degenerate("") == "empty"
    assert looks_degenerate("the the the the the the the the") == "repetition"
    assert looks_degenerate("x" * 25) == "character run"
    assert looks_degenerate("#### 12") is None and looks_degenerate("Bora Bora") is None


# ----------------------------------------------------------------------------- methods, inputs, output


def test_falls_back_to_a_method_every_model_has_and_says_so(tmp_path):
    for model, share in (("aa", 30), ("bb", 60)):
        write_model(tmp_path, model, "t1", strict=ones(share))
        write_unit(tmp_path, model, "t2", "few_shot", strict=ones(share + 5))
        write_unit(tmp_path, model, "t2", "zero_shot", strict=ones(share))
    write_unit(tmp_path, "aa", "t2", strict=ones(99))  # one model's soft prompt: not comparable, not used
    table = board(tmp_path)
    assert table.attrs["methods"] == {"t1": "soft_prompt", "t2": "few_shot"}
    assert set(table[table["task"] == "t2"]["method"]) == {"few_shot"}
    assert set(table[table["task"] == "t1"]["method"]) == {f"soft_prompt step {STEP}"}
    assert set(table[table["task"] == ALL_TASKS]["method"]) == {f"t1: soft_prompt step {STEP}; t2: few_shot"}
    assert rows_of(table, "t2")["bb"]["strict"] == pytest.approx(0.65)
    assert rows_of(table, "t2")["bb"]["knowledge_vs_baseline"] == NOT_SHOWN_FLAT  # few-shot vs zero-shot, +0.05
    assert "not evaluated for every model of t2" in table.attrs["caption"]
    only_zero = board(tmp_path, tasks=["t2"], method="zero_shot")
    assert set(only_zero["method"]) == {"zero_shot"}
    assert set(only_zero[only_zero["task"] == "t2"]["knowledge_vs_baseline"]) == {NOT_EVALUATED}
    with pytest.raises(InputError, match="no method of soft_prompt was scored for every base model"):
        board(tmp_path, tasks=["t2"], fallbacks=())


def test_bad_inputs_are_named(tmp_path):
    write_model(tmp_path, "aa", "t", strict=ones(30))
    write_model(tmp_path, "bb", "t", strict=ones(30), ids=[f"other-{i}" for i in range(N)])
    with pytest.raises(InputError, match="other test examples than"):
        board(tmp_path)
    with pytest.raises(InputError, match="no scores of base model cc"):
        board(tmp_path, models=["aa", "cc"])
    with pytest.raises(InputError, match="invalid model name"):
        board(tmp_path, models=["../aa"])
    with pytest.raises(InputError, match="no base model has scores"):
        board(tmp_path / "empty")


def test_from_settings_and_written_files(tmp_path):
    write_model(tmp_path, "formatter", "t", strict=ones(60), knowledge=ones(60))
    write_model(tmp_path, "knower", "t", strict=ones(20), knowledge=ones(90))
    settings = AnalysisSettings(closed_tasks=(), steps=(0, STEP), bootstrap=BOOT, seed=0, metric="knowledge")
    table = leaderboard_from_settings(tmp_path / "scores", settings)
    assert list(table[table["task"] == ALL_TASKS]["model"]) == ["knower", "formatter"]
    write_leaderboard(table, tmp_path / "tables" / "leaderboard")
    csv = pd.read_csv(tmp_path / "tables" / "leaderboard.csv")
    assert list(csv.columns) == list(table.columns)
    assert list(csv["rank"]) == [1, 2, 1, 2] and list(csv["model"]) == ["knower", "formatter"] * 2
    assert csv["knowledge"].tolist() == pytest.approx([0.9, 0.6, 0.9, 0.6])
    markdown = (tmp_path / "tables" / "leaderboard.md").read_text()
    assert markdown.startswith("Leaderboard of base models") and "ranked by knowledge" in markdown
    # for reading: the mean over tasks first, each estimate with its interval
    assert markdown.index(f"### {ALL_TASKS}") < markdown.index("### t (")
    first = next(line for line in markdown.splitlines() if "knower" in line)
    assert "0.900 [" in first and first.split("|")[1].strip() == "1"
    latex = (tmp_path / "tables" / "leaderboard.tex").read_text()
    assert r"\textbf{0.900}" in latex and r"\begin{table}" in latex
    assert "choice_entropy" not in latex and "tied" in latex  # the compact columns
    with pytest.raises(ValueError, match="no column 'score'"):
        write_leaderboard(table, tmp_path / "bad", columns=["score"])


# ----------------------------------------------------------------------------- properties


def test_tie_blocks_and_places_without_a_test():
    assert tie_blocks({"b": 0.0, "a": 0.0, "c": 0.5}) == [["c"], ["a", "b"]]
    places = place_models({"b": 0.0, "a": 0.0, "c": 0.5})
    assert places["a"].rank == places["b"].rank == 2 and places["c"].vs_above == "" and places["a"].vs_above == ""
    with pytest.raises(ValueError, match="cannot be ranked"):
        tie_blocks({"a": float("nan")})


def gap_interval(scores: dict[str, float]):
    """A separability test that depends on the scores only: separable above a 0.2 gap."""

    def difference(upper: str, lower: str) -> Interval:
        gap = scores[upper] - scores[lower]
        return Interval(gap, gap - 0.2, gap + 0.2)

    return difference


NAMES = st.lists(st.from_regex(r"[a-z][a-z0-9_-]{0,6}", fullmatch=True), min_size=1, max_size=7, unique=True)
SCORES = st.sampled_from([0.0, 0.0, 0.1, 0.25, 0.5, 0.5, 0.9, 1.0])


@settings(max_examples=200, deadline=None)
@given(data=st.data(), names=NAMES)
def test_permuting_names_never_changes_places(data, names):
    values = data.draw(st.lists(SCORES, min_size=len(names), max_size=len(names)))
    renamed = data.draw(st.permutations(names))
    first = dict(zip(names, values, strict=True))
    second = dict(zip(renamed, values, strict=True))
    a = place_models(first, gap_interval(first))
    b = place_models(second, gap_interval(second))
    for old, new, value in zip(names, renamed, values, strict=True):
        assert a[old].rank == b[new].rank == 1 + sum(v > value for v in values)
        assert a[old].place == b[new].place
        assert a[old].vs_above == b[new].vs_above
        assert len(a[old].tied_with) == sum(v == value for v in values) - 1
        assert {first[m] for m in a[old].tied_with} <= {value}
        above = [v for v in values if v > value]
        assert {first[m] for m in a[old].above} == ({min(above)} if above else set())
        if above:
            assert a[old].vs_above == (SEPARABLE if min(above) - value > 0.2 else WITHIN_NOISE)
