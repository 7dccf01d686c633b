"""Tasks are data: one YAML file per benchmark, validated, rendered into prompts and targets.

An example is a dict with at least: id, question, answer; closed tasks add options (list of
option texts) and label (index of the gold option); reasoning benchmarks add solution (the
dataset's worked solution, which their target is).
"""

from __future__ import annotations

import re
import string
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from softeval.data.answers import last_boxed, same_answer
from softeval.data.world import RELATIONS
from softeval.io import check_slug, read_utf8
from softeval.schema import InputError, validate

DOCS = "config/README.md#task-files"
LETTERS = string.ascii_uppercase
LAST_BOXED = "last_boxed"  # answer.extract: the last balanced \\boxed{} (braces nest: no regex can)
TRAIN_MAX = "train_max"  # prompt.max_new_tokens: fit the longest train target (worked solutions)
OPTIONS_MAX = "options_max"  # prompt.max_new_tokens: fit the longest option of the test split (closed tasks)
TARGET_FIELDS = ("answer", "letter", "solution")
SEEDED_SHOTS, FIRST_IN_GROUP = "seeded", "first_in_group"  # prompt.shots
HARNESS_GENERATION_METRICS = ("exact_match", "math_verify")  # scored from a response (the rest: likelihoods)


@dataclass(frozen=True)
class HarnessGeneration:
    """lm-evaluation-harness's generation_kwargs for its task: where its greedy response ends."""

    until: tuple[str, ...]
    max_gen_toks: int = 256  # HFLM's default budget, in the model's tokens


@dataclass(frozen=True)
class Task:
    """One benchmark: how to ask, what a formatted answer looks like, how to extract it."""

    name: str
    version: int
    kind: str
    description: str
    dataset: dict[str, Any]
    instruction: str
    query_template: str
    target_template: str
    stop: tuple[str, ...]
    max_new_tokens: int | str | None  # tokens, TRAIN_MAX or OPTIONS_MAX (resolved per tokenizer by the generate job)
    format_description: str
    format_pattern: re.Pattern[str] | None
    extract_pattern: re.Pattern[str] | None  # None: the last balanced \\boxed{} (answer.extract: last_boxed)
    answer_type: str
    harness: tuple[dict[str, Any], ...] = ()  # lm-evaluation-harness's scores (softeval.judges.harness)
    harness_generation: HarnessGeneration | None = None  # where the harness's own response ends
    shots: str = SEEDED_SHOTS  # few-shot selection: SEEDED_SHOTS or FIRST_IN_GROUP (softeval.engine.methods)
    cost: dict[str, Any] | None = None  # planning figures for `softeval plan-cost` only (never read by evaluation)
    # the shared blocks the file includes (inputs of every job that reads it): where the task
    # came from, not what it means, so not compared
    includes: tuple[Path, ...] = field(default=(), compare=False)

    @property
    def closed(self) -> bool:
        return self.kind == "closed"

    def options_block(self, example: dict[str, Any]) -> str:
        return "\n".join(f"{LETTERS[i]}. {text}" for i, text in enumerate(example.get("options") or []))

    def query(self, example: dict[str, Any]) -> str:
        """One question in the task's layout, ending where the answer starts."""
        return self.query_template.format(question=example["question"], options=self.options_block(example))

    def prompt(self, example: dict[str, Any]) -> str:
        """The zero-shot prompt: the written instruction, then the question."""
        return f"{self.instruction}\n\n{self.query(example)}"

    def target(self, example: dict[str, Any]) -> str:
        """The expected response, exactly as a formatted answer is written (with its leading space)."""
        letter = LETTERS[example["label"]] if self.closed else ""
        return self.target_template.format(answer=example["answer"], letter=letter, solution=example.get("solution"))

    def option_target(self, example: dict[str, Any], k: int) -> str:
        """Closed tasks: option `k` written as the expected response (" B. <text>")."""
        return self.target_template.format(answer=example["options"][k], letter=LETTERS[k], solution=None)

    def option_responses(self, example: dict[str, Any]) -> list[str]:
        """Closed tasks: every listed option written as a response ("B. <text>")."""
        return [self.option_target(example, k).strip() for k in range(len(example["options"]))]

    def is_formatted(self, response: str, example: dict[str, Any]) -> bool:
        """Format accuracy: is the response in the expected format, right or wrong?"""
        response = response.strip()
        if self.closed:
            return response in self.option_responses(example)
        assert self.format_pattern is not None
        if self.format_pattern.fullmatch(response) is not None:
            return True
        # a phrase answer that is the gold itself is in form, however long or punctuated
        # ("Oklahoma!", "Who's Afraid of Virginia Woolf?"): the pattern cannot reject the answer key
        return self.answer_type in ("span", "text") and any(
            same_answer(response, gold, self.answer_type) for gold in gold_answers(example)
        )

    def extract(self, response: str) -> str | None:
        """The final answer of a formatted response: the pattern's last match (a worked
        solution may quote intermediate results in the same form before its final line)."""
        if self.extract_pattern is None:
            return last_boxed(response)
        matches = list(self.extract_pattern.finditer(response.strip()))
        return matches[-1].group(1) if matches else None

    def is_strictly_correct(self, response: str, example: dict[str, Any]) -> bool:
        """The usual benchmark score: in format and the extracted answer equals the gold."""
        if not self.is_formatted(response, example):
            return False
        if self.closed:
            return response.strip() == self.option_responses(example)[example["label"]]
        extracted = self.extract(response)
        return extracted is not None and any(
            same_answer(extracted, gold, self.answer_type) for gold in gold_answers(example)
        )


def gold_answers(example: dict[str, Any]) -> list[str]:
    """The gold answer and its accepted aliases (TriviaQA aliases, every NQ answer)."""
    return [str(example["answer"]), *(str(a) for a in example.get("aliases") or [])]


def task_names(task_dir: Path | str) -> list[str]:
    """The tasks a folder defines: its .yaml files, less the shared blocks they include (_*.yaml)."""
    return sorted(p.stem for p in Path(task_dir).glob("*.yaml") if not p.name.startswith("_"))


INCLUDE_NAME = re.compile(r"^_[a-z0-9_]+\.yaml$")


def _read_yaml(path: Path) -> dict[str, Any]:
    try:
        data = yaml.safe_load(read_utf8(path))
    except yaml.YAMLError as err:
        raise InputError(f"{path}: not valid YAML ({str(err).splitlines()[0]}); fix the syntax") from None
    if not isinstance(data, dict):
        raise InputError(f"{path}: must be a mapping of task keys (see {DOCS})")
    return data


def merge_blocks(base: dict[str, Any], own: dict[str, Any]) -> dict[str, Any]:
    """`own` over `base`: mappings merge key by key, anything else (lists included) replaces."""
    merged = dict(base)
    for key, value in own.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = merge_blocks(merged[key], value)
        else:
            merged[key] = value
    return merged


def read_task_data(path: Path) -> tuple[dict[str, Any], list[Path]]:
    """A task file's keys with its `include:` chain resolved, and the files it included.

    As in lm-evaluation-harness task YAMLs, `include: _base.yaml` names a file in the same
    folder whose keys the task file starts from; the task's own keys win, mapping by mapping.
    An included file may include another; a cycle, a missing file or a name that is not
    `_<name>.yaml` is an error naming the task file and the key.
    """
    data, included = _read_yaml(path), []
    seen = {path.resolve()}
    while "include" in data:
        name = data.pop("include")
        if not isinstance(name, str) or not INCLUDE_NAME.match(name):
            raise InputError(
                f"{path}: field 'include' is {name!r}; name a shared block in the same folder, "
                f"_<name>.yaml (lowercase, e.g. _lettered_choice.yaml) (see {DOCS})"
            )
        base_path = path.parent / name
        if not base_path.is_file():
            raise InputError(f"{path}: field 'include' names {base_path}, which does not exist; add it or fix the name")
        if base_path.resolve() in seen:
            raise InputError(f"{path}: field 'include' makes a cycle through {base_path}; remove one include")
        seen.add(base_path.resolve())
        included.append(base_path)
        data = merge_blocks(_read_yaml(base_path), data)
    return data, included


def task_includes(task_dir: Path | str, name: str) -> list[Path]:
    """The shared blocks a task file includes: inputs of every job that reads the task."""
    return read_task_data(Path(task_dir) / f"{check_slug(name, 'task')}.yaml")[1]


def load_task(task_dir: Path | str, name: str) -> Task:
    """Load and check config/tasks/<name>.yaml (with what it includes); every problem is one InputError line."""
    path = Path(task_dir) / f"{check_slug(name, 'task')}.yaml"
    if not path.is_file():
        known = task_names(task_dir)
        raise InputError(
            f"{path}: task file not found for task {name!r}; available: {', '.join(known) or 'none'} "
            "(fix the name under 'tasks' in the config or add the file)"
        )
    return load_task_file(path)


def load_task_file(path: Path | str) -> Task:
    """Load and check one task file (the task is named after it); every problem is one InputError line."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"{path}: task file not found; pass an existing config/tasks/<name>.yaml")
    check_slug(path.stem, "task")
    data, included = read_task_data(path)
    label = f"{path} (with {', '.join(p.name for p in included)})" if included else str(path)
    validate(data, "task", label, DOCS)
    return _build(data, path, tuple(included))


def _build(data: dict[str, Any], path: Path, includes: tuple[Path, ...] = ()) -> Task:
    def fail(key: str, problem: str) -> InputError:
        return InputError(f"{path}: field '{key}' {problem} (see {DOCS})")

    if data["name"] != path.stem:
        raise fail("name", f"is {data['name']!r} but the file is {path.name}; make them equal")
    dataset = data["dataset"]
    closed = data["kind"] == "closed"
    if dataset["source"] == "world":
        _check_world_dataset(dataset, closed, fail)
    else:
        _check_dataset_fields(dataset["fields"], closed, fail)
    if dataset["source"] == "local":
        dataset["files"] = _local_files(dataset["files"], path.parent, fail)
    query = data["prompt"]["query"]
    if "{question}" not in query:
        raise fail("prompt.query", "must contain {question}")
    if closed:
        if "{options}" not in query:
            raise fail("prompt.query", "must contain {options} for a closed task")
        pattern = None
    else:
        if "pattern" not in data["format"]:
            raise fail("format.pattern", "is missing; open tasks need the regular expression of a formatted answer")
        pattern = _compile(data["format"]["pattern"], "format.pattern", fail)
    for index, metric in enumerate(data.get("harness", [])):
        patterns = {"regex": metric.get("regex")}
        patterns |= {f"regexes_to_ignore[{i}]": r for i, r in enumerate(metric.get("regexes_to_ignore", []))}
        for key, regex in patterns.items():
            if regex is not None:
                _compile(regex, f"harness[{index}].{key}", fail)
    harness_generation = _harness_generation(data, fail)
    extract = None
    if data["answer"]["extract"] != LAST_BOXED:
        extract = _compile(data["answer"]["extract"], "answer.extract", fail)
        if extract.groups < 1:
            raise fail("answer.extract", "needs one capturing group around the answer")
    _check_template(data["prompt"]["target"], "prompt.target", TARGET_FIELDS, fail)
    _check_template(query, "prompt.query", ("question", "options"), fail)
    shots = data["prompt"].get("shots", SEEDED_SHOTS)
    if shots == FIRST_IN_GROUP and "group" not in dataset.get("fields", {}):
        raise fail("prompt.shots", "is first_in_group but dataset.fields.group names no column of groups (subjects)")
    if "{solution}" in data["prompt"]["target"] and "solution" not in dataset.get("fields", {}):
        raise fail("prompt.target", "uses {solution} but dataset.fields.solution names no column of worked solutions")
    return Task(
        name=data["name"],
        version=data["version"],
        kind=data["kind"],
        description=data["description"],
        dataset=dataset,
        instruction=data["prompt"]["instruction"],
        query_template=query,
        target_template=data["prompt"]["target"],
        stop=tuple(data["prompt"].get("stop", ["\n"])),
        max_new_tokens=data["prompt"].get("max_new_tokens"),
        format_description=data["format"]["description"],
        format_pattern=pattern,
        extract_pattern=extract,
        answer_type=data["answer"]["type"],
        harness=tuple(data.get("harness", [])),
        harness_generation=harness_generation,
        shots=shots,
        cost=data.get("cost"),
        includes=includes,
    )


def _harness_generation(data: dict[str, Any], fail: Any) -> HarnessGeneration | None:
    """The harness's stop strings and budget, present exactly when a harness score reads a response."""
    scored_from_text = [m["name"] for m in data.get("harness", []) if m["metric"] in HARNESS_GENERATION_METRICS]
    given = data.get("harness_generation")
    if scored_from_text and given is None:
        raise fail(
            "harness_generation",
            f"is missing; harness scores {', '.join(scored_from_text)} read the harness's own response: "
            "copy its generation_kwargs (until, max_gen_toks) from the harness's task YAML",
        )
    if given is None:
        return None
    if not scored_from_text:
        raise fail("harness_generation", "is given but no harness score reads a response (exact_match, math_verify)")
    budget = {"max_gen_toks": int(given["max_gen_toks"])} if "max_gen_toks" in given else {}
    return HarnessGeneration(tuple(given["until"]), **budget)


def _check_template(template: str, key: str, fields: tuple[str, ...], fail: Any) -> None:
    """A misspelt template field (say {entty} for {entity}) stops at load, not with a KeyError mid-run."""
    try:
        template.format(**dict.fromkeys(fields, "x"))
    except (KeyError, IndexError, ValueError) as err:
        allowed = ", ".join(f"{{{name}}}" for name in fields)
        raise fail(
            key, f"is not a valid template ({type(err).__name__}: {err}); use {allowed} only (write {{{{ for a brace)"
        ) from None


def _check_world_dataset(dataset: dict[str, Any], closed: bool, fail: Any) -> None:
    _check_template(dataset["question"], "dataset.question", ("entity",), fail)
    if "exposure" in dataset:
        _check_template(dataset["exposure"]["question"], "dataset.exposure.question", ("entity",), fail)
    named = {"dataset.relation": dataset["relation"]}
    if "exposure" in dataset:
        named["dataset.exposure.relation"] = dataset["exposure"]["relation"]
    for key, relation in named.items():
        if relation not in RELATIONS:
            raise fail(key, f"names unknown relation {relation!r}; use one of {', '.join(RELATIONS)}")
    if closed and "n_options" not in dataset:
        raise fail("dataset.n_options", "is missing; closed tasks need the number of options")


def _check_dataset_fields(fields: dict[str, Any], closed: bool, fail: Any) -> None:
    needed = ("options", "label") if closed else ("answer",)
    for name in needed:
        if name not in fields:
            kind = "closed" if closed else "open"
            raise fail(f"dataset.fields.{name}", f"is missing; {kind} tasks read it from the dataset")


def _local_files(files: dict[str, str], folder: Path, fail: Any) -> dict[str, str]:
    """A local task's split files, relative to the task file's folder unless absolute; each must exist."""
    resolved = {}
    for role, name in files.items():
        file = Path(name) if Path(name).is_absolute() else folder / name
        if not file.is_file():
            raise fail(
                f"dataset.files.{role}", f"names {file}, which does not exist; fix the path (relative to {folder})"
            )
        resolved[role] = str(file)
    return resolved


def _compile(pattern: str, key: str, fail: Any) -> re.Pattern[str]:
    try:
        return re.compile(pattern)
    except re.error as err:
        raise fail(key, f"is not a valid regular expression ({err})") from None
