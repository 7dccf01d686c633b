"""Which roles a model entry has (softeval.model_kinds.roles_of): a checkpoint without `post`, and a
random or gguf entry with `post: false`, are base-only; the schema's one-line errors name the entry."""

from __future__ import annotations

import copy

import pytest

from softeval.config import check_config, load_config_file
from softeval.model_kinds import roles_of
from softeval.schema import InputError
from tests.conftest import ROOT

ZOO = {"coverage": 1.0, "format_exposure": 0.1, "size": "small"}


def checked(models: list[dict]) -> dict:
    config = load_config_file(ROOT / "config" / "config.yaml")
    config["models"] = models
    return check_config(copy.deepcopy(config), "test.yaml", ROOT)


@pytest.mark.parametrize(
    ("entry", "roles"),
    [
        ({"name": "x", "base": {"id": "org/x"}, "post": {"id": "org/x-it"}}, ("base", "post")),
        ({"name": "x", "base": {"id": "org/x"}}, ("base",)),
        ({"name": "x", "base": {"id": "org/x"}, "post": False}, ("base",)),
        ({"name": "x", "random": {}}, ("base", "post")),
        ({"name": "x", "random": {}, "post": {"chat_template": True}}, ("base", "post")),
        ({"name": "x", "random": {}, "post": False}, ("base",)),
        ({"name": "x", "gguf": {"path": "m.gguf"}, "post": False}, ("base",)),
        ({"name": "x", "zoo": ZOO}, ("base", "post")),
    ],
)
def test_roles_of_an_entry(entry, roles):
    assert roles_of(entry) == roles


def test_a_base_only_checkpoint_entry_is_valid():
    config = checked([{"name": "solo", "base": {"id": "org/solo", "dtype": "bfloat16"}}])
    assert "post" not in config["models"][0]  # no post role is invented by the defaults
    checked([{"name": "rand", "random": {}, "post": False}])
    checked([{"name": "solo", "base": {"id": "org/solo"}, "post": False}])  # the same spelling as gguf and random


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        # a checkpoint needs its base model; without one the error names the missing key
        ({"name": "x", "post": {"id": "org/x-it"}}, "key 'models[1].base'"),
        ({"name": "x"}, "key 'models[1].base'"),
        # the post-trained twin of a zoo model is always trained: `post` is not a zoo key
        ({"name": "x", "zoo": ZOO, "post": False}, "key 'models[1]'"),
        ({"name": "x", "random": {}, "post": True}, "key 'models[1].post'"),
        ({"name": "x", "base": {"id": "org/x"}, "post": {"id": "org/x-it", "dtyp": "auto"}}, "'models[1].post.dtyp'"),
    ],
)
def test_a_bad_model_entry_is_one_line_naming_it(entry, message):
    with pytest.raises(InputError) as err:
        checked([{"name": "ok", "base": {"id": "org/ok"}}, entry])
    text = str(err.value)
    assert text.startswith("test.yaml: ") and "\n" not in text and message in text
