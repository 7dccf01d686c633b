"""The vLLM backend on a fake engine, on the CPU (issue 41, item 6): both readings of one
continuation, the Gemma prompt-embeddings guard, and the Hugging Face -> vLLM hand-off that
must free the model before the engine takes its share of the GPU.

The fake `vllm` module decodes a fixed script of tokens per prompt, with vLLM's stop strings,
budgets and end ids. Like vLLM (not batch-invariant), a *repeated* request for a prompt may
decode differently (it follows another script); a request whose prompt is an earlier prompt
followed by tokens of its script continues that script."""

from __future__ import annotations

import gc
import json
import shutil
import sys
import types
import weakref
from typing import ClassVar

import pytest
import torch
from transformers import AutoTokenizer

from softeval.engine.generate import Until
from softeval.engine.models import ModelOptions
from softeval.jobs import evaluate
from softeval.jobs.common import LoadedModel
from softeval.schema import InputError
from softeval.settings import GenerateSettings, LoglikSettings

FIRST = "The answer is 42.\nIt was founded in 1432.\n\nQuestion: what came next in the old records"
REPEAT = "The answer is 17.\nIt was founded in 1201.\n\nQuestion: what came after that in the book"
GiB = 1024**3


class Completion:
    def __init__(self, text, token_ids, finish_reason, stop_reason):
        self.text, self.token_ids = text, token_ids
        self.finish_reason, self.stop_reason = finish_reason, stop_reason


class SamplingParams:
    def __init__(self, **values):
        self.__dict__.update(values)


class FakeLLM:
    """Greedy 'decoding' of a script per prompt, as vLLM reports it."""

    started: ClassVar[list[FakeLLM]] = []
    scripts = (FIRST, REPEAT)
    eos_after: str | None = None  # a text after which the script emits EOS

    def __init__(self, model, **settings):
        self.settings = settings
        self.tokenizer = AutoTokenizer.from_pretrained(model)
        self.free_at_start = torch.cuda.mem_get_info() if torch.cuda.is_available() else None
        self.seen: list[tuple[object, list[int]]] = []  # (prompt, its script)
        self.requests: list[dict] = []
        FakeLLM.started.append(self)

    def script(self, text):
        ids = self.tokenizer(text, add_special_tokens=False)["input_ids"]
        if self.eos_after is not None and text.startswith(self.eos_after):
            cut = len(self.tokenizer(self.eos_after, add_special_tokens=False)["input_ids"])
            ids = [*ids[:cut], self.tokenizer.eos_token_id, *ids[cut:]]
        return ids

    def start_of(self, prompt) -> list[int]:
        """The script this prompt follows: an earlier prompt continued, a repeat, or a new one."""
        for earlier, script in self.seen:
            extra = _extends(prompt, earlier)
            if extra is not None and extra > 0:
                return script[extra:]
        repeats = sum(_extends(prompt, earlier) == 0 for earlier, _ in self.seen)
        script = self.script(self.scripts[min(repeats, 1)])
        self.seen.append((prompt, script))
        return script

    def generate(self, inputs, params, use_tqdm=False):
        params = params if isinstance(params, list) else [params] * len(inputs)
        outs = []
        for prompt_input, p in zip(inputs, params, strict=True):
            self.requests.append(prompt_input)
            prompt = prompt_input.get("prompt_token_ids", prompt_input.get("prompt_embeds"))
            outs.append(types.SimpleNamespace(outputs=[self.decode(self.start_of(prompt), p)]))
        return outs

    def decode(self, script, p):
        out: list[int] = []
        for token in script:
            if len(out) == p.max_tokens:
                break
            out.append(token)
            if token in p.stop_token_ids:
                return Completion(self.tokenizer.decode(out, skip_special_tokens=True), out, "stop", None)
            text = self.tokenizer.decode(out, skip_special_tokens=True)
            hits = [text.find(s) for s in p.stop if s in text]
            if hits:
                stop = min((s for s in p.stop if s in text), key=text.find)
                return Completion(text[: min(hits)], out, "stop", stop)
        return Completion(self.tokenizer.decode(out, skip_special_tokens=True), out, "length", None)


def _extends(prompt, earlier) -> int | None:
    """How many items `prompt` adds after `earlier` (None if it does not start with it)."""
    if isinstance(prompt, torch.Tensor) != isinstance(earlier, torch.Tensor) or len(prompt) < len(earlier):
        return None
    if isinstance(prompt, torch.Tensor):
        return len(prompt) - len(earlier) if torch.equal(prompt[: len(earlier)], earlier) else None
    return len(prompt) - len(earlier) if list(prompt[: len(earlier)]) == list(earlier) else None


@pytest.fixture
def fake_vllm(monkeypatch):
    module = types.ModuleType("vllm")
    module.__version__ = "0.19.1"
    module.LLM, module.SamplingParams = FakeLLM, SamplingParams
    monkeypatch.setitem(sys.modules, "vllm", module)
    monkeypatch.setattr(FakeLLM, "started", [])
    return module


def engine(model_dir, prompt_embeds=False):
    from softeval.engine.vllm_backend import VLLMModel

    return VLLMModel(str(model_dir), ModelOptions(dtype="float32"), prompt_embeds=prompt_embeds)


PROMPTS = ["Question: In what year was Norland founded?\nAnswer:", "Q: 2+2?\nA:"]


@pytest.mark.parametrize("soft", [False, True])
def test_the_second_reading_continues_the_first_responses_tokens(fake_vllm, tiny_model_dir, soft):
    model = engine(tiny_model_dir, prompt_embeds=soft)
    vectors = torch.randn(3, 32, generator=torch.Generator().manual_seed(0)) if soft else None
    eos = {model.tokenizer.eos_token_id}
    out = model.generate(PROMPTS, vectors, ["\n"], 16, eos, also=Until(("\n\n",), 64))
    assert [g.text for g in out] == ["The answer is 42."] * 2
    assert [g.also_text for g in out] == ["The answer is 42.\nIt was founded in 1432."] * 2  # not "...17..."
    llm = FakeLLM.started[0]
    assert len(llm.requests) == 4  # one request per prompt, then one continuation each
    if soft:  # the continuation's prompt: soft prompt, prompt embeddings, then the response's tokens
        embed = model.input_embeddings()
        row = model.tokenizer(PROMPTS[0])["input_ids"]
        response = llm.script(FIRST)[:8]  # "The answer is 42.\n": 8 tokens
        expected = torch.cat([vectors, embed(torch.tensor(row + response))]).detach()
        assert torch.equal(llm.requests[2]["prompt_embeds"], expected)
    alone = engine(tiny_model_dir, prompt_embeds=soft).generate(PROMPTS, vectors, ["\n"], 16, eos)
    assert [g.text for g in alone] == [g.text for g in out]  # softeval's reading does not depend on `also`


def test_a_second_reading_that_ends_within_the_response_costs_no_request(fake_vllm, tiny_model_dir):
    cases = [
        (Until((" is",), 64), "The answer"),  # its stop comes first
        (Until(("\n\n",), 5), "The answer is 4"),  # its budget is smaller
        (Until((".\n",), 64), "The answer is 42"),  # its stop is within the response's last token
    ]
    for also, expected in cases:
        model = engine(tiny_model_dir)
        out = model.generate(PROMPTS[:1], None, ["\n"], 16, {model.tokenizer.eos_token_id}, also=also)
        assert out[0].text == "The answer is 42." and out[0].also_text == expected
        assert len(model.llm.requests) == 1


def test_an_end_of_sequence_ends_both_readings(fake_vllm, tiny_model_dir, monkeypatch):
    monkeypatch.setattr(FakeLLM, "eos_after", "The answer is 42")
    model = engine(tiny_model_dir)
    out = model.generate(PROMPTS[:1], None, ["\n"], 16, {model.tokenizer.eos_token_id}, also=Until(("\n\n",), 64))
    assert (out[0].text, out[0].also_text, out[0].stop_reason) == ("The answer is 42", "The answer is 42", "eos")
    assert len(model.llm.requests) == 1


def gemma_dir(tiny_model_dir, tmp_path, model_type):
    copy = tmp_path / model_type
    shutil.copytree(tiny_model_dir, copy)
    config = json.loads((copy / "config.json").read_text())
    config["model_type"], config["architectures"] = model_type, ["Gemma2ForCausalLM"]
    (copy / "config.json").write_text(json.dumps(config))
    return copy


def test_soft_prompts_on_a_gemma_model_need_a_vllm_that_scales_embeddings_once(
    fake_vllm, tiny_model_dir, tmp_path, monkeypatch
):
    gemma = gemma_dir(tiny_model_dir, tmp_path, "gemma2")
    monkeypatch.setattr(fake_vllm, "__version__", "0.18.0")
    with pytest.raises(InputError) as err:
        engine(gemma, prompt_embeds=True)
    message = str(err.value)
    assert "\n" not in message and "vLLM 0.18.0" in message and "vllm>=0.19.1" in message and "#36787" in message
    assert FakeLLM.started == []  # refused before the engine starts
    engine(gemma)  # no soft prompts: token ids are scaled once by vLLM itself
    engine(tiny_model_dir, prompt_embeds=True)  # not a Gemma model
    monkeypatch.setattr(fake_vllm, "__version__", "0.19.1")
    engine(gemma, prompt_embeds=True)


# --- the Hugging Face -> vLLM hand-off ---------------------------------------------------------


class FakeGPU:
    """torch.cuda as seen by the job: 80 GiB, 30 GiB of them held while the HF model lives."""

    def __init__(self):
        self.models: weakref.WeakSet = weakref.WeakSet()

    def held(self) -> int:
        return 30 * GiB * len(self.models)

    def install(self, monkeypatch):
        monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
        monkeypatch.setattr(torch.cuda, "empty_cache", lambda: None)
        monkeypatch.setattr(torch.cuda, "mem_get_info", lambda *a: (80 * GiB - self.held(), 80 * GiB))
        monkeypatch.setattr(torch.cuda, "memory_allocated", lambda *a: self.held())
        monkeypatch.setattr(torch.cuda, "memory_reserved", lambda *a: self.held())


class CyclicModel:
    """A Hugging Face model as jobs hold it: in a reference cycle (modules <-> hooks), so dropping
    the last name does not free it; only the cycle collector does."""

    def __init__(self, gpu):
        self.me = self
        gpu.models.add(self)


@pytest.fixture
def no_automatic_gc():
    gc.disable()  # only an explicit gc.collect() frees a cycle, as between two allocations on a busy job
    yield
    gc.enable()


def test_the_hf_model_is_freed_before_the_vllm_engine_starts(
    fake_vllm, tiny_model_dir, tmp_path, monkeypatch, no_automatic_gc
):
    gpu = FakeGPU()
    gpu.install(monkeypatch)
    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir)
    handed_over: list[int] = []

    def open_model(ref, options, threads, loader=None):
        if loader is evaluate.load_with_chat:
            return LoadedModel(CyclicModel(gpu), tokenizer, None, {})
        return LoadedModel(*loader(ref, options, threads), {})

    class Backend:
        uses_hf_model = False

        def load(self, ref, options, threads, *, soft_prompt=False):
            handed_over.append(gpu.held())  # the job itself freed the HF model, before any engine code
            model = engine(ref, prompt_embeds=soft_prompt)
            return model, model.tokenizer, None

    monkeypatch.setattr(evaluate, "open_model", open_model)
    monkeypatch.setattr(evaluate, "backend_for", lambda settings: Backend())
    monkeypatch.setattr(evaluate, "write_method_outputs", lambda **kwargs: {})
    monkeypatch.setattr(evaluate, "write_provenance", lambda metas: None)
    monkeypatch.setattr(evaluate, "generation_rows", lambda settings, data_dir: None)
    monkeypatch.setattr(evaluate, "option_rows", lambda settings, task: None)
    task = types.SimpleNamespace(name="world_choice", closed=True)
    outputs = evaluate.MethodOutputs(
        "zero_shot", {None: tmp_path / "generations.jsonl"}, {None: tmp_path / "logliks.jsonl"}, {}
    )
    evaluate.run_evaluate(
        model=str(tiny_model_dir),
        tasks=[evaluate.TaskOutputs(task, tmp_path, [outputs])],  # the job reads only the task's name and kind here
        generate_settings=GenerateSettings.parse({"few_shot_k": 0, "seed": 0, "backend": "vllm"}, "generate"),
        loglik_settings=LoglikSettings.parse({"few_shot_k": 0, "seed": 0}, "loglik"),
        threads=1,
    )
    assert handed_over == [0]
    (llm,) = FakeLLM.started
    free, total = llm.free_at_start
    assert free >= 0.85 * total, f"the engine started with {free / GiB:.0f} of {total / GiB:.0f} GiB free"


def test_an_engine_that_would_not_fit_is_one_error_naming_who_holds_the_gpu(fake_vllm, tiny_model_dir, monkeypatch):
    gpu = FakeGPU()
    gpu.install(monkeypatch)
    kept = CyclicModel(gpu)  # still referenced: nothing may free it
    with pytest.raises(InputError) as err:
        engine(tiny_model_dir)
    message = str(err.value)
    assert "\n" not in message and "this job still holds 30.0 GiB" in message
    assert "gpu_memory_utilization" in message and FakeLLM.started == []
    del kept


def test_vllm_takes_a_jobs_prompts_in_windows_of_many_chunks(fake_vllm, tiny_model_dir, monkeypatch):
    """Issue 41 item 8: every prompt of a job goes to the engine in a few large calls (VLLM_WINDOW
    prompts, not a chunk of 256 each drained to its slowest sequence), and each prompt's generation
    comes back under its own index."""
    from softeval.engine import backends

    backend = backends.backend_for(GenerateSettings.parse({"backend": "vllm", "few_shot_k": 0, "seed": 0}, "g"))
    assert backend.window == backends.VLLM_WINDOW >= 16 * 256  # many times the sequences vLLM keeps in flight
    backend.window = 4
    model, tokenizer, _ = backend.load(str(tiny_model_dir), ModelOptions(dtype="float32"), 1)
    calls = []
    real = model.generate

    def counted(prompts, *args):
        calls.append(len(prompts))
        return real(prompts, *args)

    monkeypatch.setattr(model, "generate", counted)
    prompts = [f"Question: In what year was Norland {i} founded?\nAnswer:" for i in range(10)]
    streamed = list(
        backend.stream(model, tokenizer, prompts, vectors=None, stops=["\n"], max_new_tokens=6, shared_prefix=None)
    )
    assert calls == [4, 4, 2] and [i for i, _ in streamed] == list(range(10))
    assert all(g.prompt_tokens == len(tokenizer(p)["input_ids"]) for (i, g), p in zip(streamed, prompts, strict=True))
