"""Reading the config files and naming where each key of the merged config came from: a config file,
or a `--config` override (`ConfigSources`), so that every error line names the place to fix; and
the --config values Snakemake hands over as text, read as YAML where the schema wants no text.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from softeval.data.tasks import merge_blocks
from softeval.io import read_utf8
from softeval.schema import InputError, load_schema

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
