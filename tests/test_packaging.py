"""The conda environment of the rules installs what the package declares."""

from __future__ import annotations

import tomllib

import yaml

from tests.conftest import ROOT


def test_conda_env_mirrors_package_dependencies():
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    env = yaml.safe_load((ROOT / "envs" / "softeval.yaml").read_text())
    pip = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict))
    assert sorted(pip) == sorted(declared)


def test_every_rule_names_the_env_and_runs_the_module():
    for rules in (ROOT / "workflow" / "rules").glob("*.smk"):
        text = rules.read_text()
        assert text.count("conda:") == text.count("shell:")
        assert "softeval " not in text.replace("python -m softeval ", "")
