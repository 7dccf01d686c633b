"""Generation backends: one protocol, chosen by name; jobs never branch on the backend."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import pytest

from softeval.engine.backends import BACKENDS, HFBackend, VLLMBackend, backend_for
from softeval.engine.generate import generate_greedy
from softeval.engine.models import ModelOptions
from softeval.schema import InputError
from softeval.settings import GenerateSettings

JOBS = Path(__file__).resolve().parents[3] / "workflow" / "softeval" / "jobs"


def settings(**values):
    return GenerateSettings.parse({"few_shot_k": 0, "seed": 0, **values}, "generate")


def test_the_registry_builds_the_backend_a_config_names():
    assert BACKENDS.names() == list(GenerateSettings.choices("backend")) == ["hf", "vllm"]
    assert isinstance(backend_for(settings()), HFBackend) and backend_for(settings()).uses_hf_model
    vllm = backend_for(settings(backend="vllm", vllm={"max_model_len": 512}))
    assert isinstance(vllm, VLLMBackend) and not vllm.uses_hf_model and vllm.engine == {"max_model_len": 512}


def test_an_unknown_backend_is_one_error_naming_the_config_key():
    forged = dataclasses.replace(settings(), backend="tgi")  # past the schema's enum
    with pytest.raises(InputError, match=r"evaluation\.generate\.backend"):
        backend_for(forged)


def test_no_job_branches_on_the_backend():
    """No job compares a backend name or reads settings.backend: the registry decides."""
    for path in JOBS.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Compare):
                names = [c.value for c in (node.left, *node.comparators) if isinstance(c, ast.Constant)]
                assert not {"hf", "vllm"} & set(names), f"{path.name}:{node.lineno} compares a backend name"
            if isinstance(node, ast.Attribute):
                assert node.attr != "backend", f"{path.name}:{node.lineno} reads the backend's name"


def test_the_hf_backend_is_softevals_generator(tiny_model_dir):
    """Same texts as calling the generator directly, soft prompt included."""
    import torch

    backend = backend_for(settings(batch_size=2))
    model, tokenizer, chat = backend.load(str(tiny_model_dir), ModelOptions(), 1)
    assert chat is None
    prompts = ["Question: What is the capital of Norland?\nAnswer:", "Q: 2+2?\nA:", "Hello"]
    vectors = torch.randn(3, model.get_input_embeddings().weight.shape[1]) * 0.01
    for soft in (None, vectors):
        stream = backend.stream(
            model, tokenizer, prompts, vectors=soft, stops=["\n"], max_new_tokens=5, shared_prefix=None
        )
        ended = dict(stream)
        mine = [ended[i] for i in range(len(prompts))]
        direct = generate_greedy(model, tokenizer, prompts, vectors=soft, stops=["\n"], max_new_tokens=5, batch_size=2)
        assert mine == direct
