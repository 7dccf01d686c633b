"""JSON-schema validation with one-line errors that name the file, the key and the fix.

jsonschema's own messages are long and name schema internals; users need to know which
key in which file is wrong and what to write instead.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from typing import Any

import jsonschema
import yaml

from softeval.shipped import workflow_root

SCHEMA_DIR = workflow_root() / "workflow" / "schemas"


class InputError(ValueError):
    """Bad user input (config, task file, dataset). The message is one line with the fix."""


@cache
def load_schema(name: str) -> dict[str, Any]:
    with open(SCHEMA_DIR / f"{name}.schema.yaml", encoding="utf-8") as handle:
        return yaml.safe_load(handle)


def key_path(parts: Any) -> str:
    """Render a jsonschema path as models[2].zoo.size."""
    out = ""
    for part in parts:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(top level)"


def _describe(error: jsonschema.ValidationError, docs: str) -> tuple[str, str]:
    """The offending key (an unknown or missing key itself, else where the error is) and the line's text."""
    where = key_path(error.absolute_path)
    schema = error.schema if isinstance(error.schema, dict) else {}
    if error.validator == "additionalProperties":
        allowed = sorted(schema.get("properties", {}))
        extra = sorted(set(error.instance) - set(allowed))
        unknown = f"{where}.{extra[0]}" if error.absolute_path else extra[0]
        return unknown, (
            f"unknown key '{unknown}'; allowed here: {', '.join(allowed)} (fix the spelling or remove it; see {docs})"
        )
    if error.validator == "required":
        missing = next(key for key in error.validator_value if key not in error.instance)
        full = f"{where}.{missing}" if error.absolute_path else missing
        return full, f"missing key '{full}'; add it (see {docs})"
    if error.validator == "type":
        return where, (
            f"key '{where}' must be of type {error.validator_value}, "
            f"got {type(error.instance).__name__} {error.instance!r} (see {docs})"
        )
    if error.validator == "enum":
        choices = ", ".join(repr(c) for c in error.validator_value)
        return where, f"key '{where}' is {error.instance!r}; use one of {choices}"
    if error.validator == "pattern" and not error.validator_value.startswith("^[a-z0-9]"):
        wanted = error.schema.get("description", f"text matching {error.validator_value}")
        return where, f"key '{where}' is {error.instance!r}; use {wanted} (see {docs})"
    if error.validator == "pattern":
        return where, (
            f"key '{where}' is {error.instance!r}; use 1-64 characters of a-z, 0-9, '_' and '-', "
            "starting with a letter or digit"
        )
    return where, f"key '{where}': {error.message} (see {docs})"


def validate(data: Any, schema_name: str, source: str | Callable[[str], str], docs: str) -> None:
    """Raise InputError naming the source and the first offending key, if `data` is invalid.

    `source` is a file name, or a function from the key (models[0].zoo.size) to what set it
    (softeval.config.ConfigSources.source_of: a config file or a --config override)."""
    schema = load_schema(schema_name)
    validator = jsonschema.validators.validator_for(schema)(schema)
    error = jsonschema.exceptions.best_match(validator.iter_errors(data))
    if error is not None:
        key, text = _describe(error, docs)
        raise InputError(f"{source(key) if callable(source) else source}: {text}")


def fill_defaults(data: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    """Fill in schema defaults recursively (after validation), as snakemake.utils.validate does."""
    for key, sub in schema.get("properties", {}).items():
        if key not in data and "default" in sub:
            data[key] = _copy(sub["default"])
        if isinstance(data.get(key), dict) and sub.get("type") == "object":
            fill_defaults(data[key], sub)
        if isinstance(data.get(key), list) and isinstance(sub.get("items"), dict):
            for item in data[key]:
                if isinstance(item, dict):
                    fill_defaults(item, sub["items"])
    return data


def _copy(value: Any) -> Any:
    return yaml.safe_load(yaml.safe_dump(value))
