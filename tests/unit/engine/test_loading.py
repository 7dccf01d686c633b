"""Loading a checkpoint the way a GPU node must: weights straight onto the GPU, never first into
host memory; checkpoints with only .bin files named, and read when the entry opts in."""

from __future__ import annotations

import shutil

import pytest
import torch
from safetensors.torch import load_file
from transformers import AutoModelForCausalLM

from softeval.config import model_options
from softeval.engine import models
from softeval.engine.models import ModelOptions, load_model
from softeval.schema import InputError


@pytest.fixture
def bin_only_dir(tiny_model_dir, tmp_path):
    """The tiny model with its weights as pytorch_model.bin and no safetensors."""
    out = tmp_path / "bin-model"
    shutil.copytree(tiny_model_dir, out)
    weights = load_file(str(out / "model.safetensors"))
    (out / "model.safetensors").unlink()
    torch.save(weights, out / "pytorch_model.bin")
    return out


def test_a_bin_only_checkpoint_is_one_error_naming_the_option_and_loads_when_opted_in(bin_only_dir, tiny_model_dir):
    with pytest.raises(InputError, match="set bin_weights: true") as info:
        load_model(bin_only_dir, 1)
    assert "\n" not in str(info.value) and str(bin_only_dir) in str(info.value)
    model, _ = load_model(bin_only_dir, 1, ModelOptions(bin_weights=True))
    reference, _ = load_model(tiny_model_dir, 1)
    for (name, a), (_, b) in zip(model.state_dict().items(), reference.state_dict().items(), strict=True):
        assert torch.equal(a, b), name


def test_bin_weights_is_a_job_option_only_where_an_entry_sets_it():
    entry = {"name": "m", "base": {"id": "o/m"}, "post": {"id": "o/m-it"}}
    assert "bin_weights" not in model_options(entry, "base")  # other entries' job parameters unchanged
    assert model_options({**entry, "bin_weights": True}, "base")["bin_weights"] is True


def test_on_a_gpu_the_weights_load_straight_onto_it(tiny_model_dir, monkeypatch):
    """With CUDA present, from_pretrained is asked for the GPU (device_map) and nothing copies the
    loaded model afterwards: a 7B model never sits in host memory first."""
    asked = {}
    real = AutoModelForCausalLM.from_pretrained

    def recording(ref, **kwargs):
        asked.update(kwargs)
        return real(ref, **{**kwargs, "device_map": None, "dtype": torch.float32})

    def no_copy(self, *args, **kwargs):
        raise AssertionError(f"the loaded model was copied with .to{args}")

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(AutoModelForCausalLM, "from_pretrained", recording)
    monkeypatch.setattr(torch.nn.Module, "to", no_copy)
    load_model(tiny_model_dir, 1)
    assert asked["device_map"] == "cuda" and asked["dtype"] == "auto" and asked["use_safetensors"] is True
    asked.clear()
    load_model(tiny_model_dir, 1, ModelOptions(device_map="auto"))
    assert asked["device_map"] == "auto"
    assert models.device().type == "cuda"


def test_no_model_loads_hub_kernels(tiny_model_dir, tmp_path):
    """transformers 5.25 kernelizes every model it loads when the `kernels` package is installed,
    fetching the kernels from the Hub on a GPU: on the H200 check an offline node could not load a
    Llama at all. Every loader of softeval (jobs, GGUF conversion, the zoo) turns it off."""
    pytest.importorskip("kernels")  # without the package transformers never kernelizes: nothing to test
    model, _ = load_model(tiny_model_dir, 1, ModelOptions(dtype="float32"))
    assert model.use_kernels is False
    assert AutoModelForCausalLM.from_pretrained(tiny_model_dir).use_kernels is True  # what the default would do
    assert models.NO_HUB_KERNELS == {"use_kernels": False}
