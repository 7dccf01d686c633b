"""The package's layers: a module imports only from its own layer or the ones below it.

base (io, schema, provenance, cpu_kernels, layout, names, settings, registry, shipped, progress) < data < engine < zoo,
judges, analysis (peers: none imports another) < jobs < cli, commands, config, model_kinds, plan, plan_cost, preflight,
runner, __main__.
Imports inside functions count too: a lazy import is still a dependency.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "workflow" / "softeval"
BASE = {"io", "schema", "provenance", "cpu_kernels", "layout", "names", "settings", "registry", "shipped", "progress"}
TOP = {"cli", "commands", "config", "plan", "plan_cost", "model_kinds", "preflight", "runner", "__main__"}
RANK = {"base": 0, "data": 1, "engine": 2, "zoo": 3, "judges": 3, "analysis": 3, "jobs": 4, "top": 5}
SUBPACKAGES = ("data", "engine", "zoo", "judges", "analysis", "jobs")


def layer_of(module: str) -> str:
    """The layer of softeval.<module> (dotted, without the package name)."""
    first = module.split(".")[0]
    if first in SUBPACKAGES:
        return first
    if first in BASE:
        return "base"
    if first in TOP or first == "":
        return "top"
    raise AssertionError(f"softeval.{module} is in no layer; add it to tests/test_layers.py")


def modules() -> list[tuple[str, Path]]:
    out = []
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE).with_suffix("")
        parts = [p for p in relative.parts if p != "__init__"]
        out.append((".".join(parts), path))
    return out


def imported_modules(path: Path) -> set[str]:
    """softeval modules a file imports (absolute imports; `from softeval import x` counts as x)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module == "softeval":
                found |= {alias.name for alias in node.names}
            elif node.module.startswith("softeval."):
                found.add(node.module.removeprefix("softeval."))
        elif isinstance(node, ast.ImportFrom) and node.level:
            raise AssertionError(f"{path}: relative import; write softeval.<module>")
        elif isinstance(node, ast.Import):
            found |= {a.name.removeprefix("softeval.") for a in node.names if a.name.startswith("softeval.")}
    return found


@pytest.mark.parametrize(("module", "path"), modules(), ids=[m or "softeval" for m, _ in modules()])
def test_no_module_imports_from_a_layer_above_its_own(module, path):
    mine = layer_of(module) if module else "top"
    for target in sorted(imported_modules(path)):
        theirs = layer_of(target)
        if mine in ("zoo", "judges", "analysis") and theirs in ("zoo", "judges", "analysis"):
            assert theirs == mine, f"softeval.{module} ({mine}) imports softeval.{target}: peers do not import peers"
        assert RANK[theirs] <= RANK[mine], (
            f"softeval.{module} ({mine}) imports softeval.{target} ({theirs}), a layer above it"
        )


def test_package_inits_hold_only_a_docstring_so_light_commands_stay_light():
    """`softeval check-config` and `--help` import no torch: an __init__ says what its stage is, and
    imports nothing (importing softeval.engine.x must not import the rest of the engine). The one
    exception is the Python entry `softeval.run`, a function whose import happens when it is called."""
    for path in [PACKAGE / "__init__.py", *(PACKAGE / sub / "__init__.py" for sub in SUBPACKAGES)]:
        body = ast.parse(path.read_text(encoding="utf-8")).body
        statements = [
            node
            for node in body
            if not (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant))
            and not (path == PACKAGE / "__init__.py" and isinstance(node, ast.FunctionDef) and node.name == "run")
        ]
        assignments = [node for node in statements if isinstance(node, ast.Assign)]
        assert statements == assignments, f"{path}: only a docstring (and __version__) belong here"
        assert ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))), f"{path}: say what the stage holds"


def test_the_layer_check_catches_an_upward_import(tmp_path):
    """The check itself can fail: an engine module importing the zoo is reported."""
    bad = tmp_path / "bad.py"
    bad.write_text("def f():\n    from softeval.zoo.training import pretrain\n")
    assert imported_modules(bad) == {"zoo.training"}
    assert RANK[layer_of("zoo.training")] > RANK[layer_of("engine.generate")]


def test_every_module_has_a_layer():
    for module, _ in modules():
        layer_of(module or "__main__")


def test_building_the_command_line_imports_neither_pandas_nor_torch():
    """Every job starts by building the whole parser: a heavy import there is paid by all ~160
    jobs of a run (a parser that imported pandas cost each judge job 1.3 s of its 1.9 s)."""
    import subprocess
    import sys

    probe = "import sys, softeval.cli as c; c.build_parser(); print(sorted({'pandas', 'torch'} & set(sys.modules)))"
    found = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert found.stdout.strip() == "[]"
