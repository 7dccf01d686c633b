"""Build hook: ship the workflow (Snakefile, rules, schemas, task files, judge prompts) inside the
package as softeval/_workflow, so that `softeval run` works after a regular install from any folder.
Everything else about the package is in pyproject.toml; the list of shipped paths is
softeval.shipped.SHIPPED (one owner)."""

import ast
import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent


def shipped_paths() -> tuple[str, ...]:
    """softeval.shipped.SHIPPED, read without importing the package (its dependencies may be absent)."""
    tree = ast.parse((HERE / "workflow" / "softeval" / "shipped.py").read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "SHIPPED" for t in node.targets):
            return ast.literal_eval(node.value)
    raise RuntimeError("workflow/softeval/shipped.py defines no SHIPPED")


class BuildWithWorkflow(build_py):
    def run(self) -> None:
        super().run()
        if self.editable_mode:  # an editable install reads the checkout itself
            return
        target = Path(self.build_lib) / "softeval" / "_workflow"
        shutil.rmtree(target, ignore_errors=True)  # no file left from an earlier build
        for relative in shipped_paths():
            source, dest = HERE / relative, target / relative
            dest.parent.mkdir(parents=True, exist_ok=True)
            if source.is_dir():
                shutil.copytree(source, dest, dirs_exist_ok=True, ignore=shutil.ignore_patterns("__pycache__"))
            else:
                shutil.copy2(source, dest)


setup(cmdclass={"build_py": BuildWithWorkflow})
