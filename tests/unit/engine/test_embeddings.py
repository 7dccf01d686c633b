"""Embeddings as the model sees them: through its embedding module, never its raw table.

Gemma scales inside the module by sqrt(hidden size) (transformers 5): a soft prompt started from
raw `.weight` rows, or prompt embeddings built from them for vLLM, would be far too small."""

from __future__ import annotations

import math
import sys
import types

import pytest
import torch
from transformers import GemmaConfig, GemmaForCausalLM

from softeval.engine.embeddings import load_input_embeddings, read_tensor
from softeval.engine.generate import Generation
from softeval.engine.models import ModelOptions
from softeval.engine.softprompt import embedding_std, initial_vectors
from softeval.engine.vllm_backend import VLLMModel
from softeval.schema import InputError
from softeval.settings import TuneSettings

HIDDEN = 64


@pytest.fixture(scope="module")
def gemma():
    """A Gemma-shaped random model (its embedding module multiplies by sqrt(64) = 8)."""
    config = GemmaConfig(
        vocab_size=128,
        hidden_size=HIDDEN,
        intermediate_size=128,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=1,
        head_dim=32,
        max_position_embeddings=64,
    )
    torch.manual_seed(0)
    return GemmaForCausalLM(config).eval()


@pytest.fixture(scope="module", params=["single-file", "sharded"])
def gemma_dir(request, gemma, tmp_path_factory):
    path = tmp_path_factory.mktemp(f"gemma-{request.param}")
    gemma.save_pretrained(path, max_shard_size="20KB" if request.param == "sharded" else "1GB")
    assert (path / "model.safetensors.index.json").is_file() == (request.param == "sharded")
    return path


def test_the_module_scales_and_the_raw_table_does_not(gemma):
    embed = gemma.get_input_embeddings()
    ids = torch.tensor([3, 7])
    assert torch.allclose(embed(ids), embed.weight[ids] * math.sqrt(HIDDEN))


@pytest.mark.parametrize("init", ["vocab", "text"])
def test_soft_prompt_init_is_the_modules_output(gemma, init):
    class Tok:
        def __call__(self, text):
            return {"input_ids": [5, 6, 7]}

    config = TuneSettings(n_tokens=4, init=init, init_text="x", snapshots=(0,))
    vectors = initial_vectors(gemma, Tok(), config, torch.Generator().manual_seed(1))
    embed = gemma.get_input_embeddings()
    rows = torch.randint(0, 128, (4,), generator=torch.Generator().manual_seed(1)) if init == "vocab" else None
    ids = rows if rows is not None else torch.tensor([5, 6, 7, 5])
    assert torch.equal(vectors, embed(ids).detach().float())
    assert vectors.norm(dim=1).mean() > 4 * embed.weight[ids].norm(dim=1).mean()  # 8x, not the raw rows


def test_random_init_takes_the_std_of_the_modules_output(gemma):
    embed = gemma.get_input_embeddings()
    expected = embed(torch.arange(128)).detach().double().std().item()
    assert embedding_std(embed, chunk=50) == pytest.approx(expected, rel=1e-9)
    plain = torch.nn.Embedding(10, 4)
    assert embedding_std(plain) == pytest.approx(plain.weight.detach().std().item())


def test_the_embedding_module_alone_equals_the_full_models(gemma, gemma_dir):
    embed = load_input_embeddings(str(gemma_dir), ModelOptions(dtype="float32"))
    ids = torch.tensor([0, 1, 5, 127])
    with torch.no_grad():
        assert torch.equal(embed(ids), gemma.get_input_embeddings()(ids))
    assert not any(p.requires_grad for p in embed.parameters())


def test_a_tensor_saved_under_another_prefix_is_found_by_its_ending(tmp_path):
    from safetensors.torch import save_file

    save_file({"language_model.model.embed_tokens.weight": torch.ones(2, 2)}, str(tmp_path / "model.safetensors"))
    assert torch.equal(read_tensor(str(tmp_path), None, "model.embed_tokens.weight"), torch.ones(2, 2))
    with pytest.raises(InputError, match=r"no tensor 'lm_head\.weight'"):
        read_tensor(str(tmp_path), None, "lm_head.weight")


class FakeLLM:
    """Records what vLLM would be asked, answers one token each."""

    def __init__(self):
        self.inputs = None

    def generate(self, inputs, params, use_tqdm=False):
        self.inputs = inputs
        done = types.SimpleNamespace(text="1", finish_reason="stop", stop_reason=None, token_ids=[9])
        return [types.SimpleNamespace(outputs=[done]) for _ in inputs]


@pytest.fixture
def engine(gemma_dir, monkeypatch):
    """A VLLMModel whose engine is FakeLLM (vLLM needs a GPU): what it sends is what is tested."""
    monkeypatch.setitem(sys.modules, "vllm", types.SimpleNamespace(SamplingParams=lambda **kw: kw))
    model = object.__new__(VLLMModel)
    model.ref, model.options = str(gemma_dir), ModelOptions(dtype="float32")
    model.tokenizer = lambda text: {"input_ids": [int(t) for t in text.split()]}
    model.config = GemmaConfig(max_position_embeddings=64)
    model.max_model_len, model.prompt_embeds, model._embed, model.llm = 40, True, None, FakeLLM()
    return model


def test_vllm_prompts_too_long_keep_their_end_and_say_so(engine):
    long, short = " ".join(str(i % 100) for i in range(50)), "1 2 3"
    out = engine.generate([long, short], None, ["\n"], 8, {1})
    sent = [row["prompt_token_ids"] for row in engine.llm.inputs]
    assert sent[0] == [int(t) for t in long.split()][-(40 - 8) :] and sent[1] == [1, 2, 3]
    assert out[0] == Generation("1", "eos", 32, 1, truncated=18) and out[1].truncated == 0


def test_vllm_prompt_embeddings_go_through_the_module(engine, gemma):
    vectors = torch.randn(3, HIDDEN)
    engine.generate(["4 5 6"], vectors, ["\n"], 8, {1})
    sent = engine.llm.inputs[0]["prompt_embeds"]
    with torch.no_grad():
        expected = torch.cat([vectors, gemma.get_input_embeddings()(torch.tensor([4, 5, 6]))])
    assert torch.equal(sent, expected)
    engine.prompt_embeds = False
    with pytest.raises(ValueError, match="without prompt embeddings"):
        engine.generate(["4 5 6"], vectors, ["\n"], 8, {1})
