"""The words claims.md writes under a part, shared by the claims' `sources`: which per-example
files a part read, how its interval was drawn, and the `softeval review` line that shows the
examples behind it, so that every number in claims.md can be traced to its examples."""

from __future__ import annotations

from softeval import layout
from softeval.analysis.claims.framework import LABEL
from softeval.analysis.claims.verdicts import Part
from softeval.names import BASE, SOFT_PROMPT
from softeval.settings import AnalysisSettings

# where claims.md says the per-example files are (the claims job's --scores-root)
SCORES = layout.unit_root(layout.SCORES)
METHOD_OF = {label: method for method, label in LABEL.items()}


def score_file(role: str, method: str, step: int | None, model: str = "<model>", task: str = "<task>") -> str:
    """The per-example scores file of a unit, as claims.md names it."""
    name = f"soft_prompt/step{step}" if method == SOFT_PROMPT else method
    return f"{SCORES}/{model}/{role}/{task}/{name}.jsonl"


def review_line(
    model: str,
    task: str,
    method: str,
    step: int | None,
    role: str = BASE,
    vs: str | None = None,
    vs_step: int | None = None,
    metric: str | None = None,
    flag: str = "",
) -> str:
    """The `softeval review` command that shows the examples behind a comparison."""
    words = ["softeval review", f"--model {model}"] + ([f"--role {role}"] if role != BASE else [])
    words += [f"--task {task}", f"--method {method}"] + ([f"--step {step}"] if step is not None else [])
    words += [f"--vs {vs}"] if vs else []
    words += [f"--vs-step {vs_step}"] if vs_step is not None else []
    words += [f"--metric {metric}"] if metric else []
    words += [flag] if flag else []
    return "`" + " ".join(words) + "`"


def draws_text(settings: AnalysisSettings) -> str:
    """How many resamples, from which seed: what reproduces an interval."""
    return f"{settings.bootstrap} draws, seed {settings.seed}"


def bootstrap_text(settings: AnalysisSettings) -> str:
    """The paired bootstrap's line, as the claims of means and mean differences draw their intervals."""
    return (
        f"interval: paired percentile bootstrap over test items ({draws_text(settings)}; one draw of items shared "
        "by every model, method and task asking about the same items)"
    )


def over(models: list[str], tasks: list[str]) -> str:
    """The units a part pools, filling in the <model> and <task> of `score_file`."""
    return f"for <model> in {', '.join(models)} and <task> in {', '.join(tasks)}"


def baseline_of(part: Part) -> str | None:
    """The baseline method a comparison part names ('vs zero-shot', 'base models vs few-shot',
    'few-shot: ...'); None for a part that names none."""
    return METHOD_OF.get(part.part.split(":")[0].removeprefix("vs ").split(" vs ")[-1])
