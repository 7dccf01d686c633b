"""The format rule the rule judge applied to a task, read from its task file: said once in a
unit's header and again beside every "format=no", with why that response fails it."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from softeval.data.tasks import Task, load_task
from softeval.io import check_slug


def anchored(pattern: str) -> str:
    """A pattern as re.fullmatch applies it: ^...$ (a top-level alternation in a group)."""
    return f"^(?:{pattern})$" if "|" in pattern else f"^{pattern}$"


@dataclass(frozen=True)
class FormatRule:
    """What the rule judge checks for format on this task (softeval.data.tasks.Task.is_formatted,
    softeval.judges.rule): read from the task file, or `missing` says why it is not shown."""

    task: Task | None
    source: str  # the task file, or why there is none

    def describe(self) -> str:
        if self.task is None:
            return f"not shown ({self.source})"
        task = self.task
        if task.closed:
            rule = "the response is exactly one of the listed options as written (e.g. 'B. <option text>')"
        else:
            assert task.format_pattern is not None
            rule = f"the response, stripped, matches {anchored(task.format_pattern.pattern)}"
            if task.answer_type in ("span", "text"):
                rule += ", or is the gold or an alias itself"
        return (
            f"{task.format_description}: {rule}; a degenerate response is never in format (rule judge; {self.source})"
        )

    def why_not(self, example: dict[str, Any]) -> str | None:
        """Why the judge said "format no" to this example, as far as the files tell."""
        if example.get("degenerate"):
            return f"degenerate: {example['degenerate']}"
        judge = example.get("judge") or "rule"
        if self.task is None:
            return None if judge == "rule" else f"judged by {judge}"
        task = self.task
        if judge != "rule":
            return f"judged by {judge} against: {task.format_description}"
        response = str(example.get("response") or "").strip()
        if task.closed:
            listed = (example.get("options") or {}).get("options")
            shown = ", ".join(repr(o) for o in listed) if listed else "'<letter>. <option text>'"
            return f"not one of the listed options as written: {shown}"
        assert task.format_pattern is not None
        pattern = anchored(task.format_pattern.pattern)
        if task.format_pattern.fullmatch(response):
            return f"scored no, yet it matches {pattern}: the task file changed since scoring? rerun the judge"
        text = f"does not match {pattern}"
        if task.answer_type in ("span", "text"):
            text += " and is not the gold or an alias"
        return text


def task_dirs(results: Path, tasks: Path | None) -> list[Path]:
    """Where the task file may be: --tasks, else config/tasks beside results/, else under the
    current folder."""
    if tasks is not None:
        return [tasks]
    return [results.resolve().parent / "config" / "tasks", Path("config") / "tasks"]


def format_rule(results: Path, task: str, tasks: Path | None = None) -> FormatRule:
    """The task's format rule: from --tasks (a missing file is an error listing the tasks there),
    else the first task file found (none: the rule is not shown, and the header says why)."""
    if tasks is not None:
        return FormatRule(load_task(tasks, task), str(tasks / f"{task}.yaml"))
    for folder in task_dirs(results, tasks):
        path = folder / f"{check_slug(task, 'task')}.yaml"
        if path.is_file():
            return FormatRule(load_task(folder, task), str(path))
    return FormatRule(None, f"no task file {task}.yaml beside {results} or in ./config/tasks: pass --tasks DIR")
