"""`softeval` command line: one subcommand per workflow step, usable without Snakemake.

Rules pass paths as flags and settings as one JSON object (--params), so a rule's shell
line shows exactly what made an artifact.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from softeval.io import atomic_write_json, read_json
from softeval.schema import InputError


def _tasks(task_dir: str, names: list[str]) -> list[Any]:
    from softeval.data.tasks import load_task

    return [load_task(task_dir, name) for name in names]


def _data_dirs(data_root: str, names: list[str]) -> dict[str, Path]:
    return {name: Path(data_root) / name for name in names}


def cmd_check_config(args: argparse.Namespace) -> None:
    from softeval.config import check_config, load_config_file

    check_config(load_config_file(args.configfile), str(args.configfile), Path(args.workflow_root))
    print(f"{args.configfile}: valid")


def cmd_world(args: argparse.Namespace) -> None:
    from softeval.data.world import generate_world

    params = args.params
    generate_world(params["n_entities"], params["test_fraction"], params["seed"]).save(Path(args.out))


def cmd_prepare(args: argparse.Namespace) -> None:
    from softeval.data.splits import prepare_task

    (task,) = _tasks(args.task_dir, [args.task])
    world = Path(args.world) if args.world else None
    mirror = Path(args.mirror) if args.mirror else None
    prepare_task(task, Path(args.out), world, args.source, mirror, args.test_limit, args.seed)


def cmd_convert_gguf(args: argparse.Namespace) -> None:
    from softeval.engine.gguf import convert_gguf, locate_gguf

    try:
        spec = json.loads(args.gguf) if args.gguf.lstrip().startswith("{") else {"path": args.gguf}
    except ValueError as err:
        raise InputError(f"--gguf: neither a file path nor a JSON object ({err})") from None
    record = convert_gguf(locate_gguf(spec, args.root), Path(args.out))
    print(f"{args.out}: float32 model from {record['gguf']} (sha256 {record['sha256'][:16]}...)")


def cmd_random_tokenizer(args: argparse.Namespace) -> None:
    from softeval.zoo.random_model import task_texts, train_llama_style_tokenizer
    from softeval.zoo.tokenizer import save_tokenizer

    tokenizer = train_llama_style_tokenizer(task_texts(Path(p) for p in args.data), args.vocab_size, args.seed)
    save_tokenizer(tokenizer, Path(args.out))


def cmd_random_model(args: argparse.Namespace) -> None:
    from softeval.zoo.random_model import build_random_model

    build_random_model(args.params, Path(args.tokenizer), Path(args.out), args.role, args.chat_template)


def cmd_mirror(args: argparse.Namespace) -> None:
    from softeval.data.sources import write_mirror

    for task in _tasks(args.task_dir, args.task):
        record = write_mirror(task, Path(args.out))
        for role, info in record.items():
            print(f"{task.name} {role}: {info['rows']} rows from {info['path']} at commit {info['commit']}")


def cmd_tokenizer(args: argparse.Namespace) -> None:
    from softeval.data.world import World
    from softeval.zoo.corpus import tokenizer_corpus
    from softeval.zoo.tokenizer import save_tokenizer, train_tokenizer

    params = args.params
    texts = tokenizer_corpus(World.load(Path(args.world)), _tasks(args.task_dir, args.tasks))
    save_tokenizer(train_tokenizer(texts, params["vocab_size"]), Path(args.out))


def cmd_pretrain(args: argparse.Namespace) -> None:
    from softeval.io import check_slug
    from softeval.zoo.corpus import CorpusStyle, Recipe
    from softeval.zoo.training import pretrain

    check_slug(args.name, "model")
    params = args.params
    pretrain(
        name=args.name,
        world_path=Path(args.world),
        tasks=_tasks(args.task_dir, args.tasks),
        tokenizer_dir=Path(args.tokenizer),
        recipe=Recipe(**params["recipe"]),
        style=CorpusStyle(**params["corpus"]),
        size=params["size"],
        hyper=params["pretrain"],
        seed=params["seed"],
        threads=args.threads,
        out_dir=Path(args.out),
    )


def cmd_posttrain(args: argparse.Namespace) -> None:
    from softeval.io import check_slug
    from softeval.zoo.training import posttrain

    check_slug(args.name, "model")
    params = args.params
    posttrain(
        name=args.name,
        base_dir=Path(args.base),
        tasks=_tasks(args.task_dir, args.tasks),
        data_dirs=_data_dirs(args.data, args.tasks),
        hyper=params["posttrain"],
        seed=params["seed"],
        threads=args.threads,
        out_dir=Path(args.out),
    )


def _model_options(args: argparse.Namespace) -> Any:
    from softeval.engine.models import ModelOptions

    try:
        return ModelOptions.from_dict(args.model_options)
    except (ValueError, TypeError) as err:
        raise InputError(f"--model-options: not a JSON object of model options ({err})") from None


def cmd_probe(args: argparse.Namespace) -> None:
    from softeval.zoo.probe import probe_model

    params = args.params
    probe_model(
        model_dir=Path(args.model),
        world_path=Path(args.world),
        tasks=_tasks(args.task_dir, args.tasks),
        data_dirs=_data_dirs(args.data, args.tasks),
        max_new_tokens=params["max_new_tokens"],
        batch_size=params["batch_size"],
        threads=args.threads,
        out_json=Path(args.out_json),
        out_examples=Path(args.out_examples),
    )


def cmd_zoo_report(args: argparse.Namespace) -> None:
    from softeval.zoo.table import write_table, zoo_table

    models = args.params["models"]
    write_table(zoo_table(models, Path(args.probes)), Path(args.out_csv), Path(args.out_md))


def _task(args: argparse.Namespace) -> Any:
    from softeval.data.tasks import load_task

    return load_task(args.task_dir, args.task)


def cmd_tune(args: argparse.Namespace) -> None:
    from softeval.engine.softprompt import TuneConfig
    from softeval.jobs.tune import run_tune

    params = args.params
    check_job_params("tune", params)
    config = TuneConfig(**{**params, "snapshots": tuple(params.get("snapshots", ()))})
    run_tune(
        model=args.model,
        model_options=_model_options(args),
        task=_task(args),
        data_dir=Path(args.data),
        config=config,
        threads=args.threads,
        out_dir=Path(args.out_dir),
    )


def _method_job(args: argparse.Namespace) -> dict[str, Any]:
    """The arguments generate and loglik share: one output per soft-prompt step, else one."""
    check_job_params(args.command, args.params)
    if args.method == "soft_prompt":
        if not (len(args.steps) == len(args.prompts) == len(args.out)):
            raise InputError("soft_prompt: give as many --steps and --prompts as --out files")
        outs: dict[int | None, Path] = {step: Path(o) for step, o in zip(args.steps, args.out, strict=True)}
        prompt_files = {step: Path(p) for step, p in zip(args.steps, args.prompts, strict=True)}
    else:
        if len(args.out) != 1 or args.prompts:
            raise InputError(f"{args.method}: give one --out file and no --prompts")
        outs, prompt_files = {None: Path(args.out[0])}, {}
    return {
        "model": args.model,
        "model_options": _model_options(args),
        "task": _task(args),
        "data_dir": Path(args.data),
        "method": args.method,
        "prompt_files": prompt_files,
        "outs": outs,
        "settings": args.params,
        "threads": args.threads,
    }


def cmd_generate(args: argparse.Namespace) -> None:
    from softeval.jobs.generate import run_generate

    run_generate(**_method_job(args))


def cmd_loglik(args: argparse.Namespace) -> None:
    from softeval.jobs.loglik import run_loglik

    run_loglik(**_method_job(args))


def cmd_evaluate(args: argparse.Namespace) -> None:
    from softeval.jobs.evaluate import MethodOutputs, run_evaluate

    check_job_params("generate", args.generate_params)
    if args.logliks:
        check_job_params("loglik", args.loglik_params)
    if len(set(args.methods)) != len(args.methods):
        raise InputError(f"evaluate: --methods names a method twice: {' '.join(args.methods)}")
    if args.logliks and len(args.logliks) != len(args.generations):
        raise InputError("evaluate: give as many --logliks as --generations (or none, for an open task)")
    logliks = [Path(p) for p in args.logliks] or [None] * len(args.generations)
    if "soft_prompt" in args.methods:
        if args.methods != ["soft_prompt"] or not (len(args.steps) == len(args.prompts) == len(args.generations)):
            raise InputError(
                "evaluate --methods soft_prompt (alone): give as many --steps and --prompts as --generations"
            )
        keys: list[int | None] = list(args.steps)
        methods = [
            MethodOutputs(
                "soft_prompt",
                dict(zip(keys, map(Path, args.generations), strict=True)),
                {k: p for k, p in zip(keys, logliks, strict=True) if p is not None},
                {step: Path(p) for step, p in zip(args.steps, args.prompts, strict=True)},
            )
        ]
    else:
        if len(args.generations) != len(args.methods) or args.prompts or args.steps:
            raise InputError("evaluate: give one --generations file per method, and no --steps or --prompts")
        methods = [
            MethodOutputs(m, {None: Path(g)}, {None: ll} if ll is not None else {}, {})
            for m, g, ll in zip(args.methods, args.generations, logliks, strict=True)
        ]
    run_evaluate(
        model=args.model,
        model_options=_model_options(args),
        task=_task(args),
        data_dir=Path(args.data),
        methods=methods,
        generate_settings=args.generate_params,
        loglik_settings=args.loglik_params,
        threads=args.threads,
    )


def cmd_judge(args: argparse.Namespace) -> None:
    from softeval.jobs.judge import run_judge

    run_judge(
        task=_task(args),
        data_dir=Path(args.data),
        judge_name=args.params,
        generations=[Path(p) for p in args.generations],
        logliks=[Path(p) for p in args.logliks],
        outs=[Path(p) for p in args.out],
    )


def cmd_judge_validate(args: argparse.Namespace) -> None:
    import pandas as pd

    from softeval.analysis.publish import write_table
    from softeval.jobs.judge import make_judge
    from softeval.judges.validation import LABELS, load_validation, validate_judge, validation_tasks

    rows = load_validation(Path(args.validation))
    summary = validate_judge(make_judge(args.params), validation_tasks(rows, args.task_dir), rows)
    table = pd.DataFrame(
        [{"judge": summary["judge"], "label": label, "n": summary["n"], **summary[label]} for label in LABELS]
    )
    print(table.to_string(index=False, float_format=lambda x: f"{x:.3f}"))
    for row in summary["disagreements"]:
        print(
            f"disagrees: {row['id']} ({row['category']}): "
            + ", ".join(f"{label} judge={row[label + '_judge']} gold={row[label + '_gold']}" for label in LABELS)
        )
    if args.out:
        write_table(table, Path(args.out), "Agreement of the judge with the hand-labelled validation set")
        atomic_write_json(Path(args.out).with_suffix(".json"), summary)


def cmd_aggregate(args: argparse.Namespace) -> None:
    from softeval.analysis.aggregate import aggregate_scores, write_summary

    params = args.params
    totals = {}
    for path in args.meta:
        meta = read_json(Path(path))
        totals[meta["task"]] = meta.get("test_total", meta["counts"]["test"])
    table = aggregate_scores(
        Path(args.scores_root), [Path(p) for p in args.scores], params["bootstrap"], params["seed"], totals
    )
    write_summary(table, Path(args.out_csv), Path(args.out_parquet))


def cmd_tables(args: argparse.Namespace) -> None:
    from softeval.jobs.tables import run_tables

    run_tables(
        summary_path=Path(args.summary),
        scores_root=Path(args.scores_root),
        loglik_root=Path(args.loglik_root),
        zoo_csv=Path(args.truth) if args.truth else None,
        params=args.params,
        out_dir=Path(args.out_dir),
    )


def cmd_figures(args: argparse.Namespace) -> None:
    from softeval.jobs.tables import run_figures

    run_figures(
        summary_path=Path(args.summary),
        swap_csv=Path(args.swap),
        gap_csv=Path(args.gap),
        params=args.params,
        out_dir=Path(args.out_dir),
    )


def cmd_claims(args: argparse.Namespace) -> None:
    from softeval.jobs.tables import run_claims

    run_claims(
        summary_path=Path(args.summary),
        swap_csv=Path(args.swap),
        scores_root=Path(args.scores_root),
        loglik_root=Path(args.loglik_root),
        params=args.params,
        out_stem=Path(args.out),
    )


def cmd_timings(args: argparse.Namespace) -> None:
    from softeval.analysis.timings import write_timings

    patterns = {str(k): str(v) for k, v in args.patterns.items()}
    write_timings([Path(p) for p in args.benchmarks], patterns, Path(args.out_csv), Path(args.out_md))


def cmd_manifest(args: argparse.Namespace) -> None:
    from softeval.analysis import manifest

    actual = manifest.build(Path(args.results))
    if args.write:
        manifest.write(actual, Path(args.write))
        print(f"{len(actual)} files listed in {args.write}")
        return
    comparison = manifest.compare(manifest.read(Path(args.check)), actual)
    print(comparison.summary())
    if not comparison.ok:
        raise InputError(
            f"{args.results} does not reproduce {args.check} (see above; `softeval review` and the README's "
            "'Reproducible on another machine' say what can differ and why)"
        )


def cmd_review(args: argparse.Namespace) -> None:
    from softeval.analysis.review import FILTERS, format_example, list_units, unit_examples

    results = Path(args.results)
    which = next((name for name in FILTERS if getattr(args, name.replace("-", "_"), False)), "all")
    if args.model and args.task and args.method:
        examples = unit_examples(results, args.model, args.role, args.task, args.method, args.step, which)
        for example in examples[: args.limit]:
            print(format_example(example), end="\n\n")
        print(f"{len(examples)} example(s) match ({which}); showed {min(len(examples), args.limit)}")
        return
    units = list_units(results, model=args.model, role=args.role, task=args.task, method=args.method, step=args.step)
    print(units.to_string(index=False, float_format=lambda x: f"{x:.3f}"))


def json_object(text: str) -> dict[str, Any]:
    """A job's --params: one JSON object, or argparse's one-line error (the rule passes it)."""
    try:
        value = json.loads(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(f"not valid JSON ({err}): {text[:80]!r}") from None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError(f"must be a JSON object {{...}}, not {type(value).__name__}")
    return value


# A job's --params: the config section they come from, the keys the rule adds to it, and the
# keys the job reads without a default.
JOB_PARAMS = {
    "generate": (
        "generate",
        ("few_shot_k", "seed"),
        ("few_shot_k", "seed", "max_new_tokens", "batch_size", "chunk_size"),
    ),
    "loglik": ("loglik", ("few_shot_k", "seed"), ("few_shot_k", "seed", "batch_size", "chunk_size")),
    "tune": ("tune", ("seed",), ()),
}


def check_job_params(command: str, params: dict[str, Any]) -> None:
    """Every key of a job's --params is one the config schema knows (a typo is an error, not a
    setting silently ignored), and the ones the job reads without a default are there."""
    from softeval.schema import load_schema

    section, added, needed = JOB_PARAMS[command]
    known = set(load_schema("config")["properties"]["evaluation"]["properties"][section]["properties"]) | set(added)
    unknown = sorted(set(params) - known)
    if unknown:
        raise InputError(
            f"{command} --params: unknown key {unknown[0]!r}; use {', '.join(sorted(known))} "
            f"(evaluation.{section} in the config)"
        )
    missing = [key for key in needed if key not in params]
    if missing:
        raise InputError(f"{command} --params: key {missing[0]!r} is missing; the rule passes evaluation.{section}")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="softeval", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)

    def add(name: str, func: Callable[[argparse.Namespace], None], help: str) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help)
        p.set_defaults(func=func)
        return p

    p = add("check-config", cmd_check_config, "validate a config file and its task files")
    p.add_argument("configfile")
    p.add_argument("--workflow-root", default=".", help="folder that task_dir is relative to")

    p = add("world", cmd_world, "generate the synthetic world")
    p.add_argument("--params", type=json_object, required=True, help='JSON: {"n_entities", "test_fraction", "seed"}')
    p.add_argument("--out", required=True)

    p = add("prepare", cmd_prepare, "write a task's train/test/few_shot splits")
    p.add_argument("--task", required=True)
    p.add_argument("--task-dir", required=True)
    p.add_argument("--world", help="the world file (world tasks)")
    p.add_argument("--source", choices=["hub", "mirror"], default="hub", help="real tasks: hub or local mirror")
    p.add_argument("--mirror", help="the local mirror folder (--source mirror)")
    p.add_argument("--test-limit", type=int, help="pilot run: keep a seeded sample of this many test examples")
    p.add_argument("--seed", type=int, default=0, help="seed of the pilot sample")
    p.add_argument("--out", required=True)

    p = add("convert-gguf", cmd_convert_gguf, "convert a GGUF checkpoint to a float32 Hugging Face directory")
    p.add_argument("--gguf", required=True, help='a .gguf file, or JSON {"path"} / {"package", "file"}')
    p.add_argument("--root", default=".", help="folder a relative path is relative to")
    p.add_argument("--out", required=True)

    p = add("random-tokenizer", cmd_random_tokenizer, "a Llama-style BPE tokenizer of real vocabulary size")
    p.add_argument("--data", nargs="+", required=True, help="prepared split files (their text trains it)")
    p.add_argument("--vocab-size", type=int, required=True)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", required=True)

    p = add("random-model", cmd_random_model, "a randomly initialised Llama-style model (smoke runs)")
    p.add_argument("--params", type=json_object, required=True, help='JSON: {"layers", "width", "heads", "seed"}')
    p.add_argument("--tokenizer", required=True)
    p.add_argument("--role", choices=["base", "post"], required=True)
    p.add_argument("--chat-template", action="store_true", help="give the tokenizer a ChatML chat template")
    p.add_argument("--out", required=True)

    p = add("mirror", cmd_mirror, "download real tasks' splits into a local mirror (needs internet)")
    p.add_argument("--task", nargs="+", required=True)
    p.add_argument("--task-dir", default="config/tasks")
    p.add_argument("--out", required=True, help="mirror folder; writes <out>/<task>/<role>.parquet + MIRROR.json")

    p = add("tokenizer", cmd_tokenizer, "train the zoo tokenizer on the world's text")
    p.add_argument("--params", type=json_object, required=True, help='JSON: {"vocab_size"}')

    for name, func, help in (
        ("pretrain", cmd_pretrain, "pre-train one zoo base model"),
        ("posttrain", cmd_posttrain, "post-train (SFT) a base model into its twin"),
        ("probe", cmd_probe, "cloze knowledge and zero-shot format probes of a zoo model"),
    ):
        p = add(name, func, help)
        p.add_argument("--params", type=json_object, required=True, help="JSON settings (see the rule)")
        p.add_argument("--threads", type=int, default=1)
    for p in (sub.choices["tokenizer"], sub.choices["pretrain"], sub.choices["posttrain"], sub.choices["probe"]):
        p.add_argument("--task-dir", required=True)
        p.add_argument("--tasks", nargs="+", required=True)
    for p in (sub.choices["tokenizer"], sub.choices["pretrain"], sub.choices["probe"]):
        p.add_argument("--world", required=True)
    for p in (sub.choices["posttrain"], sub.choices["probe"]):
        p.add_argument("--data", required=True, help="folder holding <task>/train.jsonl and test.jsonl")
    for p in (sub.choices["tokenizer"], sub.choices["pretrain"], sub.choices["posttrain"]):
        p.add_argument("--out", required=True)
    sub.choices["pretrain"].add_argument("--name", required=True)
    sub.choices["pretrain"].add_argument("--tokenizer", required=True)
    sub.choices["posttrain"].add_argument("--name", required=True)
    sub.choices["posttrain"].add_argument("--base", required=True)
    sub.choices["probe"].add_argument("--model", required=True)
    sub.choices["probe"].add_argument("--out-json", required=True)
    sub.choices["probe"].add_argument("--out-examples", required=True)

    p = add("tune", cmd_tune, "train a soft prompt for one model and task")
    p.add_argument("--out-dir", required=True, help="folder for prompt.safetensors, snapshots, curve, meta, peft/")
    for name, func, help in (
        ("generate", cmd_generate, "greedy responses to a task's test split under one method"),
        ("loglik", cmd_loglik, "option log-likelihoods of a closed task under one method"),
    ):
        p = add(name, func, help)
        p.add_argument("--method", required=True, choices=["zero_shot", "few_shot", "soft_prompt"])
        p.add_argument("--steps", type=int, nargs="*", default=[], help="soft_prompt: snapshot steps")
        p.add_argument("--prompts", nargs="*", default=[], help="soft_prompt: one prompt file per step")
        p.add_argument("--out", nargs="+", required=True, help="JSONL output(s), one per step for soft_prompt")
    p = add("evaluate", cmd_evaluate, "every output of one model on one task: responses and option log-likelihoods")
    p.add_argument("--methods", nargs="+", required=True, choices=["zero_shot", "few_shot", "soft_prompt"])
    p.add_argument("--steps", type=int, nargs="*", default=[], help="soft_prompt: snapshot steps")
    p.add_argument("--prompts", nargs="*", default=[], help="soft_prompt: one prompt file per step")
    p.add_argument("--generations", nargs="+", required=True, help="JSONL: one per method, or per step")
    p.add_argument("--logliks", nargs="*", default=[], help="closed tasks: JSONL, one per --generations file")
    p.add_argument("--generate-params", type=json_object, required=True, help="JSON: evaluation.generate")
    p.add_argument("--loglik-params", type=json_object, default="{}", help="JSON: evaluation.loglik")
    for name in ("tune", "generate", "loglik", "evaluate"):
        p = sub.choices[name]
        p.add_argument("--model", required=True, help="Hugging Face model directory or hub id")
        p.add_argument(
            "--model-options",
            type=json_object,
            default="{}",
            help='JSON: {"revision", "dtype", "device_map", "trust_remote_code", "chat_template"}',
        )
        p.add_argument("--gpus", type=int, default=0, help="GPUs the job holds (a GPU-slot lock pins them)")
        if name != "evaluate":
            p.add_argument("--params", type=json_object, required=True, help="JSON settings (see the rule)")
        p.add_argument("--threads", type=int, default=1)
    judge = add("judge", lambda args: None, "judge generations (run) or check a judge (validate)")
    judge_sub = judge.add_subparsers(dest="judge_command", required=True)
    p = judge_sub.add_parser("run", help="per-example verdicts for a unit's generations")
    p.set_defaults(func=cmd_judge)
    p.add_argument("--params", type=json_object, required=True, help='JSON: {"name": judge}')
    p.add_argument("--generations", nargs="+", required=True)
    p.add_argument("--logliks", nargs="*", default=[], help="closed tasks: one per generation file")
    p.add_argument("--out", nargs="+", required=True)
    for p in (*(sub.choices[n] for n in ("tune", "generate", "loglik", "evaluate")), judge_sub.choices["run"]):
        p.add_argument("--task", required=True)
        p.add_argument("--task-dir", required=True)
        p.add_argument("--data", required=True, help="the task's folder of prepared splits")
    p = judge_sub.add_parser("validate", help="accuracy and Cohen's kappa of a judge on hand-labelled examples")
    p.set_defaults(func=cmd_judge_validate)
    p.add_argument("--params", type=json_object, default='{"name": "rule"}', help='JSON: {"name": judge}')
    p.add_argument("--validation", default="config/judges/validation.jsonl")
    p.add_argument("--task-dir", default="config/tasks")
    p.add_argument("--out", help="output stem: writes <out>.csv, .md, .tex and .json")

    p = add("aggregate", cmd_aggregate, "one row per model, role, task, method and step")
    p.add_argument("--scores-root", required=True, help="results/scores")
    p.add_argument("--scores", nargs="+", required=True)
    p.add_argument("--meta", nargs="*", default=[], help="results/data/<task>/meta.json (test split sizes)")
    p.add_argument("--params", type=json_object, required=True, help='JSON: {"bootstrap": resamples, "seed"}')
    p.add_argument("--out-csv", required=True)
    p.add_argument("--out-parquet", required=True)

    p = add("tables", cmd_tables, "swap distance, score gap and knowledge/format tables (CSV, Markdown, LaTeX)")
    p.add_argument("--out-dir", required=True)
    p = add("figures", cmd_figures, "figures of the paper's claims (PNG + PDF)")
    p.add_argument("--swap", required=True, help="results/tables/swap_distance.csv")
    p.add_argument("--gap", required=True, help="results/tables/score_gap.csv")
    p.add_argument("--out-dir", required=True)
    p = add("claims", cmd_claims, "check the paper's five claims on this run")
    p.add_argument("--swap", required=True, help="results/tables/swap_distance.csv")
    p.add_argument("--out", required=True, help="output stem: writes <out>.csv, .md, .tex")
    for name in ("tables", "claims"):
        p = sub.choices[name]
        p.add_argument("--scores-root", required=True, help="results/scores (per-example verdicts, for the bootstrap)")
        p.add_argument("--loglik-root", default="results/loglik", help="option log-likelihoods (closed tasks' choices)")
    sub.choices["tables"].add_argument("--truth", help="the zoo table (results/tables/zoo.csv): each model's knowledge")
    for name in ("tables", "figures", "claims"):
        sub.choices[name].add_argument("--summary", required=True, help="results/tables/scores.parquet")
        sub.choices[name].add_argument(
            "--params",
            type=json_object,
            required=True,
            help='JSON: {"final_step", "first_step", "reference_method", "bootstrap", "seed"}',
        )

    p = add("timings", cmd_timings, "seconds and memory per rule, and the critical path, from benchmark files")
    p.add_argument("--patterns", type=json_object, required=True, help="JSON: {rule: benchmark path pattern}")
    p.add_argument("--benchmarks", nargs="*", default=[], help="the jobs' Snakemake benchmark files")
    p.add_argument("--out-csv", required=True)
    p.add_argument("--out-md", required=True)

    p = add("manifest", cmd_manifest, "write or check the sha256 manifest of a run (zoo, prompts, tables)")
    p.add_argument("--results", default="results")
    which = p.add_mutually_exclusive_group(required=True)
    which.add_argument("--write", metavar="FILE", help="list the run's files and their sha256 in FILE")
    which.add_argument("--check", metavar="FILE", help="compare the run with FILE (exit 2 on any difference)")

    p = add("review", cmd_review, "list evaluated units, or show the examples behind one (model, task, method)")
    p.add_argument("--results", default="results")
    p.add_argument("--model")
    p.add_argument("--role", default="base", choices=["base", "post"])
    p.add_argument("--task")
    p.add_argument("--method", choices=["zero_shot", "few_shot", "soft_prompt"])
    p.add_argument("--step", type=int, help="soft_prompt: the tuning step")
    p.add_argument("--limit", type=int, default=20, help="examples to print")
    for name in ("wrong-format", "wrong-knowledge", "right-knowledge-wrong-format", "not-strict"):
        p.add_argument(f"--{name}", action="store_true", help=f"only examples that are {name.replace('-', ' ')}")

    p = add("zoo-report", cmd_zoo_report, "ground-truth table of the zoo")
    p.add_argument("--params", type=json_object, required=True, help='JSON: {"models": [...]}')
    p.add_argument("--probes", required=True, help="folder holding <model>/<role>.json")
    p.add_argument("--out-csv", required=True)
    p.add_argument("--out-md", required=True)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        if getattr(args, "gpus", 0):
            from softeval.engine.gpu_slots import acquire

            acquire(args.gpus)  # before anything touches CUDA
        args.func(args)
    except InputError as err:
        print(f"softeval: error: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
