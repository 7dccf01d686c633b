from __future__ import annotations

import pytest
import torch

from softeval.data.splits import task_examples
from softeval.engine.loglik import OptionScores, score_options
from softeval.engine.softprompt import insert_soft_prompt
from softeval.zoo.corpus import tokenizer_corpus
from softeval.zoo.tokenizer import train_tokenizer
from softeval.zoo.training import build_model


@pytest.fixture(scope="module")
def setup(world, tasks):
    tokenizer = train_tokenizer(tokenizer_corpus(world, list(tasks.values())), 400)
    torch.manual_seed(0)
    model = build_model({"arch": "llama", "layers": 2, "width": 32, "heads": 2}, tokenizer).eval()
    task = tasks["world_choice"]
    examples = task_examples(task, world, "test")[:5]
    return model, tokenizer, task, examples, [task.prompt(ex) for ex in examples]


def reference_loglik(model, tokenizer, prompt, response, vectors=None):
    """Full-vocabulary forward over prompt + response, one sequence, no padding."""
    prompt_ids = tokenizer(prompt)["input_ids"]
    ids = torch.tensor([tokenizer(prompt + response)["input_ids"]])
    embeds = model.get_input_embeddings()(ids)
    mask = torch.ones_like(ids)
    start = len(prompt_ids)
    if vectors is not None:
        embeds, mask, _, _ = insert_soft_prompt(embeds, vectors, mask)
        start += vectors.shape[0]
    logprobs = model(inputs_embeds=embeds, attention_mask=mask).logits.log_softmax(-1)[0]
    targets = ids[0, len(prompt_ids) :]
    return sum(logprobs[start - 1 + j, t].item() for j, t in enumerate(targets.tolist())), len(targets)


@pytest.mark.parametrize("with_prompt", [False, True])
def test_option_scores_match_a_full_forward_and_batching_does_not_matter(setup, with_prompt):
    model, tokenizer, task, examples, prompts = setup
    vectors = torch.randn(10, 32, generator=torch.Generator().manual_seed(3)) if with_prompt else None
    batched = score_options(model, tokenizer, task, prompts, examples, vectors, batch_size=7)
    single = score_options(model, tokenizer, task, prompts, examples, vectors, batch_size=1)
    for scores, alone, prompt, example in zip(batched, single, prompts, examples, strict=True):
        assert scores.logliks == pytest.approx(alone.logliks, abs=1e-4)
        for k in range(len(example["options"])):
            response = f" {'ABCD'[k]}. {example['options'][k]}"  # written out, independent of the task code
            expected, n = reference_loglik(model, tokenizer, prompt, response, vectors)
            assert scores.logliks[k] == pytest.approx(expected, abs=1e-4)
            assert scores.lengths[k] == n


def test_choice_and_length_normalisation():
    scores = OptionScores(logliks=[-6.0, -4.0, -4.0, -9.0], lengths=[6, 2, 4, 3])
    assert scores.ranking == [1, 2, 0, 3]
    assert scores.chosen == 1
    assert OptionScores([-6.0, -5.0], [6, 2]).chosen_normalized == 0  # -1.0 per token beats -2.5


def test_an_over_long_prompt_is_cut_from_the_left_never_in_its_answer(setup):
    model, tokenizer, task, examples, prompts = setup
    long = "Background: " + "the old records say many things. " * 3100 + prompts[0]
    (cut,) = score_options(model, tokenizer, task, [long], examples[:1])
    (whole,) = score_options(model, tokenizer, task, prompts[:1], examples[:1])
    assert cut.lengths == whole.lengths  # every option's tokens are scored in full
    n_long = len(tokenizer(long)["input_ids"])
    assert n_long - model.config.max_position_embeddings < cut.truncated <= n_long
    assert whole.truncated == 0


@pytest.mark.parametrize("with_prompt", [False, True])
@pytest.mark.parametrize("arch", ["llama", "gpt2"])
def test_scoring_from_the_prompt_cache_equals_scoring_each_option_whole(world, tasks, setup, with_prompt, arch):
    """One prompt pass and its options from the KV cache (with the instruction's cache shared
    across prompts, and options of unequal count and length) == every option run whole."""
    _, tokenizer, task, examples, _ = setup
    torch.manual_seed(1)
    model = build_model({"arch": arch, "layers": 2, "width": 32, "heads": 2}, tokenizer).eval()
    examples = [dict(ex) for ex in examples]
    examples[1]["options"] = examples[1]["options"][:3]  # three options here, four elsewhere
    examples[1]["label"] = min(examples[1]["label"], 2)
    examples[2]["options"] = [
        examples[2]["options"][0] + " of the northern highland valleys",
        *examples[2]["options"][1:],
    ]
    instruction = "Answer with the letter of the right option.\n\n"
    prompts = [instruction + task.prompt(ex) for ex in examples]
    vectors = torch.randn(10, 32, generator=torch.Generator().manual_seed(3)) if with_prompt else None
    whole = score_options(model, tokenizer, task, prompts, examples, vectors, batch_size=5, share_prompt=False)
    for prefix in (None, instruction):
        for batch_size in (1, 4, 32):
            shared = score_options(
                model, tokenizer, task, prompts, examples, vectors, batch_size=batch_size, shared_prefix=prefix
            )
            for a, b in zip(shared, whole, strict=True):
                assert a.logliks == pytest.approx(b.logliks, abs=1e-5)
                assert a.lengths == b.lengths and a.ranking == b.ranking and a.truncated == b.truncated == 0
    for scores, prompt, example in zip(whole, prompts, examples, strict=True):
        for k in range(len(example["options"])):
            expected, n = reference_loglik(model, tokenizer, prompt, task.option_target(example, k), vectors)
            assert scores.logliks[k] == pytest.approx(expected, abs=1e-4) and scores.lengths[k] == n


def test_an_over_long_prompt_among_short_ones_is_scored_whole(setup):
    """The prompt that does not fit beside its options takes the whole-row path (cut from the
    left); its neighbours keep the shared path; the order of the results is the examples'."""
    model, tokenizer, task, examples, prompts = setup
    long = "Background: " + "the old records say many things. " * 3100 + prompts[1]
    mixed = score_options(model, tokenizer, task, [prompts[0], long, prompts[2]], examples[:3])
    alone = [
        score_options(model, tokenizer, task, [p], [ex])[0]
        for p, ex in zip([prompts[0], long, prompts[2]], examples[:3], strict=True)
    ]
    assert [s.truncated > 0 for s in mixed] == [False, True, False]
    for a, b in zip(mixed, alone, strict=True):
        assert a.logliks == pytest.approx(b.logliks, abs=1e-5) and a.truncated == b.truncated
