from __future__ import annotations

import copy
import itertools
import json

import pytest
import torch

from softeval.data.splits import task_examples
from softeval.engine.batching import IGNORE, encode_batch
from softeval.engine.softprompt import (
    TuneSettings,
    answer_loss,
    export_peft,
    import_peft,
    insert_soft_prompt,
    load_prompt,
    lr_factor,
    save_prompt,
    tune,
)
from softeval.schema import InputError
from softeval.zoo.corpus import tokenizer_corpus
from softeval.zoo.tokenizer import train_tokenizer
from softeval.zoo.training import build_model

SMALL = TuneSettings(steps=6, batch_size=4, snapshots=(0, 3, 6))


@pytest.fixture(scope="module")
def tokenizer(world, tasks):
    return train_tokenizer(tokenizer_corpus(world, list(tasks.values())), 400)


@pytest.fixture(scope="module", params=["llama", "gpt2"])
def model(request, tokenizer):
    torch.manual_seed(0)
    return build_model({"arch": request.param, "layers": 2, "width": 32, "heads": 2}, tokenizer).eval()


@pytest.fixture(scope="module")
def pairs(world, tasks):
    task = tasks["world_numeric"]
    return [(task.prompt(ex), task.target(ex)) for ex in task_examples(task, world, "train")]


def test_soft_prompt_sits_after_left_padding_right_before_the_query():
    embeddings = torch.arange(2 * 4, dtype=torch.float).reshape(2, 4, 1) + 100
    mask = torch.tensor([[0, 0, 1, 1], [1, 1, 1, 1]])
    vectors = torch.tensor([[-1.0], [-2.0]])
    labels = torch.tensor([[IGNORE, IGNORE, IGNORE, 7], [IGNORE, IGNORE, 5, 6]])
    embeds, full_mask, positions, shifted = insert_soft_prompt(embeddings, vectors, mask, labels)
    assert embeds[..., 0].tolist() == [[100, 101, -1, -2, 102, 103], [-1, -2, 104, 105, 106, 107]]
    assert full_mask.tolist() == [[0, 0, 1, 1, 1, 1], [1, 1, 1, 1, 1, 1]]
    assert positions.tolist() == [[0, 0, 0, 1, 2, 3], [0, 1, 2, 3, 4, 5]]
    assert shifted.tolist() == [[IGNORE] * 5 + [7], [IGNORE] * 4 + [5, 6]]


def test_batched_loss_equals_one_at_a_time(model, tokenizer, pairs):
    vectors = torch.randn(10, model.config.hidden_size, generator=torch.Generator().manual_seed(0))
    batch = pairs[:4]
    together = encode_batch(tokenizer, [p for p, _ in batch], [t + " and more" * i for i, (_, t) in enumerate(batch)])
    assert (together.attention_mask == 0).any()  # rows really are padded differently
    losses = []
    for i, (prompt, target) in enumerate(batch):
        alone = encode_batch(tokenizer, [prompt], [target + " and more" * i])
        n = int((alone.labels != IGNORE).sum())
        losses.append((answer_loss(model, vectors, alone) * n, n))
    expected = sum(loss for loss, _ in losses) / sum(n for _, n in losses)
    assert answer_loss(model, vectors, together).item() == pytest.approx(expected.item(), abs=1e-5)


def test_loss_covers_only_answer_tokens(model, tokenizer, pairs):
    """Our loss equals a full-vocabulary forward with every non-answer label ignored."""
    vectors = torch.randn(10, model.config.hidden_size, generator=torch.Generator().manual_seed(1))
    batch = encode_batch(tokenizer, [p for p, _ in pairs[:3]], [t for _, t in pairs[:3]])
    embeds = model.get_input_embeddings()(batch.input_ids)
    inputs, mask, positions, labels = insert_soft_prompt(embeds, vectors, batch.attention_mask, batch.labels)
    reference = model(inputs_embeds=inputs, attention_mask=mask, position_ids=positions, labels=labels).loss
    assert answer_loss(model, vectors, batch).item() == pytest.approx(reference.item(), abs=1e-5)
    answer = batch.labels[0][batch.labels[0] != IGNORE].tolist()
    assert tokenizer.decode(answer[:-1]) == pairs[0][1] and answer[-1] == tokenizer.eos_token_id


def test_only_the_vectors_change_and_the_loss_falls(model, tokenizer, pairs):
    before = {name: p.detach().clone() for name, p in model.state_dict().items()}
    result = tune(model, tokenizer, pairs, TuneSettings(steps=30, batch_size=8, lr=0.1, snapshots=(0, 30)))
    assert all(torch.equal(before[name], p) for name, p in model.state_dict().items())
    assert not torch.equal(result.snapshots[0], result.snapshots[30])
    assert torch.equal(result.snapshots[30], result.vectors)
    assert sum(result.losses[-5:]) < sum(result.losses[:5])


def test_same_seed_gives_identical_prompt_file(model, tokenizer, pairs, tmp_path):
    for name, seed in (("a", 0), ("b", 0), ("c", 1)):
        result = tune(model, tokenizer, pairs, TuneSettings(**{**SMALL.__dict__, "seed": seed}))
        save_prompt(tmp_path / f"{name}.safetensors", result.vectors, {"seed": seed})
    files = [(tmp_path / f"{n}.safetensors").read_bytes() for n in "abc"]
    assert files[0] == files[1] != files[2]
    vectors, meta = load_prompt(tmp_path / "a.safetensors")
    assert vectors.shape == (10, model.config.hidden_size) and meta == {"seed": 0}


def test_snapshots_are_taken_at_the_configured_steps(model, tokenizer, pairs):
    seen = []
    result = tune(model, tokenizer, pairs, SMALL, on_snapshot=lambda step, v: seen.append(step))
    assert seen == [0, 3, 6] and sorted(result.snapshots) == [0, 3, 6]
    assert len(result.losses) == 6


@pytest.mark.parametrize("init", ["vocab", "text", "random"])
def test_inits(model, tokenizer, pairs, init):
    config = TuneSettings(steps=1, batch_size=2, init=init, init_text="Answer the question.", snapshots=(0,))
    first = tune(model, tokenizer, pairs, config).snapshots[0]
    assert first.shape == (10, model.config.hidden_size)
    if init == "text":
        ids = tokenizer("Answer the question.")["input_ids"]
        assert torch.equal(first[0], model.get_input_embeddings().weight[ids[0]].float())


def test_cosine_schedule_warms_up_then_decays_towards_zero_at_the_last_step():
    config = TuneSettings(steps=80, warmup_steps=10, schedule="cosine")
    factors = [lr_factor(step, config) for step in range(80)]
    assert factors[:10] == pytest.approx([(step + 1) / 10 for step in range(10)])
    assert factors[10] == 1.0 and factors[45] == pytest.approx(0.5)
    assert all(a > b for a, b in itertools.pairwise(factors[10:]))
    assert 0 < factors[-1] < 1e-3
    assert {lr_factor(step, TuneSettings(steps=80)) for step in range(80)} == {1.0}


def test_a_prompt_with_nan_values_or_another_width_is_refused_before_use(tmp_path):
    good = torch.randn(10, 32)
    save_prompt(tmp_path / "good.safetensors", good, {})
    assert torch.equal(load_prompt(tmp_path / "good.safetensors", width=32)[0], good)
    broken = good.clone()
    broken[3, :10] = float("nan")  # the header stays intact: only the values are wrong
    save_prompt(tmp_path / "nan.safetensors", broken, {})
    with pytest.raises(InputError, match=r"nan.safetensors: corrupt soft prompt: 10 of 320 values are NaN"):
        load_prompt(tmp_path / "nan.safetensors", width=32)
    with pytest.raises(
        InputError, match=r"good.safetensors: corrupt soft prompt: its vectors have width 32, the model"
    ):
        load_prompt(tmp_path / "good.safetensors", width=64)
    save_prompt(tmp_path / "ints.safetensors", torch.ones(10, 32, dtype=torch.int64), {})
    with pytest.raises(InputError, match=r"torch.int64 of shape \(10, 32\), not float vectors; delete it"):
        load_prompt(tmp_path / "ints.safetensors")


def test_tuning_that_diverges_stops_without_a_prompt(tokenizer, pairs):
    model = build_model({"arch": "llama", "layers": 1, "width": 32, "heads": 2}, tokenizer)
    with torch.no_grad():
        model.get_input_embeddings().weight[5, 0] = float("nan")  # one NaN weight
        model.lm_head.weight[:, 0] = float("nan")
    with pytest.raises(InputError, match=r"tuning diverged: the loss is nan at step 0; nothing was saved"):
        tune(model, tokenizer, pairs, SMALL)


def test_corrupt_prompt_file_is_named(tmp_path):
    (tmp_path / "prompt.safetensors").write_bytes(b"not a tensor file")
    with pytest.raises(InputError, match=r"prompt\.safetensors: not a softeval soft prompt"):
        load_prompt(tmp_path / "prompt.safetensors")


def test_peft_round_trip_gives_the_same_loss(model, tokenizer, pairs, tmp_path):
    from peft import PeftModel

    result = tune(model, tokenizer, pairs, SMALL)
    export_peft(tmp_path / "adapter", result.vectors, model, "local/tiny")
    config = json.loads((tmp_path / "adapter" / "adapter_config.json").read_text())
    assert config["peft_type"] == "PROMPT_TUNING" and config["num_virtual_tokens"] == 10
    assert torch.equal(import_peft(tmp_path / "adapter"), result.vectors)
    peft_model = PeftModel.from_pretrained(copy.deepcopy(model), str(tmp_path / "adapter"))
    # PEFT puts virtual tokens before any padding; on an unpadded row both placements agree.
    prompt, target = pairs[0]
    batch = encode_batch(tokenizer, [prompt], [target])
    ours = answer_loss(model, result.vectors, batch)
    theirs = peft_model(input_ids=batch.input_ids, attention_mask=batch.attention_mask, labels=batch.labels).loss
    assert theirs.item() == pytest.approx(ours.item(), abs=1e-4)


def test_a_train_split_smaller_than_the_batch_fills_the_batch_by_reshuffling(model, tokenizer, pairs):
    """Benchmarks with a handful of train rows (the fixtures have 4, a batch is 8): every batch is
    whole, each row drawn about equally often, instead of an IndexError at the first step."""
    few = pairs[:3]
    seen: list[str] = []
    import softeval.engine.softprompt.training as training  # where tune reads it

    original = training.backward_with_backoff

    def spy(model, tokenizer, vectors, chosen, micro):
        seen.extend(question for question, _ in chosen)
        return original(model, tokenizer, vectors, chosen, micro)

    training.backward_with_backoff = spy
    try:
        result = tune(model, tokenizer, few, TuneSettings(steps=3, batch_size=8, snapshots=(0,)))
    finally:
        training.backward_with_backoff = original
    assert len(result.losses) == 3 and len(seen) == 24
    assert sorted(seen.count(question) for question, _ in few) == [8, 8, 8]
