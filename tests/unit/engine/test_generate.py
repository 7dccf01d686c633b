from __future__ import annotations

import random
import types

import pytest
import torch

from softeval.data.answers import cut_at_stop
from softeval.data.splits import task_examples
from softeval.engine.generate import Until, generate_greedy, stop_string_seen, tail_window
from softeval.engine.methods import ChatWrap, build_prompts, few_shot_examples
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


@pytest.fixture(scope="module")
def chaotic(setup):
    """A random model with its weights scaled up: varied outputs, so stop strings do fire."""
    _, tokenizer, prompts = setup
    torch.manual_seed(1)
    model = build_model({"arch": "llama", "layers": 2, "width": 32, "heads": 2}, tokenizer).eval()
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.mul_(4.0)
    return model, tokenizer, prompts


READINGS = [
    # (softeval's stops and budget, the second reading's): a longer second budget, one that stops
    # at strings softeval's never does, a shorter one, and one whose stops are a subset.
    ((("\n\n\n",), 6), Until(("\n", ".", ","), 14)),
    ((("\n",), 16), Until((">",), 4)),
    (((".", ","), 12), Until((",",), 12)),
]


@pytest.mark.parametrize("vectors", [None, VECTORS], ids=["plain", "soft-prompt"])
@pytest.mark.parametrize(("first", "also"), READINGS)
def test_a_second_reading_equals_a_run_with_its_own_stops_and_budget(chaotic, vectors, first, also):
    """One pass, two readings (softeval's response and lm-evaluation-harness's): each is exactly
    what generation with its stops and budget alone gives, batched or not, cached or not."""
    model, tokenizer, prompts = chaotic
    stops, budget = first
    both = generate_greedy(
        model, tokenizer, prompts, vectors=vectors, stops=stops, max_new_tokens=budget, batch_size=3, also=also
    )
    alone = generate_greedy(model, tokenizer, prompts, vectors=vectors, stops=stops, max_new_tokens=budget)
    other = generate_greedy(
        model, tokenizer, prompts, vectors=vectors, stops=also.stops, max_new_tokens=also.max_new_tokens
    )
    assert [g.text for g in both] == [g.text for g in alone]
    assert [(g.stop_reason, g.new_tokens) for g in both] == [(g.stop_reason, g.new_tokens) for g in alone]
    assert [g.also_text for g in both] == [g.text for g in other]
    for kwargs in ({"batch_size": 1}, {"batch_size": 4, "use_cache": False}):
        again = generate_greedy(
            model, tokenizer, prompts, vectors=vectors, stops=stops, max_new_tokens=budget, also=also, **kwargs
        )
        assert again == both
    assert all(g.also_text is None for g in alone)
    assert {g.stop_reason for g in other} == {"stop", "length"}  # both ends of the second reading occur
    assert any(g.text != g.also_text for g in both)


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


def full_decode_stop_step(tokenizer, ids, stops):
    """The step at which the old check (the whole output decoded every step) first sees a stop."""
    for n in range(1, len(ids) + 1):
        text = tokenizer.decode(ids[:n], skip_special_tokens=True)
        if cut_at_stop(text, stops) != text:
            return n
    return None


def tail_stop_step(tokenizer, ids, stops):
    window = tail_window(stops)
    return next((n for n in range(1, len(ids) + 1) if stop_string_seen(tokenizer, ids[:n], stops, window)), None)


@pytest.mark.parametrize("kind", ["zoo-bpe", "byte-level-32k"])
def test_tail_decoding_finds_every_stop_exactly_when_a_full_decode_does(setup, kind):
    """Random outputs rich in stop characters, multi-byte characters and special tokens: the
    step where generation stops is the same as with the whole output decoded at every step."""
    _, zoo_tokenizer, _ = setup
    if kind == "zoo-bpe":
        tokenizer = zoo_tokenizer
    else:
        from softeval.zoo.random_model import train_llama_style_tokenizer

        tokenizer = train_llama_style_tokenizer(["héllo wörld ####  \\boxed{12}\n\n" * 50, "日本語 の テキスト."], 2000)
    rng = random.Random(0)
    vocab = len(tokenizer)
    hot = [i for i in range(vocab) if any(c in tokenizer.decode([i]) for c in "\n.#}")] or [0]
    for stops in [("\n",), (".", "\n"), ("####",), ("\n\n\n",), ("}\n",)]:
        for _ in range(60):
            ids = [rng.choice(hot) if rng.random() < 0.15 else rng.randrange(vocab) for _ in range(rng.randint(1, 60))]
            assert tail_stop_step(tokenizer, ids, stops) == full_decode_stop_step(tokenizer, ids, stops), (stops, ids)


def test_stop_detection_decodes_a_bounded_tail_not_the_whole_answer(setup):
    _, tokenizer, _ = setup
    decoded = []

    class Counting:
        def decode(self, ids, skip_special_tokens=True):
            decoded.append(len(ids))
            return tokenizer.decode(ids, skip_special_tokens=skip_special_tokens)

    ids = tokenizer("word " * 400)["input_ids"][:400]
    window = tail_window(["\n"])
    for n in range(1, len(ids) + 1):
        assert not stop_string_seen(Counting(), ids[:n], ["\n"], window)
    assert max(decoded) == window == 12  # O(1) per step: the old check decoded all n tokens


class AlwaysToken(torch.nn.Module):
    """A model that always predicts one token (to see what stops generation)."""

    def __init__(self, vocab: int, token: int):
        super().__init__()
        self.embed, self.token, self.vocab = torch.nn.Embedding(vocab, 4), token, vocab
        self.config, self.generation_config = types.SimpleNamespace(), None

    def get_input_embeddings(self):
        return self.embed

    def forward(self, inputs_embeds=None, **kwargs):
        logits = torch.zeros(inputs_embeds.shape[0], 1, self.vocab)
        logits[..., self.token] = 1.0
        return types.SimpleNamespace(logits=logits, cache=None)


def test_a_chat_templates_end_of_turn_token_stops_generation():
    """Gemma's template closes a turn with <end_of_turn>, its generation config names only <eos>."""
    from softeval.zoo.random_model import train_llama_style_tokenizer

    tokenizer = train_llama_style_tokenizer(["some text for a tokenizer"] * 20, 400)
    tokenizer.add_special_tokens({"additional_special_tokens": ["<start_of_turn>", "<end_of_turn>"]})
    tokenizer.chat_template = (
        "{% for m in messages %}<start_of_turn>{{ m['role'] }}\n{{ m['content'] }}<end_of_turn>\n{% endfor %}"
        "{% if add_generation_prompt %}<start_of_turn>model\n{% endif %}"
    )
    end = tokenizer.convert_tokens_to_ids("<end_of_turn>")
    chat = ChatWrap.from_tokenizer(tokenizer)
    assert chat.end_of_turn == (end,) and end != tokenizer.eos_token_id
    model = AlwaysToken(len(tokenizer), end)
    prompt = chat.wrap("Question?")
    stopped = generate_greedy(model, tokenizer, [prompt], use_cache=False, stop_ids=chat.end_of_turn)[0]
    assert stopped.stop_reason == "eos" and stopped.new_tokens == 0
    ran_on = generate_greedy(model, tokenizer, [prompt], use_cache=False, max_new_tokens=5)[0]
    assert ran_on.stop_reason == "length"  # what happened before: the turn's end did not stop it
    from softeval.zoo.random_model import CHATML

    tokenizer.chat_template = CHATML
    assert ChatWrap.from_tokenizer(tokenizer).end_of_turn == (tokenizer.convert_tokens_to_ids("<|im_end|>"),)


def test_the_cache_is_reindexed_only_at_steps_where_a_row_ended(setup, monkeypatch):
    """Issue 41 item 7: `batch_select_indices` copies every layer's cache, so it runs only when a
    row left the batch (never for a single row, at most once per ending in a batch)."""
    from transformers import Cache

    model, tokenizer, prompts = setup
    calls = []
    original = Cache.batch_select_indices

    def spy(self, indices):
        calls.append(len(indices))
        return original(self, indices)

    monkeypatch.setattr(Cache, "batch_select_indices", spy)
    kwargs = {"stops": ("@@@",), "max_new_tokens": 8}
    single = generate_greedy(model, tokenizer, prompts[:1], batch_size=1, **kwargs)
    assert calls == []  # the old loop reindexed at each of the 7 steps after the first
    batched = generate_greedy(model, tokenizer, prompts, batch_size=len(prompts), **kwargs)
    end_steps = {g.new_tokens + (g.stop_reason == "eos") for g in batched}  # the step each row ended at
    assert len(calls) <= len(end_steps) and all(0 < n < len(prompts) for n in calls)
    assert batched[0] == single[0]


@pytest.mark.parametrize("vectors", [None, VECTORS], ids=["plain", "soft-prompt"])
@pytest.mark.parametrize("shared", [False, True], ids=["own-prompts", "shared-prefix"])
def test_rows_that_join_a_batch_mid_decode_give_one_at_a_time_results(
    chaotic, world, tasks, vectors, shared, monkeypatch
):
    """Continuous batching (issue 41 item 7): when rows end, the next rows in the queue are
    prefilled and join the batch, their cache padded to the batch's columns (after the shared
    prefix, where there is one); the texts are those of one row at a time, and the batch never
    holds more rows than its slots."""
    from softeval.engine import generate as generation

    model, tokenizer, prompts = chaotic
    prefix = None
    if shared:
        task = tasks["world_numeric"]
        train, test = task_examples(task, world, "train"), task_examples(task, world, "test")
        method = build_prompts(task, "few_shot", test[:11], few_shot_examples(train, 2, 0, task))
        prompts, prefix = method.prompts, method.shared_prefix
    kwargs = {"vectors": vectors, "stops": (".", ","), "max_new_tokens": 12}
    reference = generate_greedy(model, tokenizer, prompts, batch_size=1, use_cache=False, **kwargs)
    joined, widest = [], []
    real_join, real_keep = generation.join, generation.keep_rows

    def spy_join(live, new, at):
        joined.append((len(live.rows), len(new.rows), at))
        out = real_join(live, new, at)
        widest.append(len(out.rows))
        return out

    def spy_keep(live, keep, tokens, continuous):
        out, tokens = real_keep(live, keep, tokens, continuous)
        assert out.mask.any(dim=0).all()  # no column left that no row attends to
        assert all(layer.keys.shape[2] == out.mask.shape[1] for layer in out.cache.layers)
        return out, tokens

    monkeypatch.setattr(generation, "join", spy_join)
    monkeypatch.setattr(generation, "keep_rows", spy_keep)
    continuous = generate_greedy(model, tokenizer, prompts, batch_size=4, shared_prefix=prefix, **kwargs)
    assert continuous == reference
    assert len(joined) >= 2 and max(widest) <= 4  # rows did join, never past the slots
    assert {at for *_, at in joined} == (
        {len(tokenizer(prefix)["input_ids"]) + (0 if vectors is None else 10)} if shared else {0}
    )
    assert len({g.new_tokens for g in reference}) > 1  # rows end at different steps


def test_static_batches_where_the_cache_cannot_be_joined(chaotic, monkeypatch):
    """A cache with a sliding-window layer (Gemma, Mistral) keeps its last window only: padding
    would shift it, so such a batch is refilled only once every row has ended."""
    from softeval.engine import generate as generation

    model, tokenizer, prompts = chaotic
    monkeypatch.setattr(generation, "mergeable", lambda cache: False)
    monkeypatch.setattr(generation, "join", lambda *args: pytest.fail("joined a cache that cannot be joined"))
    kwargs = {"stops": (".", ","), "max_new_tokens": 12}
    assert generate_greedy(model, tokenizer, prompts, batch_size=4, **kwargs) == generate_greedy(
        model, tokenizer, prompts, batch_size=1, **kwargs
    )


def test_only_full_attention_dynamic_caches_are_joined():
    from transformers import DynamicCache, LlamaConfig

    gemma2_like = LlamaConfig(
        num_hidden_layers=2, sliding_window=4, layer_types=["sliding_attention", "full_attention"]
    )
    full = DynamicCache(config=LlamaConfig(num_hidden_layers=2))
    windowed = DynamicCache(config=gemma2_like)
    for cache in (full, windowed):
        for layer in range(2):
            cache.update(torch.zeros(1, 1, 3, 2), torch.zeros(1, 1, 3, 2), layer)
    from softeval.engine.live_batch import mergeable

    assert mergeable(full) and not mergeable(windowed) and not mergeable(None)


def test_an_out_of_memory_mid_decode_keeps_the_rows_that_ended(chaotic, monkeypatch):
    """An out-of-memory while rows join the batch restarts only the rows that had not ended, fewer
    at a time (softeval.engine.backoff), with the same texts: nothing decoded is lost."""
    from softeval.engine import generate as generation
    from softeval.engine.backoff import BatchSize

    model, tokenizer, prompts = chaotic
    kwargs = {"stops": (".", ","), "max_new_tokens": 12}
    reference = generate_greedy(model, tokenizer, prompts, batch_size=1, **kwargs)
    real_join, real_prefill = generation.join, generation._prefill
    prefilled = []

    def join_fails_once(*args):
        if not hasattr(join_fails_once, "failed"):
            join_fails_once.failed = True
            raise torch.OutOfMemoryError("CUDA out of memory")
        return real_join(*args)

    def counted(model, rows, *args):
        prefilled.append(len(rows))
        return real_prefill(model, rows, *args)

    monkeypatch.setattr(generation, "join", join_fails_once)
    monkeypatch.setattr(generation, "_prefill", counted)
    size = BatchSize(4)
    assert generate_greedy(model, tokenizer, prompts, batch_size=size, **kwargs) == reference
    assert size.size == 2
    # 4 rows prefilled; k of them ended and k more were prefilled to join (the out-of-memory); then
    # the 11 - k rows that had not ended start again: the k that had are not decoded twice
    assert prefilled[0] == 4 and sum(prefilled[2:]) == len(prompts) - prefilled[1]


def test_rows_are_yielded_as_they_end_with_grad_off_inside(chaotic):
    """iter_greedy (what a job streams into its chunk files): each prompt's generation as soon as
    it ends, so the order follows the rows' lengths; the model runs without autograd even when
    the caller has it on, and the caller's mode is left as it was."""
    from softeval.engine.generate import iter_greedy

    model, tokenizer, prompts = chaotic
    kwargs = {"stops": (".", ","), "max_new_tokens": 12}
    modes = []
    forward = model.forward

    def spy(*args, **kw):
        modes.append(torch.is_grad_enabled())
        return forward(*args, **kw)

    model.forward = spy
    try:
        order = []
        for index, generation in iter_greedy(model, tokenizer, prompts, batch_size=len(prompts), **kwargs):
            assert torch.is_grad_enabled()
            order.append((index, generation))
    finally:
        del model.forward
    assert modes and not any(modes)
    indices = [i for i, _ in order]
    assert sorted(indices) == list(range(len(prompts))) and indices != sorted(indices)
    lengths = [g.new_tokens + (g.stop_reason == "eos") for _, g in order]
    assert lengths == sorted(lengths)  # one batch: a row that ends earlier comes out earlier
    assert dict(order) == dict(enumerate(generate_greedy(model, tokenizer, prompts, batch_size=1, **kwargs)))
