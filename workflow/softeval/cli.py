"""`softeval` command line: one subcommand per workflow step, usable without Snakemake.

Rules pass paths as flags and a job's settings as one JSON object (--settings; typed in
softeval.settings), so a rule's shell line shows exactly what made an artifact.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from softeval import settings as job_settings
from softeval.io import atomic_write_json, read_json
from softeval.schema import InputError
from softeval.settings import GenerateSettings, LoglikSettings


def _tasks(task_dir: str, names: list[str]) -> list[Any]:
    from softeval.data.tasks import load_task

    return [load_task(task_dir, name) for name in names]


def _task_files(paths: list[str]) -> list[Any]:
    """Tasks from their files' paths (what the workflow's rules pass: a task is its file)."""
    from softeval.data.tasks import load_task_file

    return [load_task_file(path) for path in paths]


def _data_dirs(data_root: str, tasks: list[Any]) -> dict[str, Path]:
    return {task.name: Path(data_root) / task.name for task in tasks}


def cmd_check_config(args: argparse.Namespace) -> None:
    from softeval.config import load_config_file
    from softeval.preflight import preflight

    preflight(load_config_file(args.configfile), str(args.configfile), Path(args.workflow_root))
    print(f"{args.configfile}: valid")


def cmd_plan_cost(args: argparse.Namespace) -> None:
    from softeval.config import ConfigSources, check_config, task_dir
    from softeval.plan_cost import cost_table, plan_cost
    from softeval.preflight import one_line

    root = Path(args.workflow_root)
    # what the Snakefile loads first, then each --configfile over it, as Snakemake merges them
    sources = ConfigSources.read([root / "config" / "config.yaml", *args.configfile])
    with one_line(", ".join(args.configfile)):
        config = check_config(sources.merged(), sources, root)
        plan = plan_cost(
            config,
            task_dir(config, root),
            gpu=args.gpu,
            mfu=args.mfu,
            bandwidth_efficiency=args.bandwidth_efficiency,
            vllm_concurrency=args.vllm_concurrency,
            job_start_s=args.job_start_s,
            pilot=Path(args.pilot) if args.pilot else None,
        )
    print(cost_table(plan), end="")


def cmd_world(args: argparse.Namespace) -> None:
    from softeval.data.world import generate_world

    settings = job_settings.WorldSettings.parse(args.settings, "world")
    generate_world(settings.n_entities, settings.test_fraction, settings.seed).save(Path(args.out))


def cmd_prepare(args: argparse.Namespace) -> None:
    from softeval.data.splits import prepare_task

    (task,) = _task_files([args.task])
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

    settings = job_settings.RandomModelSettings.parse(args.settings, "random-model")
    build_random_model(settings, Path(args.tokenizer), Path(args.out), args.role, args.chat_template)


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

    settings = job_settings.TokenizerSettings.parse(args.settings, "tokenizer")
    texts = tokenizer_corpus(World.load(Path(args.world)), _task_files(args.tasks))
    save_tokenizer(train_tokenizer(texts, settings.vocab_size), Path(args.out))


def cmd_pretrain(args: argparse.Namespace) -> None:
    from softeval.io import check_slug
    from softeval.zoo.corpus import CorpusStyle, Recipe
    from softeval.zoo.training import pretrain

    check_slug(args.name, "model")
    settings = job_settings.PretrainSettings.parse(args.settings, "pretrain")
    pretrain(
        name=args.name,
        world_path=Path(args.world),
        tasks=_task_files(args.tasks),
        tokenizer_dir=Path(args.tokenizer),
        recipe=Recipe(**settings.recipe),
        style=CorpusStyle(**settings.corpus),
        size=settings.size,
        training=settings.pretrain,
        seed=settings.seed,
        threads=args.threads,
        out_dir=Path(args.out),
    )


def cmd_posttrain(args: argparse.Namespace) -> None:
    from softeval.io import check_slug
    from softeval.zoo.training import posttrain

    check_slug(args.name, "model")
    settings = job_settings.PosttrainSettings.parse(args.settings, "posttrain")
    tasks = _task_files(args.tasks)
    posttrain(
        name=args.name,
        base_dir=Path(args.base),
        tasks=tasks,
        data_dirs=_data_dirs(args.data, tasks),
        training=settings.posttrain,
        seed=settings.seed,
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

    if not (len(args.model) == len(args.out_json) == len(args.out_examples)):
        raise InputError("probe: give as many --out-json and --out-examples files as --model folders, in order")
    settings = job_settings.ProbeSettings.parse(args.settings, "probe")
    tasks = _task_files(args.tasks)
    data_dirs = _data_dirs(args.data, tasks)
    for model, out_json, out_examples in zip(args.model, args.out_json, args.out_examples, strict=True):
        probe_model(
            model_dir=Path(model),
            world_path=Path(args.world),
            tasks=tasks,
            data_dirs=data_dirs,
            max_new_tokens=settings.max_new_tokens,
            batch_size=settings.batch_size,
            threads=args.threads,
            out_json=Path(out_json),
            knowledge=settings.knowledge,
            out_examples=Path(out_examples),
        )


def cmd_zoo_report(args: argparse.Namespace) -> None:
    from softeval.zoo.table import write_table, zoo_table

    settings = job_settings.ZooReportSettings.parse(args.settings, "zoo-report")
    write_table(zoo_table(settings.models, Path(args.probes)), Path(args.out_csv), Path(args.out_md))


def _task(args: argparse.Namespace) -> Any:
    (task,) = _task_files([args.task])
    return task


def cmd_tune(args: argparse.Namespace) -> None:
    from softeval.engine.softprompt import TuneSettings
    from softeval.jobs.tune import TuneUnit, run_tunes

    if not (len(args.task) == len(args.data) == len(args.out_dir)):
        raise InputError("tune: give as many --data and --out-dir folders as --task files, in the same order")
    config = TuneSettings.parse(args.settings, "tune")
    units = [
        TuneUnit(task, Path(data), Path(out))
        for task, data, out in zip(_task_files(args.task), args.data, args.out_dir, strict=True)
    ]
    run_tunes(model=args.model, model_options=_model_options(args), units=units, config=config, threads=args.threads)


def _method_job(args: argparse.Namespace) -> dict[str, Any]:
    """The arguments generate and loglik share: one output per soft-prompt step, else one."""
    kind = GenerateSettings if args.command == "generate" else LoglikSettings
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
        "settings": kind.parse(args.settings, args.command),
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

    generate_settings = job_settings.GenerateSettings.parse(args.generate_settings, "evaluate --generate-settings")
    loglik_settings = (
        job_settings.LoglikSettings.parse(args.loglik_settings, "evaluate --loglik-settings") if args.logliks else None
    )
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
        generate_settings=generate_settings,
        loglik_settings=loglik_settings,
        threads=args.threads,
    )


def cmd_judge(args: argparse.Namespace) -> None:
    from softeval.jobs.judge import run_judge

    run_judge(
        task=_task(args),
        data_dir=Path(args.data),
        settings=job_settings.JudgeSettings.parse(args.settings, "judge run"),
        generations=[Path(p) for p in args.generations],
        logliks=[Path(p) for p in args.logliks],
        outs=[Path(p) for p in args.out],
    )


def cmd_judge_validate(args: argparse.Namespace) -> None:
    import pandas as pd

    from softeval.analysis.publish import write_table
    from softeval.judges.factory import make_judge
    from softeval.judges.validation import LABELS, load_validation, validate_judge, validation_tasks

    rows = load_validation(Path(args.validation))
    settings = job_settings.JudgeSettings.parse(args.settings, "judge validate")
    summary = validate_judge(make_judge(settings), validation_tasks(rows, args.task_dir), rows)
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

    settings = job_settings.AggregateSettings.parse(args.settings, "aggregate")
    totals = {}
    for path in args.meta:
        meta = read_json(Path(path))
        totals[meta["task"]] = meta.get("test_total", meta["counts"]["test"])
    table = aggregate_scores(
        Path(args.scores_root), [Path(p) for p in args.scores], settings.bootstrap, settings.seed, totals
    )
    write_summary(table, Path(args.out_csv), Path(args.out_parquet))


def cmd_tables(args: argparse.Namespace) -> None:
    from softeval.jobs.report import run_tables

    run_tables(
        summary_path=Path(args.summary),
        scores_root=Path(args.scores_root),
        loglik_root=Path(args.loglik_root),
        zoo_csv=Path(args.truth) if args.truth else None,
        settings=job_settings.AnalysisSettings.parse(args.settings, args.command),
        out_dir=Path(args.out_dir),
    )


def cmd_figures(args: argparse.Namespace) -> None:
    from softeval.jobs.report import run_figures

    run_figures(
        summary_path=Path(args.summary),
        swap_csv=Path(args.swap),
        gap_csv=Path(args.gap),
        settings=job_settings.AnalysisSettings.parse(args.settings, args.command),
        out_dir=Path(args.out_dir),
    )


def cmd_claims(args: argparse.Namespace) -> None:
    from softeval.jobs.report import run_claims

    run_claims(
        summary_path=Path(args.summary),
        swap_csv=Path(args.swap),
        scores_root=Path(args.scores_root),
        loglik_root=Path(args.loglik_root),
        settings=job_settings.AnalysisSettings.parse(args.settings, args.command),
        out_stem=Path(args.out),
        published=Path(args.published) if args.published else None,
    )


def cmd_timings(args: argparse.Namespace) -> None:
    from softeval.analysis.timings import write_timings

    patterns = {str(k): str(v) for k, v in args.patterns.items()}
    upstream = {str(k): [str(r) for r in v] for k, v in args.upstream.items()}
    write_timings([Path(p) for p in args.benchmarks], patterns, upstream, Path(args.out_csv), Path(args.out_md))


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
            f"{args.results} does not reproduce {args.check} (see above; `softeval review` and docs/reproducing.md "
            "say what can differ and why)"
        )


def cmd_verify(args: argparse.Namespace) -> None:
    from softeval.analysis import verify

    record_path = Path(args.published)
    record = verify.read_record(record_path)
    rows = verify.verify(Path(args.results), record)
    print(verify.report(rows, record_path, record), end="")
    if not verify.passed(rows):  # exit 1: a check failed (2 is kept for bad input, as every command)
        print(
            f"softeval verify: {args.results} does not reproduce {record_path}: the rows marked **no** above "
            "(docs/reproducing.md says what must hold and why)",
            file=sys.stderr,
        )
        raise SystemExit(1)


def cmd_publish_ranges(args: argparse.Namespace) -> None:
    from softeval.analysis import verify

    runs: dict[str, Path] = {}
    for item in args.run:
        label, sep, path = item.partition("=")
        if not sep or not label or not path:
            raise InputError(f"--run {item!r}: write it as LABEL=RESULTS_DIR (e.g. 'seed 0=/tmp/s0/results')")
        runs[label] = Path(path)
    record = verify.build_record(runs, Path(args.bytes_from), args.config, args.note)
    verify.write_record(record, Path(args.out))
    print(f"{len(record['figures'])} figures from {len(runs)} runs, {len(record['bytes'])} byte files: {args.out}")


def cmd_claims_explain(args: argparse.Namespace) -> None:
    from softeval.analysis import explain

    results = Path(args.results)
    claims_csv = Path(args.claims) if args.claims else results / "tables" / "claims.csv"
    if not claims_csv.is_file():
        raise InputError(f"{claims_csv}: claims table not found; run `softeval claims` (or the workflow) first")
    table = explain.compare(results, args.claim, claims_csv, metric=args.metric, reference=args.reference_method)
    if table.empty:
        raise InputError(f"claims-explain: claim {args.claim} has no part recomputed here (is it a claim of this run?)")
    print(f"claim {args.claim}, recomputed by {explain.__file__} (json, pathlib, numpy, pandas only):")
    print(table.to_string(index=False, float_format=lambda v: f"{v:+.6f}"))
    if not table["match"].all():
        raise InputError(f"claims-explain: {int((~table['match']).sum())} part(s) differ from {claims_csv}")


def cmd_review(args: argparse.Namespace) -> None:
    from softeval.analysis.review import FILTERS, list_units, show_flips, show_unit

    results = Path(args.results)
    tasks = Path(args.tasks) if args.tasks else None
    chosen = [name for name in FILTERS if getattr(args, name.replace("-", "_"), False)]
    which = chosen[0] if chosen else "all"
    compare = args.vs is not None or args.vs_step is not None
    if len(chosen) > 1 or (chosen and compare):
        raise InputError(f"review: one filter at a time, and none with --vs/--vs-step (given: {', '.join(chosen)})")
    if args.metric is not None and not compare:
        raise InputError("--metric is the metric of --vs/--vs-step flips; add --vs METHOD or --vs-step N")
    if args.model and args.task and args.method:
        unit = (results, args.model, args.role, args.task, args.method, args.step)
        if compare:
            print(show_flips(*unit, args.vs, args.vs_step, args.metric or "strict", args.limit, tasks))
        else:
            print(show_unit(*unit, which, args.limit, tasks))
        return
    if compare or chosen:
        raise InputError("--vs, --vs-step and the example filters show one unit: pass --model, --task and --method")
    units = list_units(results, model=args.model, role=args.role, task=args.task, method=args.method, step=args.step)
    print(units.to_string(index=False, float_format=lambda x: f"{x:.3f}"))


def json_object(text: str) -> dict[str, Any]:
    """A job's --settings: one JSON object, or argparse's one-line error (the rule passes it)."""
    try:
        value = json.loads(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(f"not valid JSON ({err}): {text[:80]!r}") from None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError(f"must be a JSON object {{...}}, not {type(value).__name__}")
    return value


def add_settings(
    p: argparse.ArgumentParser,
    kind: type[job_settings.JobSettings],
    flag: str = "--settings",
    default: str | None = None,
) -> None:
    """The job's settings: one JSON object, which the job parses into `kind` (its help lists the keys)."""
    keys = ", ".join(f.name for f in dataclasses.fields(kind) if f.name != "given")
    section = f"; config section {kind.SECTION}" if kind.SECTION else ""
    p.add_argument(flag, type=json_object, required=default is None, default=default, help=f"JSON {{{keys}}}{section}")


def add_model(p: argparse.ArgumentParser) -> None:
    """The model a job loads, how, and on what (tune, generate, loglik, evaluate)."""
    group = p.add_argument_group("model")
    group.add_argument("--model", required=True, help="Hugging Face model directory or hub id")
    group.add_argument(
        "--model-options",
        type=json_object,
        default="{}",
        help='JSON: {"revision", "dtype", "device_map", "trust_remote_code", "chat_template"}',
    )
    group.add_argument("--gpus", type=int, default=0, help="GPUs the job holds (a GPU-slot lock pins them)")
    group.add_argument("--threads", type=int, default=1)


def add_task(p: argparse.ArgumentParser, data_help: str = "the task's folder of prepared splits") -> None:
    """One task: its file, and its prepared splits."""
    group = p.add_argument_group("task")
    group.add_argument("--task", required=True, help="the task file (config/tasks/<name>.yaml)")
    group.add_argument("--data", required=True, help=data_help)


def add_zoo_inputs(p: argparse.ArgumentParser, world: bool, data: bool, threads: bool = True) -> None:
    """What a zoo job builds from: the world tasks (and the world, their splits), with its threads."""
    group = p.add_argument_group("zoo inputs")
    group.add_argument("--tasks", nargs="+", required=True, help="the world tasks' files")
    if world:
        group.add_argument("--world", required=True)
    if data:
        group.add_argument("--data", required=True, help="folder holding <task>/train.jsonl and test.jsonl")
    if threads:
        group.add_argument("--threads", type=int, default=1)


def add_soft_prompt_steps(p: argparse.ArgumentParser) -> None:
    group = p.add_argument_group("soft prompt")
    group.add_argument("--steps", type=int, nargs="*", default=[], help="soft_prompt: snapshot steps")
    group.add_argument("--prompts", nargs="*", default=[], help="soft_prompt: one prompt file per step")


def add_analysis(p: argparse.ArgumentParser, scores: bool) -> None:
    """What tables, figures and claims read: the aggregated scores (and per-example files)."""
    p.add_argument("--summary", required=True, help="results/tables/scores.parquet")
    add_settings(p, job_settings.AnalysisSettings)
    if scores:
        p.add_argument("--scores-root", required=True, help="results/scores (per-example verdicts, for the bootstrap)")
        p.add_argument("--loglik-root", default="results/loglik", help="option log-likelihoods (closed tasks' choices)")


METHOD_CHOICES = ["zero_shot", "few_shot", "soft_prompt"]


Adder = Callable[[str, Callable[[argparse.Namespace], None], str], argparse.ArgumentParser]


def build_parser() -> argparse.ArgumentParser:
    """One subcommand per workflow job, grouped by stage; shared options come from the add_* groups."""
    parser = argparse.ArgumentParser(prog="softeval", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)

    def add(name: str, func: Callable[[argparse.Namespace], None], help: str) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help)
        p.set_defaults(func=func)
        return p

    from softeval import runner

    p = add("run", runner.command, "rank base checkpoints: the workflow in a folder of its own, then the leaderboard")
    runner.add_arguments(p)
    p = add("leaderboard", runner.leaderboard_command, "a run's leaderboard; --metric ranks it again by another metric")
    runner.add_leaderboard_arguments(p)
    for stage in (data_commands, zoo_commands, evaluation_commands, analysis_commands):
        stage(add)
    return parser


def data_commands(add: Adder) -> None:
    p = add("check-config", cmd_check_config, "validate a config file and its task files")
    p.add_argument("configfile")
    p.add_argument("--workflow-root", default=".", help="folder that task_dir is relative to")

    p = add("plan-cost", cmd_plan_cost, "GPU-hours of a config's jobs (HF and vLLM backends), before running")
    p.add_argument("--configfile", nargs="+", required=True, help="laid over config/config.yaml, as snakemake does")
    p.add_argument("--workflow-root", default=".", help="folder holding config/ (and task_dir)")
    p.add_argument("--gpu", default="h100-sxm", help="a100-80gb, h100-sxm or h200")
    p.add_argument("--mfu", type=float, default=0.4, help="share of peak FLOP/s reached by prompts and tuning")
    p.add_argument("--bandwidth-efficiency", type=float, default=0.6, help="share of peak memory bandwidth in decoding")
    p.add_argument("--vllm-concurrency", type=int, default=256, help="sequences vLLM keeps in flight")
    p.add_argument("--job-start-s", type=float, default=60.0, help="seconds to start a GPU job, model load included")
    p.add_argument("--pilot", help="a pilot run's results/ folder: prompt lengths measured there replace the estimates")

    p = add("world", cmd_world, "generate the synthetic world")
    add_settings(p, job_settings.WorldSettings)
    p.add_argument("--out", required=True)

    p = add("prepare", cmd_prepare, "write a task's train/test/few_shot splits")
    p.add_argument("--task", required=True, help="the task file (config/tasks/<name>.yaml)")
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
    add_settings(p, job_settings.RandomModelSettings)
    p.add_argument("--tokenizer", required=True)
    p.add_argument("--role", choices=["base", "post"], required=True)
    p.add_argument("--chat-template", action="store_true", help="give the tokenizer a ChatML chat template")
    p.add_argument("--out", required=True)

    p = add("mirror", cmd_mirror, "download real tasks' splits into a local mirror (needs internet)")
    p.add_argument("--task", nargs="+", required=True)
    p.add_argument("--task-dir", default="config/tasks")
    p.add_argument("--out", required=True, help="mirror folder; writes <out>/<task>/<role>.parquet + MIRROR.json")


def zoo_commands(add: Adder) -> None:
    p = add("tokenizer", cmd_tokenizer, "train the zoo tokenizer on the world's text")
    add_settings(p, job_settings.TokenizerSettings)
    add_zoo_inputs(p, world=True, data=False, threads=False)
    p.add_argument("--out", required=True)

    p = add("pretrain", cmd_pretrain, "pre-train one zoo base model")
    add_settings(p, job_settings.PretrainSettings)
    add_zoo_inputs(p, world=True, data=False)
    p.add_argument("--name", required=True)
    p.add_argument("--tokenizer", required=True)
    p.add_argument("--out", required=True)

    p = add("posttrain", cmd_posttrain, "post-train (SFT) a base model into its twin")
    add_settings(p, job_settings.PosttrainSettings)
    add_zoo_inputs(p, world=False, data=True)
    p.add_argument("--name", required=True)
    p.add_argument("--base", required=True)
    p.add_argument("--out", required=True)

    p = add("probe", cmd_probe, "cloze knowledge and zero-shot format probes of zoo models, one after another")
    add_settings(p, job_settings.ProbeSettings)
    add_zoo_inputs(p, world=True, data=True)
    p.add_argument("--model", nargs="+", required=True, help="one or more model folders")
    p.add_argument("--out-json", nargs="+", required=True, help="a summary per model")
    p.add_argument("--out-examples", nargs="+", required=True, help="every probe question per model")


def evaluation_commands(add: Adder) -> None:
    p = add("tune", cmd_tune, "train a soft prompt per task for one model, loading it once")
    add_model(p)
    group = p.add_argument_group("tasks")
    group.add_argument("--task", nargs="+", required=True, help="one or more task files")
    group.add_argument("--data", nargs="+", required=True, help="each task's folder of prepared splits")
    add_settings(p, job_settings.TuneSettings)
    p.add_argument(
        "--out-dir", nargs="+", required=True, help="per task: prompt.safetensors, snapshots, curve, meta, peft/"
    )

    for name, func, help, kind in (
        ("generate", cmd_generate, "greedy responses to a task's test split under one method", GenerateSettings),
        ("loglik", cmd_loglik, "option log-likelihoods of a closed task under one method", LoglikSettings),
    ):
        p = add(name, func, help)
        add_model(p)
        add_task(p)
        add_settings(p, kind)
        p.add_argument("--method", required=True, choices=METHOD_CHOICES)
        add_soft_prompt_steps(p)
        p.add_argument("--out", nargs="+", required=True, help="JSONL output(s), one per step for soft_prompt")

    p = add("evaluate", cmd_evaluate, "every output of one model on one task: responses and option log-likelihoods")
    add_model(p)
    add_task(p)
    add_settings(p, job_settings.GenerateSettings, flag="--generate-settings")
    add_settings(p, job_settings.LoglikSettings, flag="--loglik-settings", default="{}")
    p.add_argument("--methods", nargs="+", required=True, choices=METHOD_CHOICES)
    add_soft_prompt_steps(p)
    p.add_argument("--generations", nargs="+", required=True, help="JSONL: one per method, or per step")
    p.add_argument("--logliks", nargs="*", default=[], help="closed tasks: JSONL, one per --generations file")

    judge = add("judge", lambda args: None, "judge generations (run) or check a judge (validate)")
    judge_sub = judge.add_subparsers(dest="judge_command", required=True)
    p = judge_sub.add_parser("run", help="per-example verdicts for a unit's generations")
    p.set_defaults(func=cmd_judge)
    add_task(p)
    add_settings(p, job_settings.JudgeSettings)
    p.add_argument("--generations", nargs="+", required=True)
    p.add_argument("--logliks", nargs="*", default=[], help="closed tasks: one per generation file")
    p.add_argument("--out", nargs="+", required=True)
    p.add_argument(
        "--gpus",
        type=int,
        default=0,
        help="GPUs the job holds (locked GPU slots): a judge that loads its model",
    )
    p = judge_sub.add_parser("validate", help="accuracy and Cohen's kappa of a judge on hand-labelled examples")
    p.set_defaults(func=cmd_judge_validate)
    add_settings(p, job_settings.JudgeSettings, default='{"name": "rule"}')
    p.add_argument("--validation", default="config/judges/validation.jsonl")
    p.add_argument("--task-dir", default="config/tasks")
    p.add_argument("--out", help="output stem: writes <out>.csv, .md, .tex and .json")
    p.add_argument(
        "--gpus",
        type=int,
        default=0,
        help="GPUs the job holds (locked GPU slots): a judge that loads its model",
    )


def analysis_commands(add: Adder) -> None:
    from softeval.jobs import export

    p = add("export", export.run, "lm-eval results files per model; TensorBoard / W&B (optional)")
    export.add_arguments(p)

    p = add("aggregate", cmd_aggregate, "one row per model, role, task, method and step")
    add_settings(p, job_settings.AggregateSettings)
    p.add_argument("--scores-root", required=True, help="results/scores")
    p.add_argument("--scores", nargs="+", required=True)
    p.add_argument("--meta", nargs="*", default=[], help="results/data/<task>/meta.json (test split sizes)")
    p.add_argument("--out-csv", required=True)
    p.add_argument("--out-parquet", required=True)

    p = add("tables", cmd_tables, "swap distance, score gap and knowledge/format tables (CSV, Markdown, LaTeX)")
    add_analysis(p, scores=True)
    p.add_argument("--truth", help="the zoo table (results/tables/zoo.csv): each model's knowledge")
    p.add_argument("--out-dir", required=True)
    p = add("figures", cmd_figures, "figures of the paper's claims (PNG + PDF)")
    add_analysis(p, scores=False)
    p.add_argument("--swap", required=True, help="results/tables/swap_distance.csv")
    p.add_argument("--gap", required=True, help="results/tables/score_gap.csv")
    p.add_argument("--out-dir", required=True)
    p = add("claims", cmd_claims, "check the paper's claims on this run")
    add_analysis(p, scores=True)
    p.add_argument("--swap", required=True, help="results/tables/swap_distance.csv")
    p.add_argument("--out", required=True, help="output stem: writes <out>.csv, .md, .tex")
    p.add_argument("--published", help="a published record: its runs' verdicts are quoted in claims.md")
    p = add("claims-explain", cmd_claims_explain, "recompute a claim's estimates from the score files with pandas")
    p.add_argument(
        "claim", type=int, help="the claim's number (every claim; claim 1's saturation order is a step, not recomputed)"
    )
    p.add_argument("--results", default="results")
    p.add_argument("--claims", help="the claims table to compare with (default: <results>/tables/claims.csv)")
    p.add_argument("--metric", default="strict", choices=["strict", "knowledge", "format"])
    p.add_argument(
        "--reference-method",
        choices=["zero_shot", "few_shot", "soft_prompt"],
        help="claims 3-4: the post-trained ranking's method (analysis.reference_method; default as the config's)",
    )

    p = add("timings", cmd_timings, "seconds and memory per rule, and the critical path, from benchmark files")
    p.add_argument("--patterns", type=json_object, required=True, help="JSON: {rule: benchmark path pattern}")
    p.add_argument("--upstream", type=json_object, required=True, help="JSON: {rule: [its upstream rules]}")
    p.add_argument("--benchmarks", nargs="*", default=[], help="the jobs' Snakemake benchmark files")
    p.add_argument("--out-csv", required=True)
    p.add_argument("--out-md", required=True)

    p = add("manifest", cmd_manifest, "write or check the sha256 manifest of a run (zoo, prompts, tables)")
    p.add_argument("--results", default="results")
    which = p.add_mutually_exclusive_group(required=True)
    which.add_argument("--write", metavar="FILE", help="list the run's files and their sha256 in FILE")
    which.add_argument("--check", metavar="FILE", help="compare the run with FILE (exit 2 on any difference)")

    p = add("verify", cmd_verify, "check a run against a published record: bytes, verdicts, figure ranges")
    p.add_argument("--results", default="results")
    p.add_argument("--published", default="config/published/default.yaml", help="the published record (YAML)")

    p = add("publish-ranges", cmd_publish_ranges, "write a published record from several runs (seeds, machines)")
    p.add_argument("--run", action="append", required=True, metavar="LABEL=RESULTS_DIR", help="one run (repeat)")
    p.add_argument("--bytes-from", required=True, help="the run whose machine-independent files are published")
    p.add_argument("--config", required=True, help="the config the runs used (recorded, not read)")
    p.add_argument("--note", default="", help="how the runs were made (recorded)")
    p.add_argument("--out", required=True)

    p = add("review", cmd_review, "list evaluated units, or show the examples behind one (model, task, method)")
    p.add_argument("--results", default="results")
    p.add_argument("--model")
    p.add_argument("--role", default="base", choices=["base", "post"])
    p.add_argument("--task")
    # no argparse choices: an unknown method is one error line listing the methods the run evaluated
    p.add_argument("--method", help=f"one of {', '.join(METHOD_CHOICES)}")
    p.add_argument("--step", type=int, help="soft_prompt: the tuning step (default: the final evaluated step)")
    p.add_argument("--vs", metavar="METHOD", help="list the examples that flip against this method's unit")
    p.add_argument("--vs-step", type=int, help="the step of the --vs unit (soft_prompt; default: the final step)")
    p.add_argument("--metric", choices=["knowledge", "format", "strict"], help="metric of the flips (default strict)")
    p.add_argument("--tasks", help="folder of task files, for the format rule (default: config/tasks)")
    p.add_argument("--limit", type=int, default=20, help="examples to print (with --vs: per direction)")
    for name in ("wrong-format", "wrong-knowledge", "right-knowledge-wrong-format", "not-strict"):
        p.add_argument(f"--{name}", action="store_true", help=f"only examples that are {name.replace('-', ' ')}")

    p = add("zoo-report", cmd_zoo_report, "ground-truth table of the zoo")
    add_settings(p, job_settings.ZooReportSettings)
    p.add_argument("--probes", required=True, help="folder holding <model>/<role>.json")
    p.add_argument("--out-csv", required=True)
    p.add_argument("--out-md", required=True)


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
