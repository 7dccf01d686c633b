from __future__ import annotations

import copy
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
