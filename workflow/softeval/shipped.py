"""Where the workflow's own files are: the Snakefile, its rules, schemas, task files and judge prompts.

In a checkout (or an editable install) they are the checkout's files. A regular install ships a
copy inside the package (softeval/_workflow, laid out as the checkout is; setup.py copies it at
build time), so `softeval run` works from any folder and every relative path in the rules
(../schemas, config/tasks) means the same thing in both.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent
# What a regular install ships, relative to the workflow root (setup.py copies exactly these).
SHIPPED = (
    "Snakefile",
    "workflow/rules",
    "workflow/schemas",
    "workflow/report",
    "workflow/profiles",
    "workflow/scripts",
    "config/config.yaml",
    "config/tasks",
    "config/judges",
    "envs",
)


def is_workflow_root(folder: Path) -> bool:
    return (folder / "Snakefile").is_file() and (folder / "workflow" / "rules").is_dir()


@cache
def workflow_root() -> Path:
    """The folder holding the Snakefile: the checkout this package lives in, else the shipped copy."""
    checkout = PACKAGE.parents[1]  # <checkout>/workflow/softeval
    if is_workflow_root(checkout) and (checkout / "workflow" / "softeval").resolve() == PACKAGE:
        return checkout
    copy = PACKAGE / "_workflow"
    if is_workflow_root(copy):
        return copy
    raise FileNotFoundError(
        f"softeval's workflow files are missing: neither {checkout} nor {copy} holds a Snakefile; "
        "reinstall softeval (pip install softeval, or pip install -e . in a checkout)"
    )
