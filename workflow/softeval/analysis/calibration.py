"""Controls: each claim shown able to hold and able to fail, on this run's own per-example scores.

A verdict means something only if the check behind it can give the other one. A control is a
declared manipulation of the run's scores (which real unit's rows stand in for a unit, and what
is changed in them: the step-0 prompt in place of the tuned one, twins reassigned at random, a
prompt that learnt the test answers, ...) with the verdict each claim should then give. The
claims are re-checked on every control by the claims' own code (`check_claims`), at the run's
shape: its models, tasks, test items and their sharing, its bootstrap. calibration.md lists
expected against obtained: a claim whose should-fail control holds is a check a broken pipeline
passes; one whose should-hold control does not hold is a check without the power, or a run
without the room, to show the effect (the parts that fell short are listed with their evidence).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pandas as pd

from softeval.analysis.aggregate import METRICS
from softeval.analysis.claims.framework import ChoiceReader, Inputs, check_claims
from softeval.analysis.claims.verdicts import (
    HOLDS,
    NOT_APPLICABLE,
    NOT_SHOWN,
    REFUTED,
    SCOPE_NOTE,
    claim_verdicts,
)
from softeval.analysis.tables import models_in, swap_distance_table, swap_draws
from softeval.io import atomic_write_text
from softeval.layout import UnitKey
from softeval.names import BASE, FEW_SHOT, POST, SOFT_PROMPT, ZERO_SHOT
from softeval.registry import Registry

FAILS = "fails"  # an expected verdict: not shown or refuted
Rows = list[dict]


@dataclass(frozen=True)
class Scene:
    """What a control's manipulation reads of the run: its steps and closed tasks, the models with
    a twin and the post-trained ranking (by the reference method, mean over tasks, best first)."""

    first: int
    final: int
    steps: tuple[int, ...]
    closed: frozenset[str]
    reference: UnitKey  # the reference method's unit shape (model and task filled in per use)
    twinned: tuple[str, ...]
    post_order: tuple[str, ...]
    seed: int

    def saturation(self, task: str) -> int:
        """When format_learnt's prompt starts writing the format: closed tasks from the first snapshot
        at half the tuning or later (the paper: about step 40 of 80), open tasks at the final step."""
        if task not in self.closed:
            return self.final
        return min(s for s in self.steps if s >= self.final / 2)


Source = Callable[[UnitKey, Scene], UnitKey]
Edit = Callable[[UnitKey, Rows, Scene], Rows]


@dataclass(frozen=True)
class Control:
    """One manipulation and the verdict each named claim should give on it (HOLDS or FAILS)."""

    name: str
    does: str
    expect: Mapping[int, str]
    source: Source | None = None  # which real unit's rows stand in for a unit (None: its own)
    edit: Edit | None = None  # what is changed in them (None: nothing)
    aliases: Callable[[Scene], dict[str, str]] | None = None  # model -> the name it goes by
    needs: Callable[[Scene], str | None] = lambda scene: None  # why it cannot be built on this run


CONTROLS: Registry[Control] = Registry("control", "softeval.analysis.calibration.CONTROLS")


def control(item: Control) -> Control:
    CONTROLS.add(item.name, item)
    return item


def _with(rows: Rows, **values: bool) -> Rows:
    return [row | values for row in rows]


def _tuning_steps(scene: Scene) -> str | None:
    return None if scene.first < scene.final else "one soft-prompt snapshot only: nothing before tuning to compare"


def _two_twins(scene: Scene) -> str | None:
    return None if len(scene.twinned) >= 2 else "fewer than two models with a post-trained twin"


def _is_final_prompt(unit: UnitKey, scene: Scene, role: str | None = None) -> bool:
    return unit.method == SOFT_PROMPT and unit.step == scene.final and (role is None or unit.role == role)


def _partners(scene: Scene) -> dict[str, str]:
    """A seeded shuffle of the twinned models, each taking the next one's twin (no model keeps its own)."""
    order = list(scene.twinned)
    random.Random(f"{scene.seed}-shuffled-twins").shuffle(order)
    return {model: order[(i + 1) % len(order)] for i, model in enumerate(order)}


control(
    Control(
        "untuned_prompt",
        "every soft-prompt snapshot replaced by the first (step 0: the prompt's initialisation), base and "
        "post-trained models: tuning did nothing",
        {1: FAILS, 2: FAILS, 3: FAILS, 4: FAILS, 5: FAILS},
        source=lambda u, s: replace(u, step=s.first) if u.method == SOFT_PROMPT else u,
        needs=_tuning_steps,
    )
)
control(
    Control(
        "shuffled_twins",
        "each post-trained model's scores given to another model's base (a seeded shuffle, none kept): the "
        "twins reassigned at random",
        {3: FAILS, 5: FAILS},
        source=lambda u, s: replace(u, model=_partners(s)[u.model]) if u.role == POST and u.model in s.twinned else u,
        needs=_two_twins,
    )
)
control(
    Control(
        "prompt_learns_answers",
        "the base models' final soft prompts answer every test question right and in format: a prompt that "
        "learnt the test facts, so knowledge rises",
        {1: FAILS},
        edit=lambda u, rows, s: (
            _with(rows, knowledge=True, format=True, strict=True) if _is_final_prompt(u, s, BASE) else rows
        ),
    )
)
control(
    Control(
        "same_wrong_answer",
        "every model's final soft prompt, base and post-trained, writes a well-formatted wrong answer to every "
        "question: the gap closes because every score is 0",
        {2: FAILS, 5: FAILS},
        edit=lambda u, rows, s: (
            _with(rows, knowledge=False, format=True, strict=False) if _is_final_prompt(u, s) else rows
        ),
    )
)


def _format_learnt(unit: UnitKey, rows: Rows, scene: Scene) -> Rows:
    if unit.role != BASE or unit.method != SOFT_PROMPT:
        return rows
    formatted = unit.step is not None and unit.step >= scene.saturation(unit.task)
    return [row | {"format": formatted, "strict": bool(row["knowledge"]) and formatted} for row in rows]


control(
    Control(
        "format_learnt",
        "the base models' soft prompts know what the step-0 prompt knew at every step, and write the format "
        "from half the tuning on (closed tasks) or at the final step (open tasks), never before: format "
        "without knowledge",
        {1: HOLDS},
        source=lambda u, s: replace(u, step=s.first) if u.role == BASE and u.method == SOFT_PROMPT else u,
        edit=_format_learnt,
        needs=_tuning_steps,
    )
)


def _unformatted(roles: tuple[str, ...]) -> Edit:
    def edit(unit: UnitKey, rows: Rows, scene: Scene) -> Rows:
        plain = unit.method in (ZERO_SHOT, FEW_SHOT) and unit.role in roles
        return _with(rows, format=False, strict=False) if plain else rows

    return edit


control(
    Control(
        "unformatted_baselines",
        "zero-shot and few-shot responses never in format (strict 0, knowledge kept), base and post-trained "
        "models: models with no format exposure, which the soft prompt formats",
        {2: HOLDS},
        edit=_unformatted((BASE, POST)),
    )
)


def _ranked_names(scene: Scene) -> dict[str, str]:
    """Each model's name prefixed by its place in the post-trained ranking, zero-padded so that the
    names sort in that order (tie-breaks favour the name that sorts first)."""
    width = len(str(len(scene.post_order)))
    return {model: f"{i:0{width}d}-{model}" for i, model in enumerate(scene.post_order, 1)}


control(
    Control(
        "compressed_ties",
        "the base models' zero-shot and few-shot responses never in format (every score 0, tied), and the "
        "models named so that their names sort as the post-trained ranking: agreement made by tie-breaks",
        {4: HOLDS},
        edit=_unformatted((BASE,)),
        aliases=lambda s: {
            model: f"{i:0{len(str(len(s.post_order)))}d}-{model}" for i, model in enumerate(s.post_order, 1)
        },
        needs=_two_twins,
    )
)
control(
    Control(
        "twin_ranking",
        "each base model's final soft prompt scores what its post-trained twin scores under the reference "
        "method, example by example: a prompt that recovers the post-trained ranking",
        {3: HOLDS},
        source=lambda u, s: (
            replace(s.reference, model=u.model, task=u.task)
            if _is_final_prompt(u, s, BASE) and u.model in s.twinned
            else u
        ),
        needs=_two_twins,
    )
)
control(
    Control(
        "twin_scores",
        "each base model's final soft prompt scores what its post-trained twin scores with its own final "
        "soft prompt, example by example: no gap left under the soft prompt",
        {5: HOLDS},
        source=lambda u, s: replace(u, role=POST) if _is_final_prompt(u, s, BASE) and u.model in s.twinned else u,
    )
)


class View:
    """A control's per-example scores: `read` and `choices` as the claims take them, under the
    control's names; each unit's rows read from the unit its `source` names, then edited."""

    def __init__(self, item: Control, scene: Scene, rows: Callable[[UnitKey], Rows], choices: ChoiceReader | None):
        self.item, self.scene, self.rows, self.base_choices = item, scene, rows, choices
        self.alias = item.aliases(scene) if item.aliases else {}
        self.real = {alias: model for model, alias in self.alias.items()}
        self.cache: dict[UnitKey, Rows] = {}

    def unit_rows(self, unit: UnitKey) -> Rows:
        if unit not in self.cache:
            real = replace(unit, model=self.real.get(unit.model, unit.model))
            source = self.item.source(real, self.scene) if self.item.source else real
            rows = self.rows(source)
            self.cache[unit] = self.item.edit(real, rows, self.scene) if self.item.edit else rows
        return self.cache[unit]

    def __call__(self, unit: UnitKey, metric: str) -> np.ndarray:
        return np.array([float(row[metric]) for row in self.unit_rows(unit)])

    def choices(self, model: str, task: str, method: str, step: int | None) -> tuple[list[int], int]:
        """A base unit's options chosen, from its source unit's model, method and step in the base
        role (the run's choice files are the base models'): a control that takes a post-trained
        unit's rows (twin_*) leaves claim 1's collapse check on the base model's own choices."""
        assert self.base_choices is not None
        real = UnitKey(self.real.get(model, model), BASE, task, method, step)
        source = self.item.source(real, self.scene) if self.item.source else real
        return self.base_choices(source.model, source.task, source.method, source.step)

    def summary(self, summary: pd.DataFrame) -> pd.DataFrame:
        """The run's summary rows under the control: its names, and each metric's mean over the
        control's rows (the rows' intervals left out: the claims compute their own)."""
        out = summary[[c for c in summary.columns if c in (*UNIT_COLUMNS, "n", "test_total")]].copy()
        out["model"] = [self.alias.get(m, m) for m in out["model"]]
        means = {metric: [] for metric in METRICS}
        for row in out.itertuples(index=False):
            step = None if pd.isna(row.step) else int(row.step)
            values = self.unit_rows(UnitKey(row.model, row.role, row.task, row.method, step))
            for metric in METRICS:
                means[metric].append(float(np.mean([bool(v[metric]) for v in values])))
        return out.assign(**means)


UNIT_COLUMNS = ("model", "role", "task", "method", "step")


def scene_of(inputs: Inputs) -> Scene:
    settings = inputs.settings
    method = settings.reference_method
    reference = UnitKey("", POST, "", method, settings.final_step if method == SOFT_PROMPT else None)
    twinned = tuple(inputs.twinned)

    def post_mean(model: str) -> float:
        per_task = [inputs.values(POST, model, t, method, reference.step, settings.metric).mean() for t in inputs.tasks]
        return float(np.mean(per_task))

    means = {m: post_mean(m) for m in twinned}
    return Scene(
        first=settings.first_step,
        final=settings.final_step,
        steps=tuple(settings.steps),
        closed=frozenset(settings.closed_tasks),
        reference=reference,
        twinned=twinned,
        post_order=tuple(sorted(twinned, key=lambda m: (-means[m], m))),
        seed=settings.seed,
    )


def control_inputs(inputs: Inputs, view: View) -> Inputs:
    """The claims' inputs under a control: its summary, its swap distances and their bootstrap."""
    summary = view.summary(inputs.summary)
    settings = inputs.settings

    def per_example(role: str, task: str, method: str, step: int | None) -> dict[str, np.ndarray]:
        return {m: view(UnitKey(m, role, task, method, step), settings.metric) for m in models_in(summary, role)}

    draws = swap_draws(summary, per_example, settings)
    return Inputs(
        summary=summary,
        swap=swap_distance_table(summary, per_example, settings, draws=draws),
        read=view,
        closed_tasks=inputs.closed_tasks,
        settings=settings,
        choices=view.choices if inputs.choices is not None else None,
        items=inputs.items,
        swap_draws=draws,
    )


def agrees(expected: str, obtained: str) -> bool | None:
    """Whether an obtained verdict is the expected one (None: the claim cannot be tested here)."""
    if obtained == NOT_APPLICABLE:
        return None
    return obtained == HOLDS if expected == HOLDS else obtained in (NOT_SHOWN, REFUTED)


def calibrate(inputs: Inputs, rows: Callable[[UnitKey], Rows]) -> pd.DataFrame:
    """One row per control and claim it declares: expected and obtained verdict, whether they agree,
    and (attrs["short"]) the parts that kept a disagreeing claim from its expected verdict."""
    scene = scene_of(inputs)
    records, short = [], {}
    for item in CONTROLS.values():
        reason = item.needs(scene)
        if reason is not None:
            records += [_record(item, n, expected, NOT_APPLICABLE, reason) for n, expected in item.expect.items()]
            continue
        parts = check_claims(control_inputs(inputs, View(item, scene, rows, inputs.choices)))
        verdicts = claim_verdicts(parts)
        for number, expected in item.expect.items():
            obtained = verdicts.get(number, NOT_APPLICABLE)
            records.append(_record(item, number, expected, obtained, ""))
            if agrees(expected, obtained) is False:
                mine = parts[(parts["claim"] == number) & (parts["caveat"] != SCOPE_NOTE)]
                wrong = mine[mine["verdict"] != HOLDS] if expected == HOLDS else mine[mine["verdict"] == HOLDS]
                short[(item.name, number)] = [
                    f"{row.part}: {row.verdict}{f' ({row.caveat})' if row.caveat else ''}" for row in wrong.itertuples()
                ]
    table = pd.DataFrame(records, columns=list(COLUMNS))
    table.attrs["short"] = short
    return table


COLUMNS = ("control", "claim", "expected", "obtained", "agrees", "note", "manipulation")


def _record(item: Control, number: int, expected: str, obtained: str, note: str) -> dict:
    return {
        "control": item.name,
        "claim": number,
        "expected": expected,
        "obtained": obtained,
        "agrees": {True: "yes", False: "no", None: "cannot tell"}[agrees(expected, obtained)],
        "note": note,
        "manipulation": item.does,
    }


def over_runs(table: pd.DataFrame, published: Mapping[str, Mapping]) -> list[str]:
    """Per row of `table`, how often the published runs met its expectation ("9 of 10")."""
    out = []
    for row in table.itertuples():
        entry = published.get(f"{row.control}/{row.claim}")
        if entry is None:
            out.append("")
            continue
        met = [agrees(entry["expected"], obtained) for obtained in entry["runs"].values()]
        tested = [m for m in met if m is not None]
        out.append(f"{sum(tested)} of {len(tested)}" if tested else "cannot tell")
    return out


STABLE = 0.9  # an expectation met in at least 9 of 10 published runs holds over seeds


def write_calibration(
    table: pd.DataFrame, stem: Path, published: tuple[str, Mapping[str, Mapping]] | None = None
) -> None:
    """calibration.csv (one row per control and claim) and calibration.md (the table, the
    manipulations, and what kept each disagreeing claim from its expected verdict).

    published: (where, "control/claim" -> {expected, runs: {run: obtained}}) from a published
    record: calibration.md adds how often the published runs met each expectation."""
    atomic_write_text(stem.with_suffix(".csv"), table.to_csv(index=False))
    shown = table[["control", "claim", "expected", "obtained", "agrees", "note"]]
    seeds_line: list[str] = []
    if published is not None:
        counts = over_runs(table, published[1])
        shown = shown.assign(**{"met in published runs": counts})
        parsed = [tuple(int(x) for x in c.split(" of ")) for c in counts if " of " in c]
        steady = sum(k >= STABLE * n for k, n in parsed)
        seeds_line = [
            f"Over the published runs ({published[0]}): **{steady} of {len(parsed)}** expectations met in "
            f"at least 9 of 10 runs.",
            "",
        ]
    tested = table[table["agrees"] != "cannot tell"]
    lines = [
        "# Calibration: each claim's check on controls where it should hold and where it should fail",
        "",
        "Each control manipulates this run's per-example scores in one declared way; the claims are then "
        "checked on it by the same code, at the run's shape (models, tasks, test items, bootstrap). "
        "*fails* means not shown or refuted. A claim that holds on a should-fail control is a check a broken "
        "pipeline passes; one that does not hold on a should-hold control lacks the power, or this run the "
        "room, to show the effect.",
        "",
        f"**{int((tested['agrees'] == 'yes').sum())} of {len(tested)}** testable expectations met"
        + (f" ({len(table) - len(tested)} cannot be tested on this run)." if len(tested) < len(table) else "."),
        "",
        *seeds_line,
        shown.to_markdown(index=False),
        "",
        "## The controls",
        "",
    ]
    manipulations = dict(zip(table["control"], table["manipulation"], strict=True))
    lines += [f"- **{name}**: {does}." for name, does in manipulations.items()]
    short = table.attrs.get("short", {})
    if short:
        lines += ["", "## Where a control did not give the expected verdict", ""]
        for (name, number), parts in short.items():
            lines.append(f"- **{name}**, claim {number}: " + "; ".join(parts) + ".")
    lines += [
        "",
        "Computed by `softeval calibration` from results/scores (and results/loglik for closed tasks' choices) "
        "with the claims' own checks (softeval.analysis.claims); the controls are softeval.analysis.calibration.",
        "",
    ]
    atomic_write_text(stem.with_suffix(".md"), "\n".join(lines))
