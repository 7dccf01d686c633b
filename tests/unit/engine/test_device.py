"""Device correctness without a GPU: the engine run on a second device type.

Every engine path (generation with and without the KV cache, a soft prompt and a shared
prefix; option scoring from the prompt cache and whole rows; a tuning step; the soft prompt's
initial vectors) runs with the model on PyTorch's lazy-tensor device, a real device that is not
the CPU and computes real values, under a dispatch mode that refuses any operation mixing two
devices as CUDA would. A tensor the engine creates without naming its device lands on the CPU and
stops the run here exactly where it would stop on a GPU (issue 27: the decoding loop's new mask
column). The results must equal the CPU's: same texts, same scores, same gradient step.
"""

from __future__ import annotations

import copy

import pytest
import torch
from torch.overrides import TorchFunctionMode
from torch.utils._pytree import tree_flatten

from softeval.data.splits import task_examples
from softeval.engine.generate import generate_greedy
from softeval.engine.loglik import score_options
from softeval.engine.softprompt import initial_vectors, tune
from softeval.settings import TuneSettings
from softeval.zoo.corpus import tokenizer_corpus
from softeval.zoo.tokenizer import train_tokenizer
from softeval.zoo.training import build_model

lazy = pytest.importorskip("torch._lazy.ts_backend", reason="PyTorch without the lazy-tensor backend")
lazy.init()
DEVICE = torch.device("lazy")

# Calls CUDA itself allows across devices: moving and copying between devices, and indexing a
# device tensor with CPU indices.
CROSS_DEVICE_OK = {"to", "copy_", "__getitem__", "cpu", "cuda", "tolist", "item"}


class SameDevice(TorchFunctionMode):
    """Refuse every torch call whose tensor arguments (0-dim CPU scalars aside) span two devices."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = getattr(func, "__name__", str(func))
        if name not in CROSS_DEVICE_OK:
            devices = {
                t.device.type
                for t in tree_flatten((args, kwargs))[0]
                if isinstance(t, torch.Tensor) and not (t.device.type == "cpu" and t.dim() == 0)
            }
            if len(devices) > 1:
                raise RuntimeError(f"{name} mixes devices {sorted(devices)}: a tensor was created without its device")
        return func(*args, **kwargs)


@pytest.fixture(scope="module")
def setup(world, tasks):
    tokenizer = train_tokenizer(tokenizer_corpus(world, list(tasks.values())), 400)
    torch.manual_seed(0)
    model = build_model({"arch": "llama", "layers": 2, "width": 32, "heads": 2}, tokenizer).eval()
    for p in model.parameters():
        p.requires_grad_(False)
    moved = build_model({"arch": "llama", "layers": 2, "width": 32, "heads": 2}, tokenizer).eval()
    moved.load_state_dict(model.state_dict())
    moved.to(DEVICE)
    for p in moved.parameters():
        p.requires_grad_(False)
    return model, moved, tokenizer


def on_both(setup, run):
    """`run(model)` on the CPU, then on the lazy device under the mixing check."""
    model, moved, tokenizer = setup
    expected = run(model, tokenizer)
    with SameDevice():
        actual = run(moved, tokenizer)
    return expected, actual


def test_the_check_catches_a_tensor_created_without_its_device():
    with pytest.raises(RuntimeError, match="mixes devices"), SameDevice():
        mask = torch.ones(2, 3, dtype=torch.long, device=DEVICE)
        torch.cat([mask, torch.ones(2, 1, dtype=mask.dtype)], dim=1)  # the issue-27 line, before its fix


VECTORS = torch.randn(10, 32, generator=torch.Generator().manual_seed(5))


@pytest.mark.parametrize("use_cache", [True, False], ids=["cache", "no-cache"])
@pytest.mark.parametrize("vectors", [None, VECTORS], ids=["plain", "soft-prompt"])
@pytest.mark.parametrize("shared", [None, "Question:"], ids=["alone", "shared-prefix"])
def test_generation_on_another_device_never_mixes_devices_and_gives_the_cpus_texts(
    setup, world, tasks, use_cache, vectors, shared
):
    task = tasks["world_phrase"]
    prompts = [task.prompt(ex) for ex in task_examples(task, world, "test")[:3]] + ["Question: x?\nAnswer:"]
    prompts = [p if p.startswith("Question:") else "Question: " + p for p in prompts]

    def run(model, tokenizer):
        return generate_greedy(
            model,
            tokenizer,
            prompts,
            vectors=vectors,
            stops=("\n",),
            max_new_tokens=6,
            batch_size=2,
            use_cache=use_cache,
            shared_prefix=shared,
        )

    expected, actual = on_both(setup, run)
    assert actual == expected


@pytest.mark.parametrize("share_prompt", [True, False], ids=["prompt-cache", "whole-rows"])
@pytest.mark.parametrize("vectors", [None, VECTORS], ids=["plain", "soft-prompt"])
def test_option_scoring_on_another_device_gives_the_cpus_scores(setup, world, tasks, share_prompt, vectors):
    task = tasks["world_choice"]
    examples = task_examples(task, world, "test")[:3]
    prompts = [task.prompt(ex) for ex in examples]

    def run(model, tokenizer):
        scores = score_options(
            model, tokenizer, task, prompts, examples, vectors, batch_size=4, share_prompt=share_prompt
        )
        return [s.logliks for s in scores]

    expected, actual = on_both(setup, run)
    for got, want in zip(actual, expected, strict=True):
        assert got == pytest.approx(want, abs=1e-4)


def test_tuning_steps_and_initial_vectors_on_another_device_match_the_cpu(setup, world, tasks):
    task = tasks["world_phrase"]
    pairs = [(task.prompt(ex), task.target(ex)) for ex in task_examples(task, world, "train")[:8]]
    config = TuneSettings(steps=2, batch_size=4, snapshots=(0, 2))

    def run(model, tokenizer):
        start = initial_vectors(model, tokenizer, config, torch.Generator().manual_seed(0)).cpu()
        result = tune(model, tokenizer, pairs, config)
        return start, result.vectors.cpu(), result.losses

    (start, vectors, losses), (start_l, vectors_l, losses_l) = on_both(setup, run)
    assert torch.allclose(start_l, start)
    assert losses_l == pytest.approx(losses, abs=1e-4)
    assert torch.allclose(vectors_l, vectors, atol=1e-4)


def test_the_hf_judge_on_another_device_sums_its_answer_words_there_and_gives_the_cpus_verdicts(
    setup, world, tasks, tmp_path
):
    """Issue 41 item 3: the HF judge summed the answer words' log-probabilities (on the model's
    device) into a tensor made on the CPU, which CUDA refuses; every hf-judge job died on a GPU."""
    from softeval.judges.local_lm import HFJudge, JudgePrompts, VerdictCache
    from tests.conftest import ROOT

    prompts = JudgePrompts.load(ROOT / "config" / "judges" / "default.yaml")
    task = tasks["world_numeric"]
    examples = task_examples(task, world, "test")[:3]
    rendered = [
        prompts.render(kind, task, ex, response)
        for ex in examples
        for kind, response in (("knowledge", "#### 12"), ("format", "It was 12."))
    ]

    def run(model, tokenizer):
        cache = VerdictCache(tmp_path / f"cache-{model.device.type}")  # each device judges afresh
        judge = HFJudge(model, tokenizer, "tiny", prompts, cache, batch_size=4)
        return judge.verdicts("knowledge", rendered), judge.asked

    (expected, asked), (actual, asked_l) = on_both(setup, run)
    assert asked == asked_l == len(rendered)
    assert actual == expected


@pytest.mark.parametrize("share_prompt", [True, False], ids=["prompt-cache", "whole-rows"])
def test_bf16_option_scoring_projects_in_fp32_on_the_models_device(setup, world, tasks, share_prompt):
    """The fp32 projection of a bf16 output layer (softprompt.kept_logits) builds its slices and
    casts on the model's device, as on CUDA: no tensor of it is made on the CPU."""
    model, _, tokenizer = setup
    task = tasks["world_choice"]
    examples = task_examples(task, world, "test")[:3]
    prompts = [task.prompt(ex) for ex in examples]
    half = copy.deepcopy(model).to(torch.bfloat16)
    half_moved = copy.deepcopy(half).to(DEVICE)

    def run(m):
        scores = score_options(m, tokenizer, task, prompts, examples, None, batch_size=4, share_prompt=share_prompt)
        return [s.logliks for s in scores]

    expected = run(half)
    with SameDevice():
        actual = run(half_moved)
    for got, want in zip(actual, expected, strict=True):
        assert got == pytest.approx(want, abs=1e-2)


@pytest.fixture(scope="module")
def chaotic(setup):
    """The setup's model with its weights scaled up, on both devices: varied outputs, so rows end
    at different steps and the next rows join the batch mid-decode."""
    _, _, tokenizer = setup
    torch.manual_seed(1)
    scaled = build_model({"arch": "llama", "layers": 2, "width": 32, "heads": 2}, tokenizer).eval()
    scaled.load_state_dict({k: v * 4.0 for k, v in scaled.state_dict().items()})
    moved = build_model({"arch": "llama", "layers": 2, "width": 32, "heads": 2}, tokenizer).eval()
    moved.load_state_dict(scaled.state_dict())
    moved.to(DEVICE)
    for p in (*scaled.parameters(), *moved.parameters()):
        p.requires_grad_(False)
    return scaled, moved, tokenizer


@pytest.mark.parametrize("vectors", [None, VECTORS], ids=["plain", "soft-prompt"])
@pytest.mark.parametrize("shared", [None, "Question:"], ids=["alone", "shared-prefix"])
def test_rows_joining_a_batch_on_another_device_never_mix_devices(chaotic, world, tasks, vectors, shared, monkeypatch):
    """Continuous batching's paths (softeval.engine.live_batch: padding the cache, joining, trimming
    unused columns) on the lazy device, as on CUDA: no tensor made on the CPU, the CPU's texts."""
    from softeval.engine import generate as generation

    joins = []
    real = generation.join
    monkeypatch.setattr(generation, "join", lambda *args: (joins.append(args[0].mask.device.type), real(*args))[1])
    prompts = [
        "Question: " + tasks[name].prompt(ex)
        for name in ("world_numeric", "world_choice", "world_phrase")
        for ex in task_examples(tasks[name], world, "test")[:3]
    ]

    def run(model, tokenizer):
        return generate_greedy(
            model,
            tokenizer,
            prompts,
            vectors=vectors,
            stops=(".", ","),
            max_new_tokens=12,
            batch_size=4,
            shared_prefix=shared,
        )

    expected, actual = on_both(chaotic, run)
    assert actual == expected
    assert "lazy" in joins and "cpu" in joins  # rows did join, on both devices
