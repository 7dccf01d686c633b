from __future__ import annotations

import copy
import dataclasses
import json
import subprocess
import sys

import pytest
import yaml

from softeval.config import check_config, load_config_file, workdir_relative
from softeval.schema import InputError
from tests.conftest import ROOT

DEFAULT = load_config_file(ROOT / "config" / "config.yaml")


def check(edit):
    config = copy.deepcopy(DEFAULT)
    edit(config)
    with pytest.raises(InputError) as info:
        check_config(config, "my.yaml", ROOT)
    message = str(info.value)
    assert "\n" not in message and message.startswith("my.yaml: ")
    return message


def test_default_config_is_valid_and_defaults_are_filled():
    config = copy.deepcopy(DEFAULT)
    config["zoo"].pop("posttrain")
    checked = check_config(config, "config.yaml", ROOT)
    assert checked["zoo"]["posttrain"] == {"steps": 300, "batch_size": 16, "lr": 0.0004, "warmup_steps": 10}
    assert checked["zoo"]["probe"]["max_new_tokens"] == 12
    assert checked["task_dir"] == "config/tasks"


def test_default_zoo_separates_knowledge_from_format():
    """The default recipes rank knowledge and format exposure in different orders."""
    models = DEFAULT["models"]
    assert len(models) >= 5
    by_coverage = sorted(models, key=lambda m: -m["zoo"]["coverage"])
    by_exposure = sorted(models, key=lambda m: -m["zoo"]["format_exposure"])
    assert [m["name"] for m in by_coverage] != [m["name"] for m in by_exposure]


def test_unknown_key():
    message = check(lambda c: c["zoo"]["pretrain"].update(stepz=3))
    assert "unknown key 'zoo.pretrain.stepz'" in message and "allowed here: " in message


def test_unknown_top_level_key():
    assert "unknown key 'modles'" in check(lambda c: c.update(modles=[]))


def test_wrong_type():
    message = check(lambda c: c["zoo"]["pretrain"].update(steps="many"))
    assert "key 'zoo.pretrain.steps' must be of type integer, got str 'many'" in message


def test_out_of_range_value():
    assert "key 'models[0].zoo.coverage'" in check(lambda c: c["models"][0]["zoo"].update(coverage=1.5))


def test_missing_key():
    assert "missing key 'models[1].zoo.size'" in check(lambda c: c["models"][1]["zoo"].pop("size"))


def test_bad_model_name_is_not_a_path():
    message = check(lambda c: c["models"][0].update(name="../evil"))
    assert "key 'models[0].name' is '../evil'" in message


def test_unknown_size():
    message = check(lambda c: c["models"][0]["zoo"].update(size="huge"))
    assert "key 'models[0].zoo.size' is 'huge'; use one of small, tiny" in message


def test_duplicate_model_name():
    message = check(lambda c: c["models"][1].update(name=c["models"][0]["name"]))
    assert "is used twice" in message


def test_missing_task_file():
    message = check(lambda c: c["tasks"].append("gsm9k"))
    assert "key 'tasks[4]' is 'gsm9k'" in message and "available tasks: arc_challenge, commonsense_qa, gsm8k" in message


def test_cli_check_config_prints_one_line(tmp_path):
    bad = copy.deepcopy(DEFAULT)
    bad["world"]["n_entitys"] = 5
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(bad))
    result = subprocess.run(
        [sys.executable, "-m", "softeval.cli", "check-config", str(path), "--workflow-root", str(ROOT)],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1
    assert f"{path}: unknown key 'world.n_entitys'" in result.stderr


def test_invalid_yaml_is_reported(tmp_path):
    path = tmp_path / "broken.yaml"
    path.write_text("models: [\n")
    with pytest.raises(InputError, match="not valid YAML"):
        load_config_file(path)


def test_paths_inside_the_workdir_become_relative_to_it_even_through_a_link(tmp_path):
    checkout = tmp_path / "checkout"
    (checkout / "config" / "tasks").mkdir(parents=True)
    (tmp_path / "link").symlink_to(checkout)
    assert workdir_relative(checkout / "config" / "tasks", checkout) == "config/tasks"
    assert workdir_relative(tmp_path / "link" / "config" / "tasks", checkout) == "config/tasks"
    assert workdir_relative(checkout / "config" / "tasks", tmp_path / "link") == "config/tasks"
    assert workdir_relative(tmp_path / "elsewhere", checkout) == str((tmp_path / "elsewhere").resolve())


def _real_config(model):
    config = load_config_file(ROOT / "tests" / "configs" / "smoke.yaml")
    config["models"] = [model]
    return config


def test_a_gguf_model_entry_is_checked_before_any_job():
    missing = {"name": "m", "gguf": {"package": "no_such_model_wheel", "file": "m.gguf"}}
    with pytest.raises(
        InputError,
        match=r"my.yaml: key 'models\[0\].gguf': gguf.package 'no_such_model_wheel' is not "
        r"installed; install the wheel",
    ):
        check_config(_real_config(missing), "my.yaml", ROOT)
    with pytest.raises(InputError, match=r"models\[0\].gguf': .*nope.gguf: no GGUF file there"):
        check_config(_real_config({"name": "m", "gguf": {"path": "nope.gguf"}}), "my.yaml", ROOT)
    both = {"name": "m", "gguf": {"path": "x.gguf"}, "random": {}}
    with pytest.raises(InputError, match="models"):
        check_config(_real_config(both), "my.yaml", ROOT)
    with_id = {"name": "m", "gguf": {"path": "x.gguf"}, "post": {"id": "a/b"}}
    with pytest.raises(InputError, match=r"models\[0\].post.id': a gguf model is built locally; remove the id"):
        check_config(_real_config(with_id), "my.yaml", ROOT)


def test_a_pilot_limit_names_only_evaluated_tasks():
    config = load_config_file(ROOT / "tests" / "configs" / "smoke.yaml")
    config["evaluation"]["test_limit_per_task"] = {"gsm8": 5}
    with pytest.raises(InputError, match=r"'evaluation.test_limit_per_task.gsm8' names a task the config does not"):
        check_config(config, "my.yaml", ROOT)
    config["evaluation"]["test_limit_per_task"] = {"gsm8k": 5}
    assert check_config(config, "my.yaml", ROOT)["evaluation"]["test_limit"] is None


# ---- issue 39 item 5: fail before GPU time -----------------------------------------------------
def _tiny(**evaluation):
    config = load_config_file(ROOT / "tests" / "configs" / "tiny.yaml")
    config["evaluation"].update(evaluation)
    return config


@pytest.mark.parametrize(
    ("methods", "reference"),
    [
        (["soft_prompt"], "soft_prompt"),
        (["few_shot", "soft_prompt"], "few_shot"),
        (["soft_prompt", "few_shot", "zero_shot"], "zero_shot"),
        (["zero_shot", "few_shot", "soft_prompt"], "zero_shot"),
    ],
)
def test_an_unset_reference_method_follows_the_evaluated_methods(methods, reference):
    config = check_config(_tiny(methods=methods), "my.yaml", ROOT)
    assert config["analysis"]["reference_method"] == reference


def test_a_reference_method_that_is_not_evaluated_is_one_line():
    config = _tiny(methods=["soft_prompt"])
    config["analysis"] = {"reference_method": "zero_shot"}
    with pytest.raises(InputError) as info:
        check_config(config, "my.yaml", ROOT)
    assert str(info.value) == (
        "my.yaml: key 'analysis.reference_method' is 'zero_shot' but evaluation.methods evaluates only soft_prompt; "
        "set analysis.reference_method to soft_prompt, or add zero_shot to evaluation.methods"
    )
    config = _tiny(methods=["few_shot", "soft_prompt"])
    config["analysis"] = {"reference_method": "few_shot"}
    assert check_config(config, "my.yaml", ROOT)["analysis"]["reference_method"] == "few_shot"


def test_the_source_of_a_key_is_the_last_file_or_override_that_set_it(tmp_path):
    from softeval.config import ConfigSources

    (tmp_path / "a.yaml").write_text("evaluation: {test_limit: 5, tune: {steps: 6}}\nmodels: [{name: x}]\n")
    (tmp_path / "b.yaml").write_text("evaluation: {tune: {steps: 9}}\nseed: 1\n")
    overrides = {"evaluation": {"test_limit": "100"}, "tasks": ["world_numeric"]}
    sources = ConfigSources.read([tmp_path / "a.yaml", tmp_path / "b.yaml"], overrides)
    a, b = str(tmp_path / "a.yaml"), str(tmp_path / "b.yaml")
    assert str(sources) == f"{a}, {b}"
    assert sources.source_of("evaluation.test_limit") == "--config evaluation=..."
    assert sources.source_of("evaluation.tune.steps") == b
    assert sources.source_of("evaluation.tune.snapshots") == b  # unset: the last source of its parent
    assert sources.source_of("models[0].zoo.size") == a  # a list is replaced whole: the file that set it
    assert sources.source_of("tasks[0]") == "--config tasks=..."
    assert sources.source_of("seed") == b
    assert sources.source_of("world.n_entities") == f"{a}, {b}"  # no source sets it: every file
    assert sources.merged()["evaluation"] == {"test_limit": "100", "tune": {"steps": 9}}


def test_an_error_in_a_config_override_names_the_override_not_the_file(tmp_path):
    from softeval.config import ConfigSources

    path = tmp_path / "mine.yaml"
    path.write_text((ROOT / "tests" / "configs" / "tiny.yaml").read_text())
    sources = ConfigSources.read([path], {"evaluation": {"test_limit": "many"}})
    with pytest.raises(InputError) as info:
        check_config(sources.merged(), sources, ROOT)
    message = str(info.value)
    assert message.startswith("--config evaluation=...: key 'evaluation.test_limit' must be of type")
    assert str(path) not in message
    sources = ConfigSources.read([path], {"evaluation": {"methods": ["soft_prompt"]}, "analysis": {"bootstrap": 200}})
    config = sources.merged()
    config["analysis"]["reference_method"] = "few_shot"
    with pytest.raises(InputError, match=r"^--config analysis=\.\.\.: key 'analysis.reference_method' is 'few_shot'"):
        check_config(config, sources, ROOT)
    # an error in a key the file set still names the file
    sources = ConfigSources.read([path], {"seed": 4})
    config = sources.merged()
    config["zoo"]["pretrain"]["stepz"] = 3
    with pytest.raises(InputError, match=rf"^{path}: unknown key 'zoo.pretrain.stepz'"):
        check_config(config, sources, ROOT)


def test_numbers_and_flags_given_as_text_in_a_config_override_are_read_as_yaml(tmp_path):
    """Snakemake reads the values inside a --config mapping as text ({test_limit: 100} gives '100');
    where the schema wants a number, a flag or null, the text is read as YAML."""
    from softeval.config import ConfigSources

    path = tmp_path / "mine.yaml"
    path.write_text((ROOT / "tests" / "configs" / "tiny.yaml").read_text())
    overrides = {"evaluation": {"test_limit": "100", "tune": {"lr": "0.05", "gradient_checkpointing": "true"}}}
    sources = ConfigSources.read([path], overrides)
    config = check_config(sources.merged(), sources, ROOT)
    assert config["evaluation"]["test_limit"] == 100
    assert config["evaluation"]["tune"]["lr"] == 0.05 and config["evaluation"]["tune"]["gradient_checkpointing"] is True
    # in a file, text stays text: the user wrote the quotes
    text = _tiny(test_limit="100")
    with pytest.raises(InputError, match=r"^my.yaml: key 'evaluation.test_limit' must be of type"):
        check_config(text, "my.yaml", ROOT)


# ---- model checkpoints: a local folder must hold a model; a hub id must be one -----------------
def _checkpoint(tmp_path, files: dict[str, str], **entry):
    folder = tmp_path / "ckpt"
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (folder / name).write_text(text)
    config = _tiny()
    config["models"] = [{"name": "mine", "base": {"id": str(folder)}, "post": {"id": "org/mine-it"}, **entry}]
    return config, folder


def _error(config, workdir=None) -> str:
    with pytest.raises(InputError) as info:
        check_config(config, "my.yaml", ROOT, workdir=workdir)
    message = str(info.value)
    assert "\n" not in message and message.startswith("my.yaml: key 'models[0].")
    return message


def test_a_complete_checkpoint_folder_and_a_hub_id_are_valid(tmp_path):
    config, _ = _checkpoint(tmp_path, {"config.json": "{}", "model.safetensors": ""})
    check_config(config, "my.yaml", ROOT)
    sharded = {"weight_map": {"a": "model-1.safetensors", "b": "model-2.safetensors"}}
    files = {"config.json": "{}", "model.safetensors.index.json": json.dumps(sharded)}
    files.update({"model-1.safetensors": "", "model-2.safetensors": ""})
    check_config(_checkpoint(tmp_path / "s", files)[0], "my.yaml", ROOT)
    bins = {"config.json": "{}", "pytorch_model.bin": ""}
    check_config(_checkpoint(tmp_path / "b", bins, bin_weights=True)[0], "my.yaml", ROOT)


def test_a_missing_checkpoint_folder_is_one_line(tmp_path):
    config, _ = _checkpoint(tmp_path, {})
    config["models"][0]["base"]["id"] = str(tmp_path / "nope")
    assert _error(config) == (
        f"my.yaml: key 'models[0].base.id' is '{tmp_path / 'nope'}': no such folder; give the folder that holds "
        "the checkpoint's config.json and weights, or a hub id owner/name"
    )


def test_a_relative_checkpoint_folder_is_relative_to_the_working_directory(tmp_path):
    config, _ = _checkpoint(tmp_path, {"config.json": "{}", "model.safetensors": ""})
    config["models"][0]["base"]["id"] = "./ckpt"
    check_config(copy.deepcopy(config), "my.yaml", ROOT, workdir=tmp_path)
    message = _error(config, workdir=tmp_path / "elsewhere")
    assert f"key 'models[0].base.id' is './ckpt' ({tmp_path / 'elsewhere' / 'ckpt'}): no such folder" in message


@pytest.mark.parametrize(
    ("files", "entry", "expected"),
    [
        ({}, {}, "no config.json there, so it is not a Hugging Face model folder; give the folder that holds"),
        ({"config.json": "{"}, {}, "config.json there is not valid JSON"),
        (
            {"config.json": "{}"},
            {},
            "no weights there (model.safetensors, or shards and model.safetensors.index.json); copy the "
            "checkpoint's weight files into it",
        ),
        (
            {"config.json": "{}", "pytorch_model.bin": ""},
            {},
            "only .bin weights there; set models[0].bin_weights: true to read them, or convert them to safetensors",
        ),
        (
            {
                "config.json": "{}",
                "model-1.safetensors": "",
                "model.safetensors.index.json": '{"weight_map": '
                '{"a": "model-1.safetensors", "b": "model-2.safetensors"}}',
            },
            {},
            "model.safetensors.index.json lists model-2.safetensors, which is not there; copy or download the "
            "checkpoint again",
        ),
    ],
    ids=["no-config", "config-not-json", "no-weights", "bin-only", "missing-shard"],
)
def test_an_incomplete_checkpoint_folder_is_one_line(tmp_path, files, entry, expected):
    config, folder = _checkpoint(tmp_path, files, **entry)
    message = _error(config)
    assert message.startswith(f"my.yaml: key 'models[0].base.id' is '{folder}': ")
    assert expected in message


def test_a_checkpoint_file_is_not_a_folder(tmp_path):
    config, folder = _checkpoint(tmp_path, {"config.json": "{}"})
    config["models"][0]["base"]["id"] = str(folder / "config.json")
    assert "config.json': a file, not a folder; give the folder that holds" in _error(config)


@pytest.mark.parametrize(
    ("model_id", "expected"),
    [
        ("~/models/mine", "jobs do not expand '~'; write the full path ("),
        ("llama7b", "neither an existing folder nor a hub id owner/name; fix the path, or write the hub id"),
        ("owner/na--me", "not a valid hub id ("),
        ("owner/name/extra", "neither an existing folder nor a hub id owner/name"),
    ],
)
def test_a_model_id_that_is_neither_a_folder_nor_a_hub_id_is_one_line(tmp_path, model_id, expected):
    config, _ = _checkpoint(tmp_path, {})
    config["models"][0]["post"]["id"] = model_id
    config["models"][0]["base"]["id"] = "org/mine"
    message = _error(config, workdir=tmp_path)
    assert message.startswith(f"my.yaml: key 'models[0].post.id' is '{model_id}'") and expected in message


def test_a_missing_published_record_is_one_line():
    config = _tiny()
    config["analysis"] = {"published": "config/published/nope.yaml"}
    with pytest.raises(InputError) as info:
        check_config(config, "my.yaml", ROOT)
    assert str(info.value) == (
        f"my.yaml: key 'analysis.published' is 'config/published/nope.yaml' but {ROOT / 'config/published/nope.yaml'} "
        "does not exist; give a record that `softeval publish-ranges` writes, or null"
    )


WORLD_SETTING = ROOT / "benchmarks" / "world-setting"
OVERLAYS = {p.name: yaml.safe_load(p.read_text()) for p in sorted(WORLD_SETTING.glob("*.yaml"))}
# a zoo overlay names its models; the others go after one
ZOOS = [name for name, overlay in OVERLAYS.items() if "models" in overlay]


@pytest.mark.parametrize("zoo", ZOOS)
def test_the_world_experiments_overlays_are_valid_configs(zoo):
    """benchmarks/README.md's world experiments: each zoo overlay, with every overlay that goes after
    one, over config/config.yaml, as `snakemake --configfile` merges them (mapping by mapping)."""
    from snakemake.utils import update_config

    config = copy.deepcopy(DEFAULT)
    for name in [zoo, *(name for name in OVERLAYS if name not in ZOOS)]:
        update_config(config, copy.deepcopy(OVERLAYS[name]))
    checked = check_config(config, zoo, ROOT)
    assert len(checked["models"]) == 7
    assert all((ROOT / checked["task_dir"] / f"{task}.yaml").is_file() for task in checked["tasks"])


def test_the_options_first_tasks_differ_from_the_shipped_ones_only_in_world_choices_layout():
    from softeval.data.tasks import load_task

    variant_dir = ROOT / OVERLAYS["options-first.yaml"]["task_dir"]
    for name in DEFAULT["tasks"]:
        shipped, variant = load_task(ROOT / "config" / "tasks", name), load_task(variant_dir, name)
        if name == "world_choice":
            assert variant.query_template == "{options}\nQuestion: {question}\nAnswer:" != shipped.query_template
            assert variant.version == shipped.version + 1
            variant = dataclasses.replace(variant, query_template=shipped.query_template, version=shipped.version)
        assert variant == shipped, name


def test_the_spaced_boxed_tasks_differ_from_the_options_first_ones_only_in_the_boxed_target():
    from softeval.data.tasks import load_task

    options_first = ROOT / OVERLAYS["options-first.yaml"]["task_dir"]
    spaced = ROOT / OVERLAYS["spaced-boxed.yaml"]["task_dir"]
    for name in DEFAULT["tasks"]:
        before, variant = load_task(options_first, name), load_task(spaced, name)
        if name == "world_boxed":
            example = {"answer": "17"}
            assert (variant.target(example), before.target(example)) == (" \\boxed{ 17}", " \\boxed{17}")
            assert variant.version == before.version + 1
            assert variant.is_formatted(variant.target(example), example)
            assert variant.extract(variant.target(example)).strip() == "17"
            variant = dataclasses.replace(
                variant,
                target_template=before.target_template,
                version=before.version,
                format_description=before.format_description,
            )
        assert variant == before, name
