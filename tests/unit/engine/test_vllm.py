"""The vLLM backend against the reference (softeval's own generator): identical greedy texts,
with and without a soft prompt, and a second reading of the same continuation. Skipped where
vLLM or a GPU is missing (tests/unit/engine/test_vllm_fake.py runs the backend on a fake engine)."""

from __future__ import annotations

import pytest
import torch

vllm = pytest.importorskip("vllm")
if not torch.cuda.is_available():
    pytest.skip("vLLM needs a GPU", allow_module_level=True)

from softeval.engine.generate import Until, generate_greedy, stop_token_ids  # noqa: E402
from softeval.engine.models import ModelOptions, load_model  # noqa: E402
from softeval.engine.vllm_backend import VLLMModel  # noqa: E402
from tests.conftest import NUMERIC  # noqa: E402


def test_vllm_matches_the_reference_generator(tiny_model_dir, tasks):
    task = tasks["world_numeric"]
    prompts = [task.prompt({**NUMERIC, "question": f"In what year was X{i} founded?"}) for i in range(8)]
    model, tokenizer = load_model(tiny_model_dir, 1, ModelOptions(dtype="float32"))
    engine = VLLMModel(
        str(tiny_model_dir), ModelOptions(dtype="float32"), {"gpu_memory_utilization": 0.3}, prompt_embeds=True
    )
    vectors = model.get_input_embeddings().weight[:10].detach().float().cpu()
    for soft in (None, vectors):
        reference = generate_greedy(model, tokenizer, prompts, soft, task.stop, max_new_tokens=8)
        ours = engine.generate(prompts, soft, task.stop, 8, stop_token_ids(model, tokenizer))
        assert [g.text for g in ours] == [g.text for g in reference]
        both = engine.generate(prompts, soft, task.stop, 8, stop_token_ids(model, tokenizer), Until(("\n\n",), 24))
        assert [g.text for g in both] == [g.text for g in ours]  # softeval's reading does not depend on `also`
        for g in both:  # two readings of one continuation: one is a prefix of the other
            assert g.also_text is not None and (g.also_text.startswith(g.text) or g.text.startswith(g.also_text))
