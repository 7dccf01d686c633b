"""The workflow configuration: validation, defaults, and the checks a schema cannot express.

Every check here fails with one line naming where the key was set (a config file, or a
`--config` override: ConfigSources), the key and the fix, before any job runs.

One module per concern, their names re-exported here: `sources` (reading the config files,
`ConfigSources`: where each key came from), `checks` (`check_config`), `model_folders` (a
checkpoint id as a job reads it: a local folder that must hold a loadable model, or a hub id)
and `lookups` (what the plan and the jobs read from a checked config: `model_entry`,
`model_options`, `random_spec`, `task_dir`, `workdir_relative`).
"""

from __future__ import annotations

from softeval.config.checks import DOCS, REFERENCE_ORDER, check_config
from softeval.config.lookups import model_entry, model_kind, model_options, random_spec, task_dir, workdir_relative
from softeval.config.model_folders import (
    AGAIN,
    FOLDER_FIX,
    HUB_ID,
    checkpoint_problem,
    local_model_folder,
    model_id_problem,
)
from softeval.config.sources import (
    OVERRIDE,
    ConfigSources,
    Source,
    key_source,
    load_config_file,
    namer,
    parse_key,
    read_override_text,
)

__all__ = [
    "AGAIN",
    "DOCS",
    "FOLDER_FIX",
    "HUB_ID",
    "OVERRIDE",
    "REFERENCE_ORDER",
    "ConfigSources",
    "Source",
    "check_config",
    "checkpoint_problem",
    "key_source",
    "load_config_file",
    "local_model_folder",
    "model_entry",
    "model_id_problem",
    "model_kind",
    "model_options",
    "namer",
    "parse_key",
    "random_spec",
    "read_override_text",
    "task_dir",
    "workdir_relative",
]
