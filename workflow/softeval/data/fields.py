"""From a benchmark's own row schema to a softeval example, as the task file's field map says.

An example is {id, question, answer, aliases, options, label}: open tasks carry the gold
answer (extracted from a worked solution where the benchmark has one) and its aliases, and
reasoning benchmarks the worked solution itself (solution); closed tasks carry the option
texts and the gold option's index, and their answer is the gold option's text.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from softeval.data.answers import last_boxed
from softeval.data.tasks import LETTERS, Task
from softeval.schema import InputError


def column(row: dict[str, Any], path: str, where: str) -> Any:
    """row["a"]["b"] for path "a.b"; a missing column is one error listing the columns there are."""
    value: Any = row
    for part in path.split("."):
        if not isinstance(value, dict) or part not in value:
            keys = ", ".join(sorted(value)) if isinstance(value, dict) else type(value).__name__
            raise InputError(
                f"{where}: no column {path!r} (at {part!r}; found: {keys}); name the right column under "
                "dataset.fields in the task file"
            )
        value = value[part]
    return value


CALCULATOR_ANNOTATION = re.compile(r"<<[^<>]*>>")


def gold_from(value: Any, how: str, where: str) -> str:
    """The gold answer from its column: as is, a list's first item, after "####", or the last \\boxed{}."""
    if isinstance(value, dict) or (isinstance(value, list) and how != "first"):
        raise InputError(
            f"{where}: the answer column holds a {type(value).__name__} ({str(value)[:60]}); map dataset.fields.answer "
            "to a text column, or a list column with answer_from: first (more answers: dataset.fields.aliases)"
        )
    if how == "first":
        if not isinstance(value, list) or not value:
            raise InputError(f"{where}: expected a non-empty list of answers, got {value!r}")
        value = value[0]
    if how == "after_hashes":
        text = str(value)
        if "####" not in text:
            raise InputError(f"{where}: the solution has no '####' line to take the answer from")
        return text.rsplit("####", 1)[1].strip().replace(",", "")
    if how == "last_boxed":
        boxed = last_boxed(str(value))
        if boxed is None:
            raise InputError(f"{where}: the solution has no \\boxed{{}} answer")
        return boxed.strip()
    return str(value).strip()


def option_index(label: Any, names: list[str] | None, n_options: int, where: str) -> int:
    """The gold option's index from an index, a digit string, a letter, or a name in `names`."""
    text = str(label).strip()
    if names is not None:
        names = [str(n).strip() for n in names]
        if text not in names:
            raise InputError(f"{where}: label {text!r} is not among the option names {names}")
        return names.index(text)
    if text.lstrip("-").isdigit():
        index = int(text)
    elif len(text) == 1 and text.upper() in LETTERS:
        index = LETTERS.index(text.upper())
    else:
        raise InputError(f"{where}: label {text!r} is neither an index nor a letter; map label_names")
    if not 0 <= index < n_options:
        raise InputError(f"{where}: label {text!r} is outside the {n_options} options")
    return index


def to_example(task: Task, row: dict[str, Any], index: int, role: str, source: str) -> dict[str, Any]:
    """One example in softeval's form; `source` names the file or dataset in errors."""
    fields = task.dataset["fields"]
    where = f"{source}, row {index} (task {task.name}, dataset.fields)"
    example_id = str(column(row, fields["id"], where)) if "id" in fields else f"{task.name}-{role}-{index:05d}"
    example: dict[str, Any] = {
        "id": example_id,
        "question": str(column(row, fields["question"], where)).strip(),
        "aliases": [],
        "options": None,
        "label": None,
    }
    if "group" in fields:
        example["group"] = str(column(row, fields["group"], where))
    if task.closed:
        options = [str(o).strip() for o in column(row, fields["options"], where)]
        names = column(row, fields["label_names"], where) if "label_names" in fields else None
        label = option_index(column(row, fields["label"], where), names, len(options), where)
        example.update(options=options, label=label, answer=options[label])
        return example
    answer = column(row, fields["answer"], where)
    how = fields.get("answer_from", "value")
    if isinstance(answer, list) and how == "value" and answer and all(isinstance(a, str | int | float) for a in answer):
        answer, extra = answer[0], answer[1:]  # a list of accepted answers: the first is the gold, the rest aliases
    else:
        extra = []
    example["answer"] = gold_from(answer, how, where)
    listed = column(row, fields["aliases"], where) if "aliases" in fields else []
    if not isinstance(listed, list):
        raise InputError(f"{where}: dataset.fields.aliases names a {type(listed).__name__} column; it must hold a list")
    example["aliases"] = _unique([*extra, *listed], exclude=example["answer"])
    if "solution" in fields:
        solution = str(column(row, fields["solution"], where)).strip()
        if fields.get("strip_annotations", False):
            solution = CALCULATOR_ANNOTATION.sub("", solution)
        example["solution"] = solution
    return example


def _unique(values: Iterable[Any], exclude: str) -> list[str]:
    seen = {exclude}
    out = []
    for value in values:
        text = str(value).strip()
        if text and text not in seen:
            seen.add(text)
            out.append(text)
    return out
