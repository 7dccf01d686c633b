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

from softeval.schema import InputError


def _tasks(task_dir: str, names: list[str]) -> list[Any]:
    from softeval.tasks import load_task

    return [load_task(task_dir, name) for name in names]


def _data_dirs(data_root: str, names: list[str]) -> dict[str, Path]:
    return {name: Path(data_root) / name for name in names}


def cmd_check_config(args: argparse.Namespace) -> None:
    from softeval.config import check_config, load_config_file

    check_config(load_config_file(args.configfile), str(args.configfile), Path(args.workflow_root))
    print(f"{args.configfile}: valid")


def cmd_world(args: argparse.Namespace) -> None:
    from softeval.world import generate_world

    params = json.loads(args.params)
    generate_world(params["n_entities"], params["test_fraction"], params["seed"]).save(Path(args.out))


def cmd_prepare(args: argparse.Namespace) -> None:
    from softeval.data import prepare_task

    (task,) = _tasks(args.task_dir, [args.task])
    prepare_task(task, Path(args.world), Path(args.out))


def cmd_tokenizer(args: argparse.Namespace) -> None:
    from softeval.corpus import tokenizer_corpus
    from softeval.tokenizer import save_tokenizer, train_tokenizer
    from softeval.world import World

    params = json.loads(args.params)
    texts = tokenizer_corpus(World.load(Path(args.world)), _tasks(args.task_dir, args.tasks))
    save_tokenizer(train_tokenizer(texts, params["vocab_size"]), Path(args.out))


def cmd_pretrain(args: argparse.Namespace) -> None:
    from softeval.corpus import CorpusStyle, Recipe
    from softeval.io import check_slug
    from softeval.zoo import pretrain

    check_slug(args.name, "model")
    params = json.loads(args.params)
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
    from softeval.zoo import posttrain

    check_slug(args.name, "model")
    params = json.loads(args.params)
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


def cmd_probe(args: argparse.Namespace) -> None:
    from softeval.probe import probe_model

    params = json.loads(args.params)
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
    from softeval.report import write_table, zoo_table

    models = json.loads(args.params)["models"]
    write_table(zoo_table(models, Path(args.probes)), Path(args.out_csv), Path(args.out_md))


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
    p.add_argument("--params", required=True, help='JSON: {"n_entities", "test_fraction", "seed"}')
    p.add_argument("--out", required=True)

    p = add("prepare", cmd_prepare, "write a task's train/test splits")
    p.add_argument("--task", required=True)
    p.add_argument("--task-dir", required=True)
    p.add_argument("--world", required=True)
    p.add_argument("--out", required=True)

    p = add("tokenizer", cmd_tokenizer, "train the zoo tokenizer on the world's text")
    p.add_argument("--params", required=True, help='JSON: {"vocab_size"}')

    for name, func, help in (
        ("pretrain", cmd_pretrain, "pre-train one zoo base model"),
        ("posttrain", cmd_posttrain, "post-train (SFT) a base model into its twin"),
        ("probe", cmd_probe, "cloze knowledge and zero-shot format probes of a zoo model"),
    ):
        p = add(name, func, help)
        p.add_argument("--params", required=True, help="JSON settings (see the rule)")
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

    p = add("zoo-report", cmd_zoo_report, "ground-truth table of the zoo")
    p.add_argument("--params", required=True, help='JSON: {"models": [...]}')
    p.add_argument("--probes", required=True, help="folder holding <model>/<role>.json")
    p.add_argument("--out-csv", required=True)
    p.add_argument("--out-md", required=True)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        args.func(args)
    except InputError as err:
        print(f"softeval: error: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
