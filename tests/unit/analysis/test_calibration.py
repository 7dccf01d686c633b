"""The calibration's controls (issue 40, item 2): each manipulation reads what it declares, and
the table catches a claim check that gives its verdict whatever the data (a broken check),
in both directions."""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from softeval.analysis.calibration import CONTROLS, FAILS, Scene, View, calibrate, scene_of, write_calibration
from softeval.analysis.claims import CLAIMS, HOLDS, NOT_SHOWN, Part, check_claims, claim_verdicts
from softeval.analysis.claims.verdicts import NOT_APPLICABLE
from softeval.layout import UnitKey
from tests.unit.analysis.test_claims import SETTINGS, N, World, hits

METRICS = ("knowledge", "format", "strict")


def rows_of(world: World):
    """The World's arrays as per-example score rows, as UnitReader.unit gives them."""

    def rows(unit: UnitKey) -> list[dict]:
        arrays = world.arrays[(unit.role, unit.model, unit.task, unit.method, unit.step)]
        return [{m: bool(arrays[m][i]) for m in METRICS} for i in range(len(arrays["strict"]))]

    return rows


def ranked_world(tasks=("open1",)) -> World:
    """Five models whose post-trained twins rank a > b > c > d > e and whose base models, zero- and
    few-shot, rank them the other way round (10 swaps a task): room for every effect, claims 3 and
    5's pairing guard included (5 models: 120 reassignments, the smallest p 1/120)."""
    world = World(models=("a", "b", "c", "d", "e"), tasks=tasks)
    for task in world.tasks:
        for model, k in zip(world.models, (50, 40, 30, 20, 10), strict=True):
            for method, step in (("zero_shot", None), ("few_shot", None)):
                world.set("post", model, task, method, step, strict=hits(k), knowledge=hits(k), format=hits(N))
                world.set("base", model, task, method, step, strict=hits(60 - k), knowledge=hits(60 - k))
    return world


def view_of(name: str, world: World, settings=SETTINGS, closed=()) -> View:
    inputs = world.inputs(closed=closed)
    inputs.settings = settings
    return View(CONTROLS.get(name), scene_of(inputs), rows_of(world), None)


def test_untuned_prompt_reads_the_first_snapshot_at_every_step():
    world = World()
    world.set("base", "a", "open1", "soft_prompt", 8, strict=hits(55), knowledge=hits(55), format=hits(N))
    view = view_of("untuned_prompt", world)
    tuned = UnitKey("a", "base", "open1", "soft_prompt", 8)
    assert view(tuned, "strict").sum() == world.arrays[("base", "a", "open1", "soft_prompt", 0)]["strict"].sum() == 30
    assert view(UnitKey("a", "base", "open1", "zero_shot", None), "strict").sum() == 30  # baselines untouched
    summary = view.summary(world.summary())
    row = summary[(summary["model"] == "a") & (summary["role"] == "base") & (summary["step"] == 8)]
    assert row["strict"].iloc[0] == pytest.approx(0.5)  # the summary is the rows' means, not the run's


@given(st.integers(2, 8), st.integers(0, 50))
def test_shuffled_twins_give_every_base_model_another_models_twin(n_models, seed):
    models = tuple(f"m{i}" for i in range(n_models))
    scene = Scene(0, 8, (0, 8), frozenset(), UnitKey("", "post", "", "zero_shot", None), models, models, seed)
    view = View(CONTROLS.get("shuffled_twins"), scene, lambda unit: [{"model": unit.model}], None)
    partners = [view.unit_rows(UnitKey(m, "post", "t", "zero_shot", None))[0]["model"] for m in models]
    assert sorted(partners) == sorted(models)  # a permutation
    assert all(p != m for p, m in zip(partners, models, strict=True))  # no model keeps its own twin
    assert view.unit_rows(UnitKey("m0", "base", "t", "zero_shot", None))[0]["model"] == "m0"  # base rows are its own


def test_format_learnt_formats_closed_tasks_from_half_the_tuning_and_open_tasks_at_the_end():
    settings = replace(SETTINGS, steps=(0, 2, 4, 8), closed_tasks=("closed1",))
    world = World(tasks=("open1", "closed1"))
    for task in world.tasks:
        for step in (2, 4, 8):
            world.set("base", "a", task, "soft_prompt", step, knowledge=hits(N), strict=hits(N), format=hits(N))
    view = view_of("format_learnt", world, settings, closed={"closed1"})
    for task, first_formatted in (("closed1", 4), ("open1", 8)):
        for step in (0, 2, 4, 8):
            unit = UnitKey("a", "base", task, "soft_prompt", step)
            assert view(unit, "format").mean() == (1.0 if step >= first_formatted else 0.0)
            assert view(unit, "knowledge").sum() == 40  # what the step-0 prompt knew, not the tuned one's 60
            assert (view(unit, "strict") == view(unit, "knowledge") * view(unit, "format")).all()
    post = UnitKey("a", "post", "open1", "soft_prompt", 8)
    assert view(post, "format").mean() == 1.0 and view(post, "knowledge").sum() == 40  # post rows untouched


def test_compressed_ties_name_the_models_in_the_post_trained_order():
    world = ranked_world()
    world.set("post", "c", "open1", "zero_shot", None, strict=hits(59))  # c first, then a, b, d, e
    view = view_of("compressed_ties", world)
    names = sorted(view.alias.values())
    assert [view.real[n] for n in names] == ["c", "a", "b", "d", "e"]
    summary = view.summary(world.summary())
    base_zero = summary[(summary["role"] == "base") & (summary["method"] == "zero_shot")]
    assert set(base_zero["model"]) == set(names) and (base_zero["strict"] == 0).all()


def test_twin_controls_put_the_post_trained_rows_in_the_base_prompts_place():
    world = ranked_world()
    ranking = view_of("twin_ranking", world)
    scores = view_of("twin_scores", world)
    base_final = UnitKey("a", "base", "open1", "soft_prompt", 8)
    assert ranking(base_final, "strict").sum() == 50  # a's twin, zero-shot (the reference method)
    world.set("post", "a", "open1", "soft_prompt", 8, strict=hits(7))
    assert scores(base_final, "strict").sum() == 7  # a's twin with its own final prompt


def expectations(table) -> dict[tuple[str, int], str]:
    return {(row.control, row.claim): row.agrees for row in table.itertuples()}


def test_the_controls_meet_their_expectations_where_the_run_has_room():
    """Ranked twins, baselines ranking them backwards, a soft prompt equal to zero-shot: every
    should-fail control fails, and the should-hold controls of claims 2, 3 and 5 hold."""
    world = ranked_world()
    for role in ("base", "post"):
        for model in world.models:
            for step in (0, 8):
                zero = world.arrays[(role, model, "open1", "zero_shot", None)]
                world.set(role, model, "open1", "soft_prompt", step, **zero)
    table = calibrate(world.inputs(), rows_of(world))
    assert len(table) == sum(len(c.expect) for c in CONTROLS.values())
    found = expectations(table)
    for control in CONTROLS.values():
        for claim, expected in control.expect.items():
            if expected == FAILS:
                assert found[(control.name, claim)] == "yes", (control.name, claim)
    assert found[("unformatted_baselines", 2)] == "yes"
    assert found[("twin_ranking", 3)] == "yes"
    assert found[("twin_scores", 5)] == "yes"


def test_the_should_fail_controls_undo_a_claim_that_holds_on_the_data():
    """A run where the method works for claim 3 (the tuned prompt ranks the base models as their
    twins rank, zero-shot backwards): it holds on the data itself, and the controls that undo the
    tuning or the pairing make it fail: the manipulations, not the data, decide those rows."""
    world = ranked_world()
    for model in world.models:
        world.set("base", model, "open1", "soft_prompt", 0, **world.arrays[("base", model, "open1", "zero_shot", None)])
        world.set("base", model, "open1", "soft_prompt", 8, **world.arrays[("post", model, "open1", "zero_shot", None)])
    assert claim_verdicts(check_claims(world.inputs()))[3] == HOLDS
    found = expectations(calibrate(world.inputs(), rows_of(world)))
    assert found[("untuned_prompt", 3)] == "yes" and found[("shuffled_twins", 3)] == "yes"


@contextmanager
def check_replaced(number: int, check):
    """Claim `number`'s check replaced (a broken pipeline's), the registry's order kept."""
    claims = [(name, CLAIMS.get(name)) for name in CLAIMS.names()]
    for name, _ in claims:
        CLAIMS.remove(name)
    try:
        for name, item in claims:
            CLAIMS.add(name, replace(item, check=check) if name == str(number) else item)
        yield
    finally:
        for name in CLAIMS.names():
            CLAIMS.remove(name)
        for name, item in claims:
            CLAIMS.add(name, item)


def test_a_check_that_always_holds_is_caught_by_its_should_fail_controls():
    world = ranked_world()
    table = calibrate(world.inputs(), rows_of(world))
    assert {expectations(table)[(c, 5)] for c in ("untuned_prompt", "shuffled_twins", "same_wrong_answer")} == {"yes"}
    with check_replaced(5, lambda inputs: [Part(5, "vs zero-shot", HOLDS, "always")]):
        table = calibrate(world.inputs(), rows_of(world))
    found = expectations(table)
    for control in ("untuned_prompt", "shuffled_twins", "same_wrong_answer"):
        assert found[(control, 5)] == "no", control
    assert "**same_wrong_answer**, claim 5: vs zero-shot: holds" in _markdown(table)


def test_a_check_that_never_holds_is_caught_by_its_should_hold_control():
    world = ranked_world()
    assert expectations(calibrate(world.inputs(), rows_of(world)))[("unformatted_baselines", 2)] == "yes"
    with check_replaced(2, lambda inputs: [Part(2, "base models vs zero-shot", NOT_SHOWN, "never")]):
        table = calibrate(world.inputs(), rows_of(world))
    assert expectations(table)[("unformatted_baselines", 2)] == "no"
    assert CLAIMS.names() == ["1", "2", "3", "4", "5"]  # the registry as it was


def test_controls_this_run_cannot_build_say_why():
    world = World()
    for key in [k for k in world.arrays if k[3] == "soft_prompt" and k[4] == 0]:
        del world.arrays[key]
    inputs = world.inputs()
    inputs.settings = replace(SETTINGS, steps=(8,))
    table = calibrate(inputs, rows_of(world))
    untuned = table[table["control"] == "untuned_prompt"]
    assert set(untuned["obtained"]) == {NOT_APPLICABLE} and set(untuned["agrees"]) == {"cannot tell"}
    assert "one soft-prompt snapshot only" in untuned["note"].iloc[0]


def _markdown(table) -> str:
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as folder:
        stem = Path(folder) / "calibration"
        write_calibration(table, stem)
        text = stem.with_suffix(".md").read_text()
        assert stem.with_suffix(".csv").read_text().startswith("control,claim,expected,obtained,agrees")
        return text


def test_the_markdown_counts_the_expectations_met():
    world = ranked_world()
    table = calibrate(world.inputs(), rows_of(world))
    met = int((table["agrees"] == "yes").sum())
    tested = int((table["agrees"] != "cannot tell").sum())
    assert f"**{met} of {tested}** testable expectations met" in _markdown(table)
    assert np.isin(table["obtained"], ["holds", "not shown", "refuted", "not applicable"]).all()


def test_a_run_without_twins_calibrates_what_it_can():
    """Base checkpoints only (`softeval run` on a user's models): the ranking and gap controls
    cannot be built or cannot be read, and say so; the base-only claims are still checked."""
    world = World(roles=("base",))
    table = calibrate(world.inputs(), rows_of(world))
    found = expectations(table)
    assert {found[(c, 3)] for c in ("untuned_prompt", "shuffled_twins", "twin_ranking")} == {"cannot tell"}
    assert found[("twin_scores", 5)] == "cannot tell" and found[("compressed_ties", 4)] == "cannot tell"
    assert found[("prompt_learns_answers", 1)] == "yes"  # claim 1 reads base models only


def test_the_markdown_says_how_often_the_published_runs_met_each_expectation():
    world = ranked_world()
    table = calibrate(world.inputs(), rows_of(world))
    seeds = {f"seed {i}": "not shown" for i in range(9)} | {"seed 9": "holds"}  # met in 9 of 10
    published = {"untuned_prompt/1": {"expected": "fails", "runs": seeds}}
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as folder:
        stem = Path(folder) / "calibration"
        write_calibration(table, stem, ("config/published/x.yaml", published))
        text = stem.with_suffix(".md").read_text()
    assert "Over the published runs (config/published/x.yaml): **1 of 1** expectations met in at least 9" in text
    row = next(line for line in text.splitlines() if line.startswith("| untuned_prompt") and "|       1 |" in line)
    assert row.rstrip("| ").endswith("9 of 10")
