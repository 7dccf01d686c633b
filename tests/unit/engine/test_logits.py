"""The logits softeval scores with are the model's own (issue 41, items 4 and 5).

Option log-likelihoods, the tuning loss and the hf judge all go through
softprompt.answer_logprobs / loglik's prompt-cache path. Both must apply whatever the model's
forward applies after its output projection (Gemma 2's final-logit softcapping, Cohere's
logit_scale, Granite's logits_scaling), and a bf16 model's scores must come from an fp32
projection, not from bf16 logits (spacing 0.125 for |logit| in [16, 32)).
"""

from __future__ import annotations

import pytest
import torch
from transformers import (
    CohereConfig,
    CohereForCausalLM,
    Gemma2Config,
    Gemma2ForCausalLM,
    GraniteConfig,
    GraniteForCausalLM,
    LlamaForCausalLM,
)

from softeval.data.splits import task_examples
from softeval.engine.batching import IGNORE, encode_batch
from softeval.engine.loglik import score_options
from softeval.engine.softprompt import answer_logprobs, answer_loss, insert_soft_prompt, projection, tune
from softeval.schema import InputError
from softeval.settings import TuneSettings
from softeval.zoo.corpus import tokenizer_corpus
from softeval.zoo.tokenizer import train_tokenizer
from softeval.zoo.training import build_model

TINY = {"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2, "num_attention_heads": 2}
KINDS = ["gemma2", "cohere", "granite"]


@pytest.fixture(scope="module")
def tokenizer(world, tasks):
    return train_tokenizer(tokenizer_corpus(world, list(tasks.values())), 400)


@pytest.fixture(scope="module")
def pairs(world, tasks):
    task = tasks["world_numeric"]
    return [(task.prompt(ex), task.target(ex)) for ex in task_examples(task, world, "train")]


def tiny(kind: str, tokenizer) -> torch.nn.Module:
    """A tiny random model whose forward changes the logits after the output projection, with
    output weights large enough that it matters (raw logits of tens, as in real models)."""
    common = {
        **TINY,
        "vocab_size": len(tokenizer),
        "num_key_value_heads": 1,
        "max_position_embeddings": 512,
        "tie_word_embeddings": False,
        "pad_token_id": tokenizer.pad_token_id,
        "bos_token_id": tokenizer.bos_token_id,
        "eos_token_id": tokenizer.eos_token_id,
    }
    torch.manual_seed(0)
    if kind == "gemma2":  # logits = 30 * tanh(logits / 30)
        model = Gemma2ForCausalLM(Gemma2Config(**common, head_dim=16, final_logit_softcapping=30.0))
        scale = 100.0
    elif kind == "cohere":  # logits * logit_scale
        model = CohereForCausalLM(CohereConfig(**common, logit_scale=0.25))
        scale = 20.0
    else:  # logits / logits_scaling
        model = GraniteForCausalLM(GraniteConfig(**common, logits_scaling=4.0))
        scale = 20.0
    with torch.no_grad():
        model.get_output_embeddings().weight.mul_(scale)
    return model.eval()


def forward_logprobs(model, vectors, batch) -> torch.Tensor:
    """The reference: the model's own forward over every position, log_softmax at the answer tokens."""
    embeds = model.get_input_embeddings()(batch.input_ids)
    mask, labels = batch.attention_mask, batch.labels
    if vectors is None:
        positions = (mask.cumsum(dim=1) - 1).clamp(min=0)
    else:
        embeds, mask, positions, labels = insert_soft_prompt(embeds, vectors, mask, labels)
    logits = model(inputs_embeds=embeds, attention_mask=mask, position_ids=positions).logits
    targets = labels[:, 1:]
    keep = targets != IGNORE
    return logits[:, :-1][keep].float().log_softmax(-1).gather(1, targets[keep].unsqueeze(1)).squeeze(1)


def raw_projection_logprobs(model, vectors, batch) -> torch.Tensor:
    """What softeval computed before issue 41: the output projection alone, nothing after it."""
    embeds = model.get_input_embeddings()(batch.input_ids)
    mask, labels = batch.attention_mask, batch.labels
    if vectors is None:
        positions = (mask.cumsum(dim=1) - 1).clamp(min=0)
    else:
        embeds, mask, positions, labels = insert_soft_prompt(embeds, vectors, mask, labels)
    hidden = model.base_model(inputs_embeds=embeds, attention_mask=mask, position_ids=positions)[0]
    targets = labels[:, 1:]
    keep = targets != IGNORE
    logits = model.get_output_embeddings()(hidden[:, :-1][keep]).float()
    return logits.log_softmax(-1).gather(1, targets[keep].unsqueeze(1)).squeeze(1)


@pytest.mark.parametrize("with_prompt", [False, True])
@pytest.mark.parametrize("kind", KINDS)
@torch.no_grad()
def test_answer_logprobs_and_loss_are_the_models_own(tokenizer, pairs, kind, with_prompt):
    model = tiny(kind, tokenizer)
    vectors = torch.randn(5, 32, generator=torch.Generator().manual_seed(1)) if with_prompt else None
    chosen = pairs[:3]
    batch = encode_batch(tokenizer, [p for p, _ in chosen], [t + " and more" * i for i, (_, t) in enumerate(chosen)])
    assert (batch.attention_mask == 0).any()  # rows padded differently
    expected = forward_logprobs(model, vectors, batch)
    assert (raw_projection_logprobs(model, vectors, batch) - expected).abs().max() > 0.05  # the forward's step matters
    logprobs, rows = answer_logprobs(model, vectors, batch)
    assert torch.allclose(logprobs, expected, atol=1e-5, rtol=0)
    assert rows.tolist() == (batch.labels[:, 1:] != IGNORE).nonzero()[:, 0].tolist()
    # the tuning loss: the model's own cross-entropy over the answer tokens
    embeds = model.get_input_embeddings()(batch.input_ids)
    labels = batch.labels
    if vectors is None:
        mask, positions = batch.attention_mask, (batch.attention_mask.cumsum(dim=1) - 1).clamp(min=0)
    else:
        embeds, mask, positions, labels = insert_soft_prompt(embeds, vectors, batch.attention_mask, labels)
    reference = model(inputs_embeds=embeds, attention_mask=mask, position_ids=positions, labels=labels).loss
    assert answer_loss(model, vectors, batch).item() == pytest.approx(reference.item(), abs=1e-5)


@pytest.mark.parametrize("kind", KINDS)
def test_option_scores_are_the_models_own(tokenizer, world, tasks, kind):
    """Both scoring paths (the prompt's KV cache with and without a shared instruction, and each
    option run whole) give the log-likelihoods of the model's own forward."""
    model = tiny(kind, tokenizer)
    task = tasks["world_choice"]
    examples = task_examples(task, world, "test")[:3]
    instruction = "Answer with the letter of the right option.\n\n"
    prompts = [instruction + task.prompt(ex) for ex in examples]
    vectors = torch.randn(4, 32, generator=torch.Generator().manual_seed(2))
    runs = [
        score_options(model, tokenizer, task, prompts, examples, vectors, batch_size=8, share_prompt=False),
        score_options(model, tokenizer, task, prompts, examples, vectors, batch_size=8),
        score_options(model, tokenizer, task, prompts, examples, vectors, batch_size=8, shared_prefix=instruction),
    ]
    for i, (prompt, example) in enumerate(zip(prompts, examples, strict=True)):
        targets = [task.option_target(example, k) for k in range(len(example["options"]))]
        batch = encode_batch(tokenizer, [prompt] * len(targets), targets, eos=False)
        with torch.no_grad():
            per_token = forward_logprobs(model, vectors, batch)
        rows = (batch.labels[:, 1:] != IGNORE).nonzero()[:, 0]
        expected = torch.zeros(len(targets), dtype=torch.float64).index_add_(0, rows, per_token.double()).tolist()
        for run in runs:
            assert run[i].logliks == pytest.approx(expected, abs=1e-4)


class HiddenProjection(LlamaForCausalLM):
    """A forward that projects with the weight directly, never through its output module."""

    def forward(self, input_ids=None, inputs_embeds=None, attention_mask=None, position_ids=None, **kwargs):
        out = self.model(
            input_ids=input_ids, inputs_embeds=inputs_embeds, attention_mask=attention_mask, position_ids=position_ids
        )
        logits = torch.nn.functional.linear(out.last_hidden_state, self.lm_head.weight) * 3.0
        return type("Out", (), {"logits": logits, "cache": None})()


def test_a_forward_that_bypasses_its_output_module_is_refused(tokenizer, pairs):
    torch.manual_seed(0)
    model = build_model({"arch": "llama", "layers": 1, "width": 32, "heads": 2}, tokenizer).eval()
    model.__class__ = HiddenProjection
    batch = encode_batch(tokenizer, [pairs[0][0]], [pairs[0][1]])
    with pytest.raises(InputError, match="output projection"):
        answer_logprobs(model, None, batch)


# --- item 5: a bf16 model is scored from an fp32 projection ------------------------------------


def bf16_model(tokenizer) -> torch.nn.Module:
    """A tiny Llama in bf16 whose logits lie where bf16 is coarse (median |logit| in [8, 32))."""
    torch.manual_seed(0)
    model = build_model({"arch": "llama", "layers": 2, "width": 64, "heads": 2}, tokenizer)
    model.config.tie_word_embeddings = False
    model.lm_head.weight = torch.nn.Parameter(model.model.embed_tokens.weight.detach().clone() * 120.0)
    return model.to(torch.bfloat16).eval()


def kept_hidden(model, vectors, batch) -> tuple[torch.Tensor, torch.Tensor]:
    """The hidden states the output projection gets at the answer positions, and the targets."""
    embeds = model.get_input_embeddings()(batch.input_ids)
    embeds, mask, positions, labels = insert_soft_prompt(embeds, vectors, batch.attention_mask, batch.labels)
    hidden = model.base_model(inputs_embeds=embeds, attention_mask=mask, position_ids=positions)[0]
    targets = labels[:, 1:]
    keep = targets != IGNORE
    return hidden[:, :-1][keep], targets[keep]


@torch.no_grad()
def test_a_bf16_model_is_scored_from_an_fp32_projection(tokenizer, pairs):
    model = bf16_model(tokenizer)
    vectors = torch.randn(5, 64, generator=torch.Generator().manual_seed(4))
    chosen = pairs[:4]
    batch = encode_batch(tokenizer, [p for p, _ in chosen], [t + " and so on" * 3 for _, t in chosen])
    hidden, targets = kept_hidden(model, vectors, batch)
    weight = model.lm_head.weight
    # reference: the same hidden states projected in float64
    reference = (hidden.double() @ weight.double().T).log_softmax(-1).gather(1, targets.unsqueeze(1)).squeeze(1)
    bf16 = model.lm_head(hidden).float().log_softmax(-1).gather(1, targets.unsqueeze(1)).squeeze(1)
    raw = (hidden.double() @ weight.double().T).abs()
    assert 8 < raw.median() < 32  # logits where bf16's spacing is 0.0625-0.125, as in real models
    ours, rows = answer_logprobs(model, vectors, batch)
    per_row = [(rows == r).sum().item() for r in range(len(chosen))]
    assert min(per_row) >= 12  # options of 12+ tokens, as the example

    def sums(values):
        return torch.zeros(len(chosen), dtype=torch.float64).index_add_(0, rows, values.double())

    ours_error = (ours.double() - reference).abs().max().item()
    bf16_error = (bf16.double() - reference).abs().max().item()
    ours_sum_error = (sums(ours) - sums(reference)).abs().max().item()
    bf16_sum_error = (sums(bf16) - sums(reference)).abs().max().item()
    print(
        f"\nper-token max |error| vs float64: fp32 projection {ours_error:.2e}, bf16 logits {bf16_error:.2e}; "
        f"per-answer sum ({min(per_row)}-{max(per_row)} tokens): fp32 {ours_sum_error:.2e}, bf16 {bf16_sum_error:.2e}"
    )
    assert ours_error < 1e-4 and ours_sum_error < 1e-3
    assert bf16_error > 100 * ours_error and bf16_sum_error > 0.05


def test_the_fp32_projection_gives_the_fp32_gradient(tokenizer, pairs, monkeypatch):
    """The projection's gradient (computed in vocabulary slices, the weight cast again in the
    backward pass instead of an fp32 copy being saved) is the float64 one, and the tuning loss
    still trains the soft prompt of a bf16 model."""
    monkeypatch.setattr(projection, "PROJECTION_CHUNK", 64 * 100)  # 100 vocabulary rows a slice
    model = bf16_model(tokenizer)
    head = model.get_output_embeddings()
    rows = torch.randn(7, 64, generator=torch.Generator().manual_seed(5)).bfloat16().float().requires_grad_(True)
    targets = torch.randint(0, head.weight.shape[0], (7,), generator=torch.Generator().manual_seed(6))
    logits = projection.project_rows(head, rows)
    assert logits.dtype == torch.float32
    (-logits.log_softmax(-1).gather(1, targets.unsqueeze(1)).mean()).backward()
    exact = rows.detach().double().requires_grad_(True)
    reference = exact @ head.weight.double().T
    (-reference.log_softmax(-1).gather(1, targets.unsqueeze(1)).mean()).backward()
    assert torch.allclose(logits.double(), reference.detach(), rtol=0, atol=1e-4)
    assert rows.grad is not None and exact.grad is not None
    assert torch.allclose(rows.grad.double(), exact.grad, rtol=1e-4, atol=1e-7)
    result = tune(model, tokenizer, pairs, TuneSettings(steps=3, batch_size=2, snapshots=(0,)))
    assert all(torch.isfinite(torch.tensor(result.losses))) and not torch.equal(result.vectors, result.snapshots[0])


def test_fp32_models_score_exactly_as_before(tokenizer, pairs):
    """On an fp32 model nothing changes, bit for bit: the output module itself on the same rows."""
    torch.manual_seed(0)
    model = build_model({"arch": "llama", "layers": 2, "width": 32, "heads": 2}, tokenizer).eval()
    chosen = pairs[:3]
    batch = encode_batch(tokenizer, [p for p, _ in chosen], [t for _, t in chosen])
    vectors = torch.randn(5, 32, generator=torch.Generator().manual_seed(6))
    with torch.no_grad():
        assert torch.equal(answer_logprobs(model, vectors, batch)[0], raw_projection_logprobs(model, vectors, batch))
    result = tune(model, tokenizer, pairs, TuneSettings(steps=2, batch_size=2, snapshots=()))
    assert all(torch.isfinite(torch.tensor(result.losses)))
