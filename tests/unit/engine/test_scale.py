"""Running at scale: model entries and options, chat templates, OOM backoff, GPU-slot locks."""

from __future__ import annotations

import copy
import os
import subprocess
import sys
import time

import pytest
import torch

from softeval.config import check_config, load_config_file, model_options
from softeval.engine import gpu_slots
from softeval.engine.backoff import BatchSize, in_batches
from softeval.engine.generate import generate_greedy
from softeval.engine.methods import ChatWrap, build_prompts, response_target
from softeval.engine.models import ModelOptions, check_reference, load_model
from softeval.engine.softprompt import TuneSettings, tune
from softeval.schema import InputError
from softeval.zoo.random_model import CHATML, train_llama_style_tokenizer
from tests.conftest import NUMERIC, ROOT

PAPER = load_config_file(ROOT / "config" / "paper.yaml")
SMOKE = load_config_file(ROOT / "tests" / "configs" / "smoke.yaml")


def config_error(base, edit):
    config = copy.deepcopy(base)
    edit(config)
    with pytest.raises(InputError) as info:
        check_config(config, "my.yaml", ROOT)
    assert "\n" not in str(info.value)
    return str(info.value)


def test_paper_and_smoke_configs_are_valid_and_roles_load_as_documented():
    paper = check_config(copy.deepcopy(PAPER), "paper.yaml", ROOT)
    assert len(paper["models"]) == 7 and len(paper["tasks"]) == 7
    llama = paper["models"][1]
    assert model_options(llama, "base") == {
        "revision": "main",
        "dtype": "bfloat16",
        "device_map": None,
        "trust_remote_code": False,
        "chat_template": False,
    }
    assert model_options(llama, "post")["chat_template"] is True
    smoke = check_config(copy.deepcopy(SMOKE), "smoke.yaml", ROOT)
    assert model_options(smoke["models"][0], "post")["revision"] is None
    zoo = check_config(load_config_file(ROOT / "config" / "config.yaml"), "config.yaml", ROOT)
    assert model_options(zoo["models"][0], "post")["chat_template"] is False  # the zoo has no chat template


def test_model_entry_mistakes_are_one_line_each():
    def base_chat(c):
        c["models"][0]["base"]["chat_template"] = True

    assert "base models never use a chat template" in config_error(PAPER, base_chat)

    def no_id(c):
        del c["models"][0]["post"]["id"]

    assert "key 'models[0].post.id' is missing" in config_error(PAPER, no_id)

    def random_with_id(c):
        c["models"][0]["base"] = {"id": "owner/name"}

    assert "a random model is built locally" in config_error(SMOKE, random_with_id)

    def zoo_and_hub(c):
        c["models"][0]["zoo"] = {"coverage": 1.0, "format_exposure": 0.1, "size": "small"}

    assert "models[0]" in config_error(PAPER, zoo_and_hub)

    def mirror_without_folder(c):
        c["data"] = {"source": "mirror"}

    assert "data.mirror' is missing" in config_error(PAPER, mirror_without_folder)

    def zoo_models_on_real_tasks(c):
        c["tasks"] = ["gsm8k"]

    assert "has no world task" in config_error(
        load_config_file(ROOT / "config" / "config.yaml"), zoo_models_on_real_tasks
    )


def test_model_references_are_directories_or_hub_ids(tmp_path):
    assert check_reference("Qwen/Qwen2.5-7B") == "Qwen/Qwen2.5-7B"
    for bad in ("../../nowhere/at/all", "no-owner", "a/b/c", "https://x.invalid/m"):
        with pytest.raises(InputError, match="neither a local model directory nor a hub id"):
            check_reference(bad)
    with pytest.raises(InputError, match=r"no config\.json"):
        check_reference(str(tmp_path))
    with pytest.raises(InputError, match="unknown key 'dtypes'"):
        ModelOptions.from_dict({"dtypes": "bfloat16"})


def test_dtype_and_frozen_loading(tiny_model_dir):
    model, _ = load_model(tiny_model_dir, 1, ModelOptions(dtype="bfloat16"))
    assert model.dtype == torch.bfloat16 and not any(p.requires_grad for p in model.parameters())
    assert not model.training
    with pytest.raises(InputError, match="chat_template: false"):
        load_model(tiny_model_dir, 1, ModelOptions(chat_template=True))  # the zoo tokenizer has no template


@pytest.fixture(scope="module")
def chat_tokenizer():
    tokenizer = train_llama_style_tokenizer(["Question: what? Answer: yes"] * 10, 400)
    tokenizer.chat_template = "{{ bos_token }}" + CHATML
    return tokenizer


def test_chat_wrap_places_every_prompt_in_one_user_turn(chat_tokenizer, tasks):
    chat = ChatWrap.from_tokenizer(chat_tokenizer)
    assert chat.head == "<|im_start|>user\n"  # the template's BOS is dropped: the tokenizer adds its own
    assert chat.tail == "<|im_end|>\n<|im_start|>assistant\n"
    task = tasks["world_numeric"]
    prompts = build_prompts(task, "few_shot", [NUMERIC], [NUMERIC], chat=chat)
    assert prompts.prompts[0] == chat.wrap(
        task.instruction + "\n\n" + task.query(NUMERIC) + task.target(NUMERIC) + "\n\n" + task.query(NUMERIC)
    )
    assert prompts.prompts[0].startswith(prompts.shared_prefix) and prompts.shared_prefix.startswith(chat.head)
    ids = chat_tokenizer(prompts.prompts[0])["input_ids"]
    assert ids.count(chat_tokenizer.bos_token_id) == 1
    assert response_target(" #### 1432", chat) == "#### 1432" and response_target(" #### 1432", None) == " #### 1432"


def test_batches_back_off_on_out_of_memory_without_changing_results():
    seen = []

    def run(chunk):
        seen.append(len(chunk))
        if len(chunk) > 3:
            raise torch.OutOfMemoryError("CUDA out of memory")
        return [x * 2 for x in chunk]

    size = BatchSize(8)
    assert in_batches(list(range(10)), size, run, "test") == [x * 2 for x in range(10)]
    assert size.size == 2 and seen[:3] == [8, 4, 2]
    with pytest.raises(InputError, match="even at batch size 1"):
        in_batches([1], BatchSize(1), lambda chunk: (_ for _ in ()).throw(torch.OutOfMemoryError("oom")), "test")


def test_generation_backoff_gives_the_same_texts(tiny_model_dir, tasks, monkeypatch):
    from softeval.engine import generate as generation

    model, tokenizer = load_model(tiny_model_dir, 1)
    prompts = [
        tasks["world_numeric"].prompt({**NUMERIC, "question": f"In what year was X{i} founded?"}) for i in range(6)
    ]
    reference = generate_greedy(model, tokenizer, prompts, max_new_tokens=5, batch_size=1)
    real = generation._prefill
    prefilled = []

    def small_memory(model, rows, *args):
        if len(rows) > 2:
            raise torch.OutOfMemoryError("CUDA out of memory")
        prefilled.append(len(rows))
        return real(model, rows, *args)

    monkeypatch.setattr(generation, "_prefill", small_memory)
    size = BatchSize(6)
    assert generate_greedy(model, tokenizer, prompts, max_new_tokens=5, batch_size=size) == reference
    assert size.size == 1 and sum(prefilled) == len(prompts)  # 6 -> 3 -> 1, each row prefilled once


def test_tuning_backoff_accumulates_the_same_gradient(tiny_model_dir, tasks, monkeypatch):
    from softeval.engine.softprompt import training  # where tune's loss reads answer_logprobs

    task = tasks["world_numeric"]
    pairs = [
        (task.prompt({**NUMERIC, "question": f"In what year was X{i} founded?"}), f" #### {1400 + i}") for i in range(8)
    ]
    config = TuneSettings(steps=3, batch_size=8, snapshots=(), lr=0.1)
    model, tokenizer = load_model(tiny_model_dir, 1)
    reference = tune(model, tokenizer, pairs, config)
    real = training.answer_logprobs

    def small_memory(model, vectors, batch):
        if batch.input_ids.shape[0] > 2:
            raise torch.OutOfMemoryError("CUDA out of memory")
        return real(model, vectors, batch)

    monkeypatch.setattr(training, "answer_logprobs", small_memory)
    backed_off = tune(model, tokenizer, pairs, config)
    assert backed_off.losses == pytest.approx(reference.losses, abs=1e-5)
    assert torch.allclose(backed_off.vectors, reference.vectors, atol=1e-5)


def test_gradient_checkpointing_gives_the_same_training(tiny_model_dir, tasks):
    task = tasks["world_numeric"]
    pairs = [(task.prompt(NUMERIC), " #### 1432")] * 4
    plain = tune(*load_model(tiny_model_dir, 1), pairs, TuneSettings(steps=2, batch_size=4, snapshots=()))
    model, tokenizer = load_model(tiny_model_dir, 1)
    weights = {k: v.clone() for k, v in model.state_dict().items()}
    checked = tune(
        model, tokenizer, pairs, TuneSettings(steps=2, batch_size=4, snapshots=(), gradient_checkpointing=True)
    )
    assert checked.losses == pytest.approx(plain.losses, abs=1e-6)
    assert all(torch.equal(weights[k], v) for k, v in model.state_dict().items())


@pytest.fixture
def slots(tmp_path, monkeypatch):
    """Two GPUs as nvidia-smi lists them (a stand-in script on PATH), a lock folder of the test's."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    smi = bin_dir / "nvidia-smi"
    smi.write_text("#!/bin/sh\nprintf '0, GPU-aaaa\\n1, GPU-bbbb\\n'\n")
    smi.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv(gpu_slots.LOCK_DIR_ENV, str(tmp_path / "locks"))
    for name in ("CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "SLURM_JOB_ID", gpu_slots.SLOTS_ENV):
        monkeypatch.delenv(name, raising=False)
    yield tmp_path / "locks"
    for handle in gpu_slots._held:
        handle.close()
    gpu_slots._held.clear()


def test_gpu_slots_pin_each_job_to_its_own_gpu_by_uuid_in_pci_order(slots, monkeypatch):
    assert gpu_slots.acquire(1) == ["GPU-aaaa"]
    # vLLM reads each entry with int(): the index in PCI order, the lock still named by UUID
    assert os.environ["CUDA_VISIBLE_DEVICES"] == "0" and os.environ["CUDA_DEVICE_ORDER"] == "PCI_BUS_ID"
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES")
    assert gpu_slots.acquire(1) == ["GPU-bbbb"]
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES")
    with pytest.raises(InputError, match="no 1 free GPU slots"):
        gpu_slots.acquire(1, poll_seconds=0.05, timeout=0.2)
    with pytest.raises(InputError, match="needs 3 GPUs but this machine has 2"):
        gpu_slots.acquire(3)


def test_a_preset_cuda_visible_devices_narrows_the_choice_and_still_locks(slots, monkeypatch):
    """A container that shows GPU 1 to two jobs: the second waits instead of sharing it."""
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1")
    assert gpu_slots.acquire(1) == ["GPU-bbbb"] and os.environ["CUDA_VISIBLE_DEVICES"] == "1"
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "GPU-bbbb")  # named by UUID: the same GPU
    with pytest.raises(InputError, match="no 1 free GPU slots"):
        gpu_slots.acquire(1, poll_seconds=0.05, timeout=0.2)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")  # no GPU visible: the job runs on CPU
    assert gpu_slots.acquire(1) == []
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
    monkeypatch.setenv("SLURM_JOB_ID", "42")  # the scheduler chose: nothing locked, nothing changed
    assert gpu_slots.acquire(1) == [] and os.environ["CUDA_VISIBLE_DEVICES"] == "0"


def test_slot_list_by_index_and_the_lock_folder_is_shared_by_every_user(slots, monkeypatch):
    monkeypatch.setenv(gpu_slots.SLOTS_ENV, "1")
    old = os.umask(0o022)
    try:
        assert gpu_slots.acquire(1) == ["GPU-bbbb"]
    finally:
        os.umask(old)
    assert (slots / "GPU-bbbb.lock").stat().st_mode & 0o777 == 0o666
    monkeypatch.delenv(gpu_slots.LOCK_DIR_ENV)
    monkeypatch.setattr(gpu_slots.tempfile, "gettempdir", lambda: str(slots.parent / "tmp"))
    (slots.parent / "tmp").mkdir()
    folder = gpu_slots.lock_dir()
    assert folder.name == "softeval-gpu-slots" and str(os.getuid()) not in folder.name
    assert folder.stat().st_mode & 0o7777 == 0o1777


def test_a_killed_job_frees_its_gpu_slots(slots):
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time; from softeval.engine import gpu_slots; "
            "print(gpu_slots.acquire(2), flush=True); time.sleep(60)",
        ],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT / "workflow")},
    )
    try:
        assert holder.stdout.readline().strip() == "['GPU-aaaa', 'GPU-bbbb']"
        with pytest.raises(InputError):
            gpu_slots.acquire(1, poll_seconds=0.05, timeout=0.2)
    finally:
        holder.kill()
        holder.wait()
    start = time.monotonic()
    assert gpu_slots.acquire(2, poll_seconds=0.05, timeout=5) == ["GPU-aaaa", "GPU-bbbb"]
    assert time.monotonic() - start < 5
