from __future__ import annotations

import pytest
import torch

from softeval.data.splits import task_examples
from softeval.engine.generate import generate_greedy
from softeval.engine.methods import build_prompts, few_shot_examples
from softeval.zoo.corpus import tokenizer_corpus
from softeval.zoo.tokenizer import train_tokenizer
from softeval.zoo.training import build_model


@pytest.fixture(scope="module")
def setup(world, tasks):
    tokenizer = train_tokenizer(tokenizer_corpus(world, list(tasks.values())), 400)
    torch.manual_seed(0)
    model = build_model({"arch": "llama", "layers": 2, "width": 32, "heads": 2}, tokenizer).eval()
    prompts = []
    for name in ("world_numeric", "world_choice", "world_phrase"):
        task = tasks[name]
        prompts += [task.prompt(ex) for ex in task_examples(task, world, "test")[:3]]
    prompts += ["Short.", "Question: x?\nAnswer:"]
    return model, tokenizer, prompts


VECTORS = torch.randn(10, 32, generator=torch.Generator().manual_seed(5))


@pytest.mark.parametrize("vectors", [None, VECTORS], ids=["plain", "soft-prompt"])
def test_batched_equals_one_at_a_time_and_cache_equals_no_cache(setup, vectors):
    model, tokenizer, prompts = setup
    kwargs = {"vectors": vectors, "stops": (".", "\n"), "max_new_tokens": 10}
    batched = generate_greedy(model, tokenizer, prompts, batch_size=len(prompts), **kwargs)
    single = generate_greedy(model, tokenizer, prompts, batch_size=1, **kwargs)
    uncached = generate_greedy(model, tokenizer, prompts, batch_size=4, use_cache=False, **kwargs)
    assert batched == single == uncached
    assert len(batched) == len(prompts)
    assert {g.stop_reason for g in batched} <= {"eos", "stop", "length"}
    for g, prompt in zip(batched, prompts, strict=True):
        assert g.prompt_tokens == len(tokenizer(prompt)["input_ids"])
        assert "." not in g.text and "\n" not in g.text
        assert 1 <= g.new_tokens <= 10


def test_soft_prompt_generation_matches_a_manual_greedy_loop(setup):
    model, tokenizer, prompts = setup
    prompt = prompts[0]
    ours = generate_greedy(model, tokenizer, [prompt], vectors=VECTORS, stops=("\n",), max_new_tokens=6)[0]
    ids = tokenizer(prompt)["input_ids"]
    embeds = torch.cat([VECTORS, model.get_input_embeddings()(torch.tensor(ids))]).unsqueeze(0)
    generated = []
    with torch.no_grad():
        for _ in range(6):
            token = int(model(inputs_embeds=embeds).logits[0, -1].argmax())
            if token == tokenizer.eos_token_id:
                break
            generated.append(token)
            if "\n" in tokenizer.decode(generated):
                break
            embeds = torch.cat([embeds, model.get_input_embeddings()(torch.tensor([[token]]))], dim=1)
    assert ours.text == tokenizer.decode(generated).split("\n")[0]
    assert ours.new_tokens == len(generated)


def test_length_limit_and_bad_limit(setup):
    model, tokenizer, prompts = setup
    (g,) = generate_greedy(model, tokenizer, prompts[:1], stops=("@@@",), max_new_tokens=3)
    assert g.new_tokens <= 3 and (g.stop_reason == "length") == (g.new_tokens == 3)
    with pytest.raises(ValueError):
        generate_greedy(model, tokenizer, prompts[:1], max_new_tokens=0)


@pytest.mark.parametrize("vectors", [None, VECTORS], ids=["plain", "soft-prompt"])
def test_shared_prefix_cache_changes_nothing(setup, world, tasks, vectors):
    """Few-shot prompts share instruction + shots: encoding them once gives the same tokens."""
    model, tokenizer, _ = setup
    task = tasks["world_numeric"]
    train, test = task_examples(task, world, "train"), task_examples(task, world, "test")
    method = build_prompts(task, "few_shot", test[:7], few_shot_examples(train, 3, 0, task))
    kwargs = {"vectors": vectors, "stops": ("\n",), "max_new_tokens": 8}
    reference = generate_greedy(model, tokenizer, method.prompts, batch_size=1, use_cache=False, **kwargs)
    shared = generate_greedy(
        model, tokenizer, method.prompts, batch_size=3, shared_prefix=method.shared_prefix, **kwargs
    )
    assert shared == reference
    # A "prefix" that is not a token prefix of the prompts falls back to plain generation.
    odd = generate_greedy(
        model, tokenizer, method.prompts, batch_size=3, shared_prefix=method.shared_prefix[:-1], **kwargs
    )
    assert odd == reference


def test_shared_prefix_is_encoded_once(setup, world, tasks, monkeypatch):
    model, tokenizer, _ = setup
    task = tasks["world_phrase"]
    method = build_prompts(task, "zero_shot", task_examples(task, world, "test")[:6])
    lengths = []
    original = model.forward

    def spy(*args, **kwargs):
        source = kwargs.get("input_ids") if kwargs.get("input_ids") is not None else kwargs["inputs_embeds"]
        lengths.append(source.shape[1])
        return original(*args, **kwargs)

    monkeypatch.setattr(model, "forward", spy)
    generate_greedy(
        model, tokenizer, method.prompts, batch_size=2, max_new_tokens=1, shared_prefix=method.shared_prefix
    )
    prefix_tokens = len(tokenizer(method.shared_prefix)["input_ids"])
    assert lengths[0] == prefix_tokens  # the prefix, once
    assert all(n < prefix_tokens for n in lengths[1:])  # each batch feeds only its questions
    assert len(lengths) == 1 + 3


@pytest.mark.parametrize("vectors", [None, VECTORS], ids=["plain", "soft-prompt"])
def test_an_over_long_prompt_keeps_its_end_and_says_so(setup, vectors):
    """A 100,000-character question on a 512-position model: its last tokens that fit beside the
    soft prompt and the budget are kept, the cut is counted, and the rows batched with it are as
    they would be alone."""
    model, tokenizer, prompts = setup
    long = "Background: " + "the old records say many things. " * 3100 + prompts[0]
    assert len(long) > 100_000
    budget, soft = 5, 0 if vectors is None else len(vectors)
    limit = model.config.max_position_embeddings - soft - budget
    kwargs = {"vectors": vectors, "stops": ("\n",), "max_new_tokens": budget}
    together = generate_greedy(model, tokenizer, [long, prompts[1]], batch_size=2, **kwargs)
    alone = generate_greedy(model, tokenizer, [prompts[1]], **kwargs)
    assert together[0].prompt_tokens == limit
    assert together[0].truncated == len(tokenizer(long)["input_ids"]) - limit
    assert together[1] == alone[0] and alone[0].truncated == 0
