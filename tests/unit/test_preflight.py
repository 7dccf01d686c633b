"""softeval.preflight: the whole plan built before any job, every failure one line (issue 39, item 5)."""

from __future__ import annotations

import copy

import pytest

from softeval.config import load_config_file
from softeval.plan import Plan
from softeval.preflight import one_line, preflight
from softeval.schema import InputError
from tests.conftest import ROOT

TINY = load_config_file(ROOT / "tests" / "configs" / "tiny.yaml")
COMMIT = "0123456789abcdef0123456789abcdef01234567"


def hub_config(model_id: str = "owner/name", revision: str = "main") -> dict:
    config = copy.deepcopy(TINY)
    config["models"] = [{"name": "mine", "base": {"id": model_id, "revision": revision}, "post": {"id": model_id}}]
    return config


def cached(cache, model_id: str = "owner/name", files=("config.json", "model.safetensors")) -> None:
    """A Hugging Face cache entry of `model_id` at main, holding `files` (what `hf download` leaves)."""
    repo = cache / f"models--{model_id.replace('/', '--')}"
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text(COMMIT)
    snapshot = repo / "snapshots" / COMMIT
    snapshot.mkdir(parents=True)
    for name in files:
        (snapshot / name).write_text("{}" if name.endswith(".json") else "")


@pytest.fixture
def offline(tmp_path, monkeypatch):
    cache = tmp_path / "hub"
    cache.mkdir()
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    return cache


def test_preflight_builds_the_plan_of_a_valid_config(tmp_path):
    plan = preflight(copy.deepcopy(TINY), "tiny.yaml", ROOT, tmp_path)
    assert isinstance(plan, Plan) and plan.models == ["atlas", "pocket"] and plan.workdir == tmp_path


def test_preflight_fills_the_config_in_place_as_check_config_does(tmp_path):
    config = copy.deepcopy(TINY)
    config["evaluation"]["methods"] = ["soft_prompt"]
    preflight(config, "tiny.yaml", ROOT, tmp_path)
    assert config["analysis"]["reference_method"] == "soft_prompt" and config["zoo"]["probe"]["batch_size"] == 32


def test_a_hub_id_is_not_looked_up_when_jobs_may_download_it(tmp_path, monkeypatch):
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("TRANSFORMERS_OFFLINE", raising=False)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty"))
    preflight(hub_config(), "my.yaml", ROOT, tmp_path)


def test_offline_a_hub_id_missing_from_the_cache_is_one_line(offline, tmp_path):
    with pytest.raises(InputError) as info:
        preflight(hub_config(), "my.yaml", ROOT, tmp_path)
    assert str(info.value) == (
        f"my.yaml: key 'models[0].base.id' is 'owner/name' (revision main): HF_HUB_OFFLINE is set and the "
        f"Hugging Face cache ({offline}) does not hold it, so no job could load it; download it first "
        "(hf download owner/name --revision main) or unset HF_HUB_OFFLINE"
    )


def test_the_snakefile_plans_a_config_whose_models_are_not_cached_yet_with_a_warning(offline, tmp_path, capsys):
    """A dry run or a rule graph on a login node that has not downloaded the models still plans
    (CI plans config/paper.yaml offline); the same line is printed as a warning."""
    plan = preflight(hub_config(), "my.yaml", ROOT, tmp_path, uncached="warn")
    assert isinstance(plan, Plan)
    assert capsys.readouterr().err.startswith("warning: my.yaml: key 'models[0].base.id' is 'owner/name'")


def test_offline_a_cached_hub_id_passes_and_an_incomplete_one_is_one_line(offline, tmp_path):
    cached(offline)
    preflight(hub_config(), "my.yaml", ROOT, tmp_path)
    with pytest.raises(InputError, match=r"key 'models\[0\].base.id' is 'owner/name' \(revision 0123456"):
        preflight(hub_config(revision="0123456789abcdef0123456789abcdef0123456f"), "my.yaml", ROOT, tmp_path)
    cached(offline, "owner/partial", files=("config.json",))
    with pytest.raises(InputError) as info:
        preflight(hub_config("owner/partial"), "my.yaml", ROOT, tmp_path)
    message = str(info.value)
    assert message.startswith("my.yaml: key 'models[0].base.id' is 'owner/partial' (revision main): HF_HUB_OFFLINE")
    assert message.endswith(
        f"the cached copy ({offline}/models--owner--partial/snapshots/{COMMIT}) is incomplete: no weights there "
        "(model.safetensors, or shards and model.safetensors.index.json); download it again "
        "(hf download owner/partial --revision main)"
    )


def test_transformers_offline_counts_as_offline(tmp_path, monkeypatch):
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    with pytest.raises(InputError, match="does not hold it"):
        preflight(hub_config(), "my.yaml", ROOT, tmp_path)


def test_anything_the_plan_raises_becomes_one_line_naming_the_source(tmp_path, monkeypatch):
    def broken(self):
        raise KeyError("few_shot")

    monkeypatch.setattr(Plan, "targets", broken)
    with pytest.raises(InputError) as info:
        preflight(copy.deepcopy(TINY), "tiny.yaml", ROOT, tmp_path)
    message = str(info.value)
    assert message.startswith("tiny.yaml: the run cannot be planned (KeyError: 'few_shot')") and "\n" not in message


def test_one_line_keeps_input_errors_and_folds_anything_else():
    with pytest.raises(InputError, match=r"^x\.yaml: bad$"), one_line("x.yaml"):
        raise InputError("x.yaml: bad")
    with pytest.raises(InputError) as info, one_line("x.yaml"):
        raise OSError("disk on fire\nsecond line")
    assert str(info.value).startswith("x.yaml: the run cannot be planned (OSError: disk on fire)")
