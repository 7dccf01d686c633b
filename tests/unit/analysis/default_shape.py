"""What the claims' simulations are sized by: the embedded default's shape, read from
config/config.yaml (so that a change of the default changes the simulations with it), and a
world of per-example arrays to build the claims' inputs from.

The shape: how many base models (each with a post-trained twin), which tasks, how many test
questions each task asks, and which tasks ask about the world's test countries (every task whose
data comes from the world asks one question per test country, in world order: the same countries).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

from softeval.analysis.claims import Inputs
from softeval.analysis.tables import swap_distance_table
from softeval.settings import AnalysisSettings

ROOT = Path(__file__).resolve().parents[3]


@dataclass(frozen=True)
class Shape:
    models: int
    tasks: tuple[str, ...]
    questions: int  # test questions per task (the world's test countries)
    shared: tuple[str, ...]  # the tasks that ask about the same test countries
    coverage: tuple[float, ...]  # each model's share of the countries its corpus states


def default_shape(config: Path = ROOT / "config" / "config.yaml") -> Shape:
    data = yaml.safe_load(config.read_text())
    world = data["world"]
    tasks = tuple(data["tasks"])
    shared = tuple(
        t
        for t in tasks
        if yaml.safe_load((ROOT / "config" / "tasks" / f"{t}.yaml").read_text())["dataset"].get("source") == "world"
    )
    coverage = tuple(float((m.get("zoo") or {}).get("coverage", 0.5)) for m in data["models"])
    return Shape(len(data["models"]), tasks, round(world["test_fraction"] * world["n_entities"]), shared, coverage)


def sigmoid(x: np.ndarray) -> np.ndarray:
    return 1 / (1 + np.exp(-x))


class Arrays:
    """Per-example 0/1 arrays for (role, model, task, method, step) and metric, and the claims'
    inputs built from them the way a run builds them (summary of means, swap table, reader)."""

    def __init__(self, models: Iterable[str], tasks: Iterable[str], steps: tuple[int, ...]) -> None:
        self.models, self.tasks, self.steps = list(models), list(tasks), steps
        self.arrays: dict[tuple, dict[str, np.ndarray]] = {}

    def set(self, role, model, task, method, step, **metrics) -> None:
        unit = self.arrays.setdefault((role, model, task, method, step), {})
        unit.update({k: np.asarray(v, dtype=float) for k, v in metrics.items()})

    def summary(self) -> pd.DataFrame:
        return pd.DataFrame(
            [
                {"model": m, "role": r, "task": t, "method": method, "step": s}
                | {k: float(v.mean()) for k, v in metrics.items()}
                for (r, m, t, method, s), metrics in self.arrays.items()
            ]
        )

    def inputs(self, settings: AnalysisSettings, closed=(), **extra) -> Inputs:
        summary = self.summary()

        def per_example(role, task, method, step):
            units = {m: (role, m, task, method, step) for m in self.models}
            return {m: self.arrays[u]["strict"] for m, u in units.items() if u in self.arrays}

        return Inputs(
            summary=summary,
            swap=swap_distance_table(summary, per_example, settings),
            read=lambda unit, metric: self.arrays[(unit.role, unit.model, unit.task, unit.method, unit.step)][metric],
            closed_tasks=set(closed),
            settings=settings,
            **extra,
        )


class Countries:
    """A pool of countries, as the world's: each model knows the facts of the countries its corpus
    states (nested by coverage, as `World.covered`: a model of higher coverage knows a superset),
    whatever the task asks about them; each task's question about a country has a difficulty of
    its own. A model answers right with probability sigmoid(known or unknown level + difficulty):
    what it knows about a country moves its answers in every task alike, the effect the resampling
    by country is for."""

    def __init__(self, rng: np.random.Generator, shape: Shape, pool: int = 20_000, spread: float = 0.5) -> None:
        self.shape, self.pool = shape, pool
        fame = rng.random(pool)
        self.known = np.array([fame < c for c in shape.coverage])  # models x pool
        self.difficulty = {t: rng.normal(0, spread, pool) for t in shape.tasks}

    def chances(self, task: str, known: float, unknown: float) -> np.ndarray:
        """models x pool: the chance of a right answer at the two logit levels."""
        return sigmoid(np.where(self.known, known, unknown) + self.difficulty[task][None, :])

    def draw(self, rng: np.random.Generator) -> np.ndarray:
        """One test set: the countries every task asks about, in world order."""
        return rng.choice(self.pool, self.shape.questions, replace=False)

    def items(self, countries: np.ndarray) -> dict[str, list[str]]:
        """The item (country) of each test example of every task that asks about the countries."""
        return {t: [f"country {c}" for c in countries] for t in self.shape.shared}
