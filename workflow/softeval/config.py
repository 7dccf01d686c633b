"""The workflow configuration: validation, defaults, and the checks a schema cannot express.

Every check here fails with one line naming where the key was set (a config file, or a
`--config` override: ConfigSources), the key and the fix, before any job runs.
"""

from __future__ import annotations

import copy
import json
import os
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from softeval.data.tasks import load_task, merge_blocks, task_names
from softeval.io import read_utf8
from softeval.judges.factory import JUDGES
from softeval.model_kinds import kind_of
from softeval.schema import InputError, fill_defaults, load_schema, validate
from softeval.settings import RandomModelSettings

DOCS = "config/README.md"
# What a job loads as a hub id (softeval.engine.models.HUB_ID); any other id is a local folder.
HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")
# analysis.reference_method where the config leaves it unset: the first of these that is evaluated
REFERENCE_ORDER = ("zero_shot", "few_shot", "soft_prompt")
OVERRIDE = "--config"


def load_config_file(path: Path | str) -> dict[str, Any]:
    path = Path(path)
    try:
        data = yaml.safe_load(read_utf8(path))
    except FileNotFoundError:
        raise InputError(f"{path}: config file not found; pass an existing file to --configfile") from None
    except yaml.YAMLError as err:
        raise InputError(f"{path}: not valid YAML ({str(err).splitlines()[0]}); fix the syntax") from None
    return data if data is not None else {}


# ---- where a key came from ---------------------------------------------------------------------
def parse_key(key: str) -> list[str | int]:
    """models[2].zoo.size as its parts: ['models', 2, 'zoo', 'size'] (softeval.schema.key_path's inverse)."""
    if key == "(top level)":
        return []
    return [name if name else int(index) for name, index in re.findall(r"([^.\[\]]+)|\[(\d+)\]", key)]


def _sets(layer: Any, parts: Sequence[str | int]) -> bool:
    """Whether a config layer sets the value at `parts`: it holds it, or it holds a list or a value
    above it (which replaces everything below when the layers merge)."""
    node = layer
    for part in parts:
        if not isinstance(node, dict):
            return True
        if part not in node:
            return False
        node = node[part]
    return True


class ConfigSources:
    """Where each key of a merged config came from, for the error lines.

    Snakemake lays the config files one over the other, in order, then the --config overrides
    over them: mappings merge key by key, anything else (a list, a value) replaces what was
    there. A key's source is the last layer that set it or, for a key that no layer sets (a
    missing key), the last that set its nearest parent; an override is named as the flag that
    gave it: `--config evaluation=...`.
    """

    def __init__(self, files: Sequence[tuple[str, Mapping[str, Any]]], overrides: Mapping[str, Any] | None = None):
        self.files = [(str(name), dict(data or {})) for name, data in files]
        self.overrides = dict(overrides or {})

    @classmethod
    def read(cls, paths: Sequence[Path | str], overrides: Mapping[str, Any] | None = None) -> ConfigSources:
        """The config files at `paths` (in the order they are laid over each other) and the overrides."""
        return cls([(str(path), load_config_file(path)) for path in paths], overrides)

    def __str__(self) -> str:
        return ", ".join(name for name, _ in self.files) or (OVERRIDE if self.overrides else "config")

    def layers(self) -> Iterator[tuple[str, dict[str, Any]]]:
        yield from self.files
        for key, value in self.overrides.items():
            yield f"{OVERRIDE} {key}=...", {key: value}

    def merged(self) -> dict[str, Any]:
        """The config Snakemake builds from these layers."""
        merged: dict[str, Any] = {}
        for _, layer in self.layers():
            merged = merge_blocks(merged, copy.deepcopy(layer))
        return merged

    def source_of(self, key: str | Sequence[str | int]) -> str:
        parts = parse_key(key) if isinstance(key, str) else list(key)
        for depth in range(len(parts), 0, -1):
            setters = [name for name, layer in self.layers() if _sets(layer, parts[:depth])]
            if setters:
                return setters[-1]
        return str(self)

    def from_override(self, key: str | Sequence[str | int]) -> bool:
        return self.source_of(key).startswith(f"{OVERRIDE} ")


def key_source(key: str, files: Sequence[tuple[str, Mapping[str, Any]]], overrides: Mapping[str, Any] | None) -> str:
    """The file (or `--config <top key>=...`) that set `key` in the config merged from these."""
    return ConfigSources(files, overrides).source_of(key)


Source = str | ConfigSources


def namer(source: Source) -> Callable[[str], str]:
    """key -> what an error line about that key names first."""
    return source.source_of if isinstance(source, ConfigSources) else (lambda key: source)


def read_override_text(config: dict[str, Any], sources: ConfigSources) -> None:
    """Snakemake reads the values inside a --config mapping as text: `evaluation={test_limit: 100}`
    gives '100'. Where the schema wants no text at such a key, and the text read as YAML is what
    the schema wants (a number, a flag, null), take what YAML reads. Values from files stay as written."""
    if not sources.overrides:
        return
    schema = load_schema("config")
    validator = jsonschema.validators.validator_for(schema)(schema)

    def walk(errors: Any) -> Iterator[jsonschema.ValidationError]:
        for error in errors:
            yield error
            yield from walk(error.context or [])

    for _ in range(1000):  # each round reads at least one value; a config has fewer
        changed = False
        for error in walk(validator.iter_errors(config)):
            path = list(error.absolute_path)
            if error.validator != "type" or not isinstance(error.instance, str) or not path:
                continue
            if not sources.from_override(path):
                continue
            try:
                value = yaml.safe_load(error.instance)
            except yaml.YAMLError:
                continue
            wanted = error.validator_value if isinstance(error.validator_value, list) else [error.validator_value]
            if any(validator.is_type(value, kind) for kind in wanted):
                parent = config
                for part in path[:-1]:
                    parent = parent[part]
                parent[path[-1]] = value
                changed = True
                break
        if not changed:
            return


def check_config(
    config: dict[str, Any], source: Source, workflow_root: Path, workdir: Path | str | None = None
) -> dict[str, Any]:
    """Validate `config` in place, fill defaults, and check cross-references and the model folders.

    Raises InputError with one line naming the source of the key (`source`: a file name, or
    ConfigSources to name the file or --config override that set it), the key and the fix.
    A local model folder (a model entry's id) is relative to `workdir` (default: the current
    folder, where Snakemake's jobs run).
    """
    where = namer(source)
    if isinstance(source, ConfigSources):
        read_override_text(config, source)
    validate(config, "config", where, DOCS)
    analysis = config.get("analysis")
    reference_given = isinstance(analysis, dict) and "reference_method" in analysis  # before the default fills it
    fill_defaults(config, load_schema("config"))
    names = [m["name"] for m in config["models"]]
    for index, name in enumerate(names):
        if names.index(name) != index:
            key = f"models[{index}].name"
            raise InputError(f"{where(key)}: key '{key}': model name {name!r} is used twice; rename one")
    sizes = config["zoo"]["sizes"]
    for index, model in enumerate(config["models"]):
        _check_model_entry(model, index, where)
        if "zoo" not in model:
            continue
        size = model["zoo"]["size"]
        if size not in sizes:
            key = f"models[{index}].zoo.size"
            raise InputError(
                f"{where(key)}: key '{key}' is {size!r}; use one of {', '.join(sorted(sizes))} "
                "or define it under zoo.sizes"
            )
    for size_name, size in sizes.items():
        if size["width"] % size["heads"]:
            key = f"zoo.sizes.{size_name}"
            raise InputError(f"{where(key)}: key '{key}': width must be a multiple of heads")
    tune = config["evaluation"]["tune"]
    late = [step for step in tune["snapshots"] if step > tune["steps"]]
    if late:
        key = "evaluation.tune.snapshots"
        raise InputError(
            f"{where(key)}: key '{key}' has step {late[0]} after the last step {tune['steps']}; "
            "remove it or raise evaluation.tune.steps"
        )
    if tune["init"] == "text" and not tune.get("init_text"):
        key = "evaluation.tune.init_text"
        raise InputError(f"{where(key)}: key '{key}' is missing; init 'text' needs it")
    _check_reference_method(config, reference_given, where)
    judge = config["evaluation"]["judge"]
    kind = JUDGES.get(judge["name"])
    missing = [key for key in kind.needs if not judge.get(key)]
    if missing:
        key = f"evaluation.judge.{missing[0]}"
        raise InputError(f"{where(key)}: key '{key}' is missing; judge {judge['name']!r} needs a {missing[0]}")
    problem = kind.check(judge) if kind.check else None
    if problem:
        raise InputError(f"{where('evaluation.judge')}: {problem}")
    if judge.get("base_url") and judge.get("base_url_env"):
        raise InputError(f"{where('evaluation.judge')}: evaluation.judge has base_url and base_url_env; keep one")
    folder = task_dir(config, workflow_root)
    sources = set()
    for index, name in enumerate(config["tasks"]):
        if not (folder / f"{name}.yaml").is_file():
            known = ", ".join(task_names(folder)) or "none"
            key = f"tasks[{index}]"
            raise InputError(
                f"{where(key)}: key '{key}' is {name!r} but {folder / name}.yaml does not exist; "
                f"available tasks: {known} (fix the name or add the task file)"
            )
        sources.add(load_task(folder, name).dataset["source"])
    if any("zoo" in m for m in config["models"]) and "world" not in sources:
        raise InputError(
            f"{where('tasks')}: key 'tasks' has no world task, but embedded-zoo models are pre-trained on the world's "
            "tasks; add one (e.g. world_numeric) or use hub models"
        )
    for task in config["evaluation"]["test_limit_per_task"]:
        if task not in config["tasks"]:
            key = f"evaluation.test_limit_per_task.{task}"
            raise InputError(
                f"{where(key)}: key '{key}' names a task the config does not evaluate; "
                f"use one of {', '.join(config['tasks'])}"
            )
    for index, model in enumerate(config["models"]):
        if "gguf" in model:
            from softeval.engine.gguf import locate_gguf

            key = f"models[{index}].gguf"
            try:
                locate_gguf(model["gguf"], workflow_root)
            except InputError as err:
                raise InputError(f"{where(key)}: key '{key}': {err}") from None
    _check_model_ids(config, where, Path(workdir) if workdir is not None else Path.cwd())
    if "hub" in sources and config["data"]["source"] == "mirror" and not config["data"].get("mirror"):
        key = "data.mirror"
        raise InputError(f"{where(key)}: key '{key}' is missing; data.source 'mirror' needs the mirror folder")
    _check_published(config, where, Path(workflow_root))
    return config


def _check_model_entry(model: dict[str, Any], index: int, where: Callable[[str], str]) -> None:
    """What the schema cannot say about a model entry's roles."""
    kind = kind_of(model)
    built = kind.name if kind.built_locally else None
    for role in ("base", "post"):
        given = model.get(role)
        entry = given if isinstance(given, dict) else {}  # post: false (base only) has no keys
        key = f"models[{index}].{role}.id"
        if built and "id" in entry:
            raise InputError(f"{where(key)}: key '{key}': a {built} model is built locally; remove the id")
        if not built and isinstance(given, dict) and "id" not in entry:
            raise InputError(f"{where(key)}: key '{key}' is missing; give a hub id (owner/name) or a local directory")
    if isinstance(model.get("base"), dict) and model["base"].get("chat_template"):
        key = f"models[{index}].base.chat_template"
        raise InputError(f"{where(key)}: key '{key}': base models never use a chat template; remove it")


def _check_reference_method(config: dict[str, Any], given: bool, where: Callable[[str], str]) -> None:
    """The post-trained ranking the base rankings are compared with must be one the run evaluates.
    Unset, it follows the methods: zero_shot when evaluated, else few_shot, else soft_prompt."""
    methods = config["evaluation"]["methods"]
    analysis = config["analysis"]
    if not given:
        analysis["reference_method"] = next((m for m in REFERENCE_ORDER if m in methods), methods[0])
        return
    reference = analysis["reference_method"]
    if reference not in methods:
        key = "analysis.reference_method"
        evaluated = [m for m in REFERENCE_ORDER if m in methods] or list(methods)
        raise InputError(
            f"{where(key)}: key '{key}' is {reference!r} but evaluation.methods evaluates only "
            f"{', '.join(evaluated)}; set {key} to {' or '.join(evaluated)}, or add {reference} to evaluation.methods"
        )


def _check_published(config: dict[str, Any], where: Callable[[str], str], workflow_root: Path) -> None:
    """analysis.published (relative to the workflow root, as task_dir is) must exist: claims.md quotes it."""
    name = config["analysis"].get("published")
    if not name:
        return
    path = Path(name) if os.path.isabs(name) else workflow_root / name
    if not path.is_file():
        key = "analysis.published"
        raise InputError(
            f"{where(key)}: key '{key}' is {name!r} but {path} does not exist; "
            "give a record that `softeval publish-ranges` writes, or null"
        )


# ---- model folders -----------------------------------------------------------------------------
FOLDER_FIX = "give the folder that holds the checkpoint's config.json and weights"
AGAIN = "copy or download the checkpoint again"


def _check_model_ids(config: dict[str, Any], where: Callable[[str], str], workdir: Path) -> None:
    """Each checkpoint id: a local folder that holds a loadable model, or a valid hub id."""
    for index, model in enumerate(config["models"]):
        for role in ("base", "post"):
            entry = model.get(role)
            if not isinstance(entry, dict) or "id" not in entry:
                continue
            key = f"models[{index}].{role}.id"
            problem = model_id_problem(entry["id"], workdir, bool(model.get("bin_weights")), f"models[{index}]")
            if problem:
                raise InputError(f"{where(key)}: key '{key}' is {problem}")


def local_model_folder(model_id: str, workdir: Path) -> Path | None:
    """The folder a job loads for this id, or None for a hub id (owner/name). As a job reads it
    (softeval.engine.models.check_reference): a path that exists (relative to the working
    directory) is a folder; so is anything that is not of the hub form; the rest is a hub id."""
    path = Path(model_id)
    folder = path if path.is_absolute() else workdir / path
    if folder.exists() or model_id.startswith(("./", "../", "~")) or not HUB_ID.match(model_id):
        return folder
    return None


def model_id_problem(model_id: str, workdir: Path, bin_weights: bool, entry_key: str) -> str | None:
    """What would stop a job loading the model `model_id` names, as "'<id>': <what>; <fix>"
    (None: nothing seen; a hub id is looked up by softeval.preflight, where jobs cannot download)."""
    shown = repr(model_id)
    if model_id.startswith("~"):
        return f"{shown}: jobs do not expand '~'; write the full path ({Path(model_id).expanduser()})"
    folder = local_model_folder(model_id, workdir)
    if folder is None:
        from huggingface_hub.utils import HFValidationError, validate_repo_id

        try:
            validate_repo_id(model_id)
        except HFValidationError as err:
            return f"{shown}: not a valid hub id ({str(err).splitlines()[0]}); fix it (owner/name)"
        return None
    if not Path(model_id).is_absolute():
        shown += f" ({folder})"
    if not folder.exists() and not model_id.startswith(("/", "./", "../")):  # a folder only by its form
        return (
            f"{shown}: neither an existing folder nor a hub id owner/name; fix the path, "
            "or write the hub id in full (owner/name)"
        )
    found = checkpoint_problem(folder, bin_weights, entry_key)
    return f"{shown}: {found[0]}; {found[1]}" if found else None


def checkpoint_problem(folder: Path, bin_weights: bool, entry_key: str) -> tuple[str, str] | None:
    """(what is wrong, the fix) when `folder` holds no model a job can load (transformers'
    from_pretrained: config.json and model.safetensors, or shards and their index; .bin files
    only where the entry sets bin_weights); None when it looks complete."""
    if not folder.exists():
        return "no such folder", f"{FOLDER_FIX}, or a hub id owner/name"
    if not folder.is_dir():
        return "a file, not a folder", FOLDER_FIX
    if not (folder / "config.json").is_file():
        return (
            "no config.json there, so it is not a Hugging Face model folder",
            f"{FOLDER_FIX} (save_pretrained writes both)",
        )
    try:
        json.loads((folder / "config.json").read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as err:
        return f"config.json there is not valid JSON ({str(err).splitlines()[0]})", AGAIN
    formats = [("model.safetensors", "model.safetensors.index.json")]
    if bin_weights:
        formats.append(("pytorch_model.bin", "pytorch_model.bin.index.json"))
    for single, index in formats:
        if (folder / single).is_file():
            return None
        if (folder / index).is_file():
            try:
                shards = sorted(set(json.loads((folder / index).read_text(encoding="utf-8"))["weight_map"].values()))
            except (ValueError, UnicodeDecodeError, KeyError, TypeError, AttributeError):
                return f"{index} there is not a weight index (no weight_map)", AGAIN
            missing = [shard for shard in shards if not (folder / str(shard)).is_file()]
            if missing:
                return f"{index} lists {missing[0]}, which is not there", AGAIN
            return None
    if not bin_weights and any(folder.glob("pytorch_model*.bin")):
        return (
            "only .bin weights there",
            f"set {entry_key}.bin_weights: true to read them, or convert them to safetensors",
        )
    wanted = "model.safetensors, or shards and model.safetensors.index.json"
    if bin_weights:
        wanted = "model.safetensors or pytorch_model.bin, or shards and their index .json"
    return f"no weights there ({wanted})", "copy the checkpoint's weight files into it"


def model_kind(model: dict[str, Any]) -> str:
    """The name of the entry's kind (softeval.model_kinds): zoo, random, gguf or checkpoint."""
    return kind_of(model).name


def model_options(model: dict[str, Any], role: str) -> dict[str, Any]:
    """How a job loads this model in this role (softeval.engine.models.ModelOptions fields)."""
    entry = model.get(role) or {}
    kind = kind_of(model)
    return {
        "revision": entry.get("revision", "main") if kind.hub_revision else None,
        "dtype": entry.get("dtype", "auto"),
        "device_map": model.get("device_map"),
        "trust_remote_code": bool(model.get("trust_remote_code", False)),
        "chat_template": role == "post" and entry.get("chat_template", kind.chat_template_default),
        # only when set: every other entry's options (a job parameter) stay as they were
        **({"bin_weights": True} if model.get("bin_weights") else {}),
    }


def random_spec(model: dict[str, Any]) -> dict[str, Any]:
    """A random model entry's settings, the schema's defaults filled in."""
    return RandomModelSettings.parse(model["random"], f"models[{model['name']}].random").as_dict()


def task_dir(config: dict[str, Any], workflow_root: Path) -> Path:
    path = Path(config["task_dir"])
    return path if path.is_absolute() else Path(workflow_root) / path


def workdir_relative(path: str | Path, workdir: str | Path) -> str:
    """`path` relative to `workdir` when it lies inside it (through symlinks too), else
    absolute. Snakemake records input paths: an absolute one inside the checkout would make
    a moved or copied checkout rerun every job."""
    path, workdir = Path(path).resolve(), Path(workdir).resolve()
    return str(path.relative_to(workdir)) if path.is_relative_to(workdir) else str(path)


def model_entry(config: dict[str, Any], name: str) -> dict[str, Any]:
    for model in config["models"]:
        if model["name"] == name:
            return model
    known = ", ".join(m["name"] for m in config["models"])
    raise InputError(f"unknown model {name!r}; the config defines: {known}")
