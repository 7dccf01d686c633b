"""`softeval run` and `softeval.run()`: rank base checkpoints with one command, from any folder.

The command builds a config in memory from its flags (written to <out>/config.yaml, the run's
provenance), checks it the way the workflow will (the whole plan, before any job), and runs the
package's own Snakefile with <out> as the working directory, so results land in <out>/results
and a rerun with one more model runs only that model's jobs. `snakemake --cores all` in a
checkout and `softeval run` share one Snakefile and one plan (softeval.plan). The command's
flags are softeval.commands.run's (and `softeval leaderboard`'s, softeval.commands.leaderboard's).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
from collections.abc import Sequence
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from softeval.names import BASE, METHODS, POST

if TYPE_CHECKING:  # the config and plan load when used (`softeval leaderboard` needs neither)
    from softeval.config import ConfigSources
    from softeval.plan import Plan

from softeval.io import atomic_write_text
from softeval.progress import Progress
from softeval.schema import InputError
from softeval.shipped import workflow_root

SLUG = re.compile(r"[a-z0-9][a-z0-9_-]{0,63}")
LEADERBOARD = Path("results") / "tables" / "leaderboard"


def slug(text: str) -> str:
    """A model name from a path or hub id: its last part, lower case, other characters as '-'."""
    name = re.sub(r"[^a-z0-9_-]+", "-", Path(text.rstrip("/")).name.lower().removesuffix(".gguf")).strip("-_")
    return name[:64] or "model"


def model_entry(spec: str) -> dict[str, Any]:
    """One --models value as a config model entry.

    PATH or OWNER/NAME: a base checkpoint (a local directory or a hub id); FILE.gguf or
    gguf:PACKAGE/FILE: a GGUF checkpoint; random:SEED: a random Llama-style model (smoke runs).
    Each is a base model only (no post-trained twin: a --configfile entry can give one).
    NAME=SPEC names the model (default: the last part of the path or id).
    """
    name, sep, ref = spec.partition("=")
    if not sep:
        name, ref = "", spec
    if not ref:
        raise InputError(f"--models {spec!r}: nothing after '='; write NAME=PATH_OR_HUB_ID")
    if ref.startswith("random:"):
        seed = ref.removeprefix("random:") or "0"
        if not seed.isdigit():
            raise InputError(f"--models {spec!r}: random:SEED needs a whole number, e.g. random:1")
        entry: dict[str, Any] = {"name": name or f"random-{seed}", "random": {"seed": int(seed)}, POST: False}
    elif ref.startswith("gguf:"):
        package, _, file = ref.removeprefix("gguf:").partition("/")
        if not package or not file:
            raise InputError(f"--models {spec!r}: write gguf:PACKAGE/FILE (a .gguf file an installed package ships)")
        entry = {"name": name or slug(file), "gguf": {"package": package, "file": file}, POST: False}
    elif ref.endswith(".gguf"):
        entry = {"name": name or slug(ref), "gguf": {"path": str(Path(ref).expanduser().resolve())}, POST: False}
    else:
        local = Path(ref).expanduser()
        is_local = local.exists() or ref.startswith((".", "/", "~")) or ref.count("/") != 1
        entry = {"name": name or slug(ref), BASE: {"id": str(local.resolve()) if is_local else ref}}
    if not SLUG.fullmatch(entry["name"]):
        raise InputError(
            f"--models {spec!r}: model name {entry['name']!r} is not a slug (a-z, 0-9, '-', '_'); "
            "name it with NAME=PATH_OR_HUB_ID"
        )
    return entry


def set_key(config: dict[str, Any], assignment: str) -> None:
    """--set evaluation.tune.steps=4: a dotted key and a YAML value."""
    key, sep, value = assignment.partition("=")
    if not sep or not key:
        raise InputError(f"--set {assignment!r}: write KEY=VALUE, e.g. --set evaluation.tune.steps=4")
    try:
        parsed = yaml.safe_load(value)
    except yaml.YAMLError:
        raise InputError(f"--set {assignment!r}: the value is not valid YAML; quote it") from None
    node = config
    parts = key.split(".")
    for part in parts[:-1]:
        child = node.setdefault(part, {})
        if not isinstance(child, dict):
            raise InputError(f"--set {assignment!r}: {part!r} is not a section; check the key against config/README.md")
        node = child
    node[parts[-1]] = parsed


@cache
def run_sources() -> type[ConfigSources]:
    """ConfigSources for the layers of a `softeval run` config: an error about no one key names
    the command."""
    from softeval.config import ConfigSources

    class RunSources(ConfigSources):
        def __str__(self) -> str:
            return "softeval run"

    return RunSources


def build_sources(
    models: Sequence[str] = (),
    tasks: Sequence[str] = (),
    *,
    methods: Sequence[str] | None = None,
    limit: int | None = None,
    mirror: str | Path | None = None,
    task_dir: str | Path | None = None,
    metric: str | None = None,
    settings: Sequence[str] = (),
    base: dict[str, Any] | None = None,
    base_name: str = "--configfile",
) -> ConfigSources:
    """The run's config as layers, each named after what set it (a config file, then each flag),
    so an error line names the flag to fix: `--set analysis.bootstrap=50: key 'analysis.bootstrap' ...`."""
    layers: list[tuple[str, dict[str, Any]]] = [(base_name, dict(base))] if base else []
    if models:
        layers.append(("--models", {"models": [model_entry(spec) for spec in models]}))
    if tasks:
        layers.append(("--tasks", {"tasks": list(tasks)}))
    if methods:
        unknown = [m for m in methods if m not in METHODS]
        if unknown:
            raise InputError(f"--methods: {unknown[0]!r} is not a method; use {', '.join(METHODS)}")
        layers.append(("--methods", {"evaluation": {"methods": list(methods)}}))
    if limit is not None:
        layers.append((f"--limit {limit}", {"evaluation": {"test_limit": limit}}))
    if mirror is not None:
        layers.append(("--mirror", {"data": {"source": "mirror", "mirror": str(Path(mirror).resolve())}}))
    if task_dir is not None:
        layers.append(("--task-dir", {"task_dir": str(Path(task_dir).resolve())}))
    if metric is not None:
        layers.append(("--metric", {"analysis": {"metric": metric}}))
    for assignment in settings:
        layer: dict[str, Any] = {}
        set_key(layer, assignment)
        layers.append((f"--set {assignment}", layer))
    sources = run_sources()(layers)
    config = sources.merged()
    tune = config.get("evaluation", {}).get("tune", {})
    if "steps" in tune and "snapshots" not in tune:  # the default snapshots, up to the step count asked for
        snapshots = [s for s in (0, 10, 20, 40, 80) if s < tune["steps"]]
        layers.append(("--set evaluation.tune.steps", {"evaluation": {"tune": {"snapshots": snapshots}}}))
        sources = run_sources()(layers)
    if not config.get("models"):
        raise InputError("no models: pass --models PATH_OR_HUB_ID ... (or --configfile with a models list)")
    if not config.get("tasks"):
        raise InputError("no tasks: pass --tasks NAME,... (e.g. gsm8k,mmlu,triviaqa)")
    return sources


def build_config(*args: Any, **kwargs: Any) -> dict[str, Any]:
    """The run's config: a config file's contents (`base`) with the flags laid over it."""
    return build_sources(*args, **kwargs).merged()


def prepare(config: dict[str, Any], out: Path, source: str | ConfigSources = "softeval run") -> Plan:
    """Check the config as the workflow will (every job's plan built), then write <out>/config.yaml."""
    from softeval.preflight import preflight

    root = workflow_root()
    written = yaml.safe_dump(config, sort_keys=False)
    checked = yaml.safe_load(written)  # check a copy: the file keeps what the user asked for, not the defaults
    plan = preflight(checked, source, root, out)
    out.mkdir(parents=True, exist_ok=True)
    path = out / "config.yaml"
    if not path.is_file() or path.read_text(encoding="utf-8") != written:
        atomic_write_text(path, written)
    return plan


def snakemake_command(out: Path, cores: int | str, profile: str | None, extra: Sequence[str]) -> list[str]:
    root = workflow_root()
    command = [sys.executable, "-m", "snakemake", "--snakefile", str(root / "Snakefile"), "--directory", str(out)]
    command += ["--configfile", str(out / "config.yaml"), "--replace-workflow-config", "--cores", str(cores)]
    if profile:
        shipped = root / "workflow" / "profiles" / profile
        command += ["--profile", str(shipped if shipped.is_dir() else Path(profile).resolve())]
    return [*command, "--rerun-incomplete", *extra]


def execute(command: list[str], out: Path, show: str = "progress") -> int:
    """Run Snakemake; its whole output goes to <out>/logs/softeval-run.log. show: 'progress' (a
    status line with an ETA), 'all' (Snakemake's output as it comes) or 'none'."""
    log_path = out / "logs" / "softeval-run.log"
    log_path.parent.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ)
    # jobs run `python -m softeval`: the interpreter that runs this command, and its scripts
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    progress = Progress(out)
    tty = sys.stderr.isatty()
    stop = threading.Event()

    def report() -> None:
        last = ""
        while not stop.wait(1.0 if tty else 30.0):
            line = progress.line()
            if tty:
                print(
                    "\r\033[K" + line[: os.get_terminal_size(sys.stderr.fileno()).columns - 1], end="", file=sys.stderr
                )
            elif line != last:
                print(line, file=sys.stderr, flush=True)
            last = line

    with open(log_path, "w", encoding="utf-8") as log:
        process = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, bufsize=1
        )
        reporter = threading.Thread(target=report, daemon=True)
        if show == "progress":
            reporter.start()
        assert process.stdout is not None
        for line in process.stdout:
            log.write(line)
            progress.feed(line.rstrip("\n"))
            if show == "all":
                print(line, end="", file=sys.stderr)
        code = process.wait()
        stop.set()
    if show == "progress":
        reporter.join()
        print(("\r\033[K" if tty else "") + progress.line(), file=sys.stderr)
    if code:
        errors = [line for line in log_path.read_text(encoding="utf-8").splitlines() if line.strip()]
        start = next((i for i, line in enumerate(errors) if line.startswith(("Error", "WorkflowError"))), None)
        shown = errors[start : start + 25] if start is not None else errors[-25:]
        print("\n".join(shown), file=sys.stderr)
        print(f"softeval run: snakemake failed (exit {code}); its whole output: {log_path}", file=sys.stderr)
    return code


def run(
    models: Sequence[str] = (),
    tasks: Sequence[str] | str = (),
    *,
    methods: Sequence[str] | str | None = None,
    limit: int | None = None,
    out: str | Path = "softeval-results",
    cores: int | str = "all",
    profile: str | None = None,
    mirror: str | Path | None = None,
    task_dir: str | Path | None = None,
    metric: str | None = None,
    settings: Sequence[str] = (),
    configfile: str | Path | None = None,
    snakemake_args: Sequence[str] = (),
    show: str = "progress",
    tensorboard: str | Path | None = None,
    wandb_project: str | None = None,
):
    """Rank base checkpoints: run the workflow in `out` and return its leaderboard (a DataFrame).

    >>> import softeval
    >>> board = softeval.run(["./ckpt-a", "./ckpt-b"], "gsm8k,mmlu", limit=100, out="runs/first")

    Raises InputError (one line naming the flag or key and the fix) before any job runs when the
    input is wrong, and RuntimeError when a job fails (its log is named).
    """
    import pandas as pd

    from softeval.config import load_config_file

    out = Path(out).resolve()
    base = load_config_file(configfile) if configfile else None
    sources = build_sources(
        models,
        split_list(tasks),
        methods=split_list(methods) if methods else None,
        limit=limit,
        mirror=mirror,
        task_dir=task_dir,
        metric=metric,
        settings=settings,
        base=base,
        base_name=str(configfile),
    )
    prepare(sources.merged(), out, sources)
    code = execute(snakemake_command(out, cores, profile, snakemake_args), out, show)
    if code:
        raise RuntimeError(f"the workflow failed (exit {code}); see {out / 'logs' / 'softeval-run.log'}")
    if {"-n", "--dry-run", "--dryrun"} & set(snakemake_args):
        return None
    if tensorboard or wandb_project:
        track(out / "results", tensorboard, wandb_project)
    return pd.read_csv(out / LEADERBOARD.with_suffix(".csv"))


def track(results: Path, tensorboard: str | Path | None, wandb_project: str | None) -> None:
    """The run's scores, leaderboard and tuning curves to TensorBoard event files and/or a W&B run
    (offline unless WANDB_MODE=online; `wandb sync` uploads it later): softeval[tracking]."""
    from softeval.analysis.aggregate import load_summary
    from softeval.analysis.export import export_tensorboard, export_wandb, read_curves, read_leaderboard

    scores = load_summary(results / "tables" / "scores.parquet")
    board = read_leaderboard(results / "tables" / "leaderboard.csv")
    curves = read_curves(results / "softprompts") if (results / "softprompts").is_dir() else None
    if tensorboard:
        print(f"TensorBoard: {export_tensorboard(scores, board, tensorboard, curves=curves)}", file=sys.stderr)
    if wandb_project:
        mode = os.environ.get("WANDB_MODE", "offline")
        folder = export_wandb(
            scores, board, results.parent / "wandb", wandb_project, results.parent.name, mode, curves=curves
        )
        print(f"W&B ({mode}): {folder}", file=sys.stderr)


def split_list(values: Sequence[str] | str | None) -> list[str]:
    """'a,b' or ['a,b', 'c'] -> ['a', 'b', 'c']."""
    if values is None:
        return []
    items = [values] if isinstance(values, str) else list(values)
    return [part.strip() for item in items for part in item.split(",") if part.strip()]


def leaderboard(
    results: str | Path = "results", metric: str | None = None, bootstrap: int = 1000, seed: int = 0
) -> tuple[Any, str]:
    """A finished run's leaderboard (the table and its text): the one the run wrote, or one
    computed again from the per-example scores when `metric` asks for another order."""
    import pandas as pd

    from softeval.analysis.leaderboard import build_leaderboard, leaderboard_text

    results = Path(results)
    written = results / "tables" / "leaderboard"
    if metric is None and written.with_suffix(".csv").is_file():
        return pd.read_csv(written.with_suffix(".csv")), written.with_suffix(".md").read_text(encoding="utf-8")
    scores = results / "scores"
    steps = [int(p.stem.removeprefix("step")) for p in scores.glob("*/base/*/soft_prompt/step*.jsonl")]
    if not scores.is_dir():
        raise InputError(f"--results {results}: no scores/ folder; give a run's results folder (<out>/results)")
    closed = sorted({p.name for p in (results / "loglik").glob("*/base/*")})
    table = build_leaderboard(
        scores,
        None,
        None,
        max(steps, default=0),
        metric=metric or "strict",
        bootstrap=bootstrap,
        seed=seed,
        loglik_root=results / "loglik",
        closed_tasks=closed,
    )
    return table, leaderboard_text(table)
