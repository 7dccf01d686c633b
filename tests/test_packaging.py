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


def test_the_transformers_floor_is_the_release_whose_api_the_engine_calls():
    """The engine passes the KV cache as `cache=` and reads `out.cache`: transformers 5.24 is the
    first release with that name (5.23 and earlier: past_key_values only; checked on both wheels).
    A lower floor lets pip keep an older transformers that fails at the first cached forward."""
    import inspect

    from packaging.requirements import Requirement
    from packaging.version import Version
    from transformers import LlamaModel

    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    transformers = next(Requirement(d) for d in declared if d.startswith("transformers"))
    floor = min(Version(s.version) for s in transformers.specifier if s.operator == ">=")
    assert floor >= Version("5.24")
    assert "cache" in inspect.signature(LlamaModel.forward).parameters
