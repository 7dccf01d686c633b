"""The judge server's SLURM script starts on an 80 GB GPU and fits every judge prompt (issue 41, item 1).

Without --max-model-len, vLLM sizes Qwen3-32B's context at its full 40,960 positions, whose KV
cache is more than an 80 GB card keeps after the weights: the server refuses to start. These
checks read the script as sbatch runs it and redo the arithmetic its comment states.
"""

from __future__ import annotations

import re
import shlex

import pytest
import yaml

from softeval.data.tasks import load_task_file
from tests.conftest import ROOT

SBATCH = ROOT / "workflow" / "scripts" / "judge_server.sbatch"
PAPER = yaml.safe_load((ROOT / "config" / "paper.yaml").read_text())

GIB = 2**30
# Qwen3-32B (its published config.json): 32.8 B parameters, 64 layers, 8 KV heads of 128 dims
QWEN3_32B_PARAMS = 32.76e9
KV_BYTES_PER_TOKEN = 2 * 64 * 8 * 128 * 2  # K and V, layers, KV heads, head dim, bf16 bytes: 256 KiB
QWEN3_DEFAULT_CONTEXT = 40_960  # max_position_embeddings: vLLM's --max-model-len when none is given
CARD_80GB = 81_559 * 2**20  # an H100 80GB as nvidia-smi reports it (79.6 GiB; an A100 80GB has 81,920 MiB)
# what vLLM keeps besides weights and KV cache: the profiled activations of a full batch of
# prefill tokens, CUDA graphs, the CUDA context and libraries' workspaces
OVERHEAD = 4 * GIB
# judge prompt parts the task files do not bound (tokens of the judge's tokenizer)
QUESTION_MAX = 1024  # MATH-500's longest problems (an Asymptote figure) are well under it
GOLD_MAX = 512  # TriviaQA's gold: every alias, joined by " | "
CHAT_TURN = 32  # Qwen3's user turn, assistant header and empty thinking block
RETOKENIZE = 1.5  # a response's tokens in the evaluated model's tokenizer -> the judge's, at most


def vllm_serve() -> tuple[list[str], dict[str, str]]:
    """The `vllm serve` command line as the script runs it, and its variables' defaults."""
    text = SBATCH.read_text()
    defaults = dict(re.findall(r"^(\w+)=\$\{\w+:-([^}]*)\}$", text, re.M))
    joined = text.replace("\\\n", " ")
    line = next(line for line in joined.splitlines() if line.strip().startswith("vllm serve"))
    words = shlex.split(line.split("&")[0])
    return [re.sub(r"^\$\{?(\w+)\}?$", lambda m: defaults.get(m[1], m[0]), w) for w in words], defaults


def flag(words: list[str], name: str) -> str | None:
    return words[words.index(name) + 1] if name in words else None


def judge_prompt_need() -> tuple[int, str]:
    """Tokens of the longest judge prompt of config/paper.yaml, plus the verdict, and its task."""
    templates = yaml.safe_load((ROOT / "config" / "judges" / "default.yaml").read_text())
    bare = {  # a byte-level BPE (Qwen3's) never has more tokens than UTF-8 bytes
        kind: len(templates[kind]["prompt"].format(question="", gold="", format="", response="").encode())
        for kind in ("knowledge", "format")
    }
    need = []
    for name in PAPER["tasks"]:
        task = load_task_file(ROOT / "config" / "tasks" / f"{name}.yaml")
        if isinstance(task.max_new_tokens, int):
            budget = task.max_new_tokens
        elif task.max_new_tokens is None:
            budget = PAPER["evaluation"]["generate"]["max_new_tokens"]
        else:  # train_max / options_max: the longest target + 10 %, as the task's cost block estimates it
            budget = task.cost["budget_tokens"]
        response = int(budget * RETOKENIZE)
        fmt = bare["format"] + len(task.format_description.encode()) + response
        need.append((fmt, f"{name} format"))
        if not task.closed:  # closed tasks are judged for format only
            need.append((bare["knowledge"] + QUESTION_MAX + GOLD_MAX + response, f"{name} knowledge"))
    longest, where = max(need)
    return CHAT_TURN + longest + 1, where


def kv_room(utilization: float) -> float:
    """Bytes of KV cache vLLM can allocate for Qwen3-32B in bf16 on one 80 GB card."""
    return utilization * CARD_80GB - 2 * QWEN3_32B_PARAMS - OVERHEAD


def test_the_judge_server_sets_a_context_that_fits_every_judge_prompt():
    words, _ = vllm_serve()
    assert words[:3] == ["vllm", "serve", "Qwen/Qwen3-32B"]
    assert flag(words, "--max-model-len") is not None, "no --max-model-len: vLLM takes Qwen3-32B's 40,960"
    context = int(flag(words, "--max-model-len"))
    need, where = judge_prompt_need()
    assert where == "math500 knowledge" and need == 5580  # the number the script's comment states
    assert context >= need, (context, need, where)


def test_the_kv_cache_of_that_context_fits_on_an_80gb_card_and_the_default_does_not():
    words, _ = vllm_serve()
    utilization = float(flag(words, "--gpu-memory-utilization") or 0.9)
    context = int(flag(words, "--max-model-len") or QWEN3_DEFAULT_CONTEXT)
    room = kv_room(utilization)
    default_kv, kv = KV_BYTES_PER_TOKEN * QWEN3_DEFAULT_CONTEXT, KV_BYTES_PER_TOKEN * context
    assert default_kv / GIB == pytest.approx(10.0)  # 10.7 GB: the crash
    assert room < default_kv  # vLLM refuses to start without the flag
    assert kv <= room / 2, (context, room / GIB)  # room for two of the longest prompts at once
    assert kv / GIB == pytest.approx(2.0) and room / GIB == pytest.approx(6.7, abs=0.1)


def test_the_time_limit_and_the_urls_follow_the_servers():
    text = SBATCH.read_text()
    hours = int(re.search(r"^#SBATCH --time=(\d+):\d+:\d+$", text, re.M)[1])
    assert hours >= 24  # a day's judging at least; more servers (--array) share the rest
    assert "plan-cost" in text and "--array" in text and "SLURM_ARRAY_TASK_ID" in text


def test_every_profile_caps_the_judge_server_clients_within_the_clients_timeout():
    """judge_slots x concurrency requests wait in the server's queue; at ~20 a second they must
    be answered well within the client's timeout."""
    judge = PAPER["evaluation"]["judge"]
    concurrency, timeout = judge.get("concurrency", 8), judge.get("timeout", 60)
    for name in ("default", "multigpu", "slurm"):
        profile = yaml.safe_load((ROOT / "workflow" / "profiles" / name / "config.yaml").read_text())
        slots = dict(item.split("=") for item in profile["resources"])
        assert "judge_slots" in slots, name
        in_flight = int(slots["judge_slots"]) * concurrency
        assert in_flight / 20 <= timeout / 2, (name, in_flight)
