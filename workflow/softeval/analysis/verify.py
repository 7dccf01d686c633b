"""Does a run reproduce the published science? Checked at the level that holds on any machine.

A float sum depends on the order the CPU's kernels pick, and training amplifies the last bits:
another machine's zoo has other weights, its tables other figures. What holds anywhere:

- **bytes** of the artifacts computed from integers and seeded numpy alone (the world, the
  task splits, the tokenizer, the rule judge's verdicts on the fixed validation set);
- the **replay** (softeval.analysis.replay): what the analysis computes from a published run's
  shipped model outputs, recomputed here byte for byte;
- each headline **figure** inside its published range: a simultaneous prediction interval for
  one new run from the published runs (several seeds: a change of seed moves the figures at
  least as much as a change of CPU does, since both perturb the same chaotic training);
- each pre-registered **contrast** (softeval.analysis.contrasts: format climb, soft prompt minus
  zero-shot, post-trained minus base, ...) not below its one-sided bound: what the method does,
  within the run: a pipeline that kills an effect at least as large as the contrast's stated drop
  (its power, from the published runs' spread) fails even where every figure stays in range.
  Figures and contrasts share the 5 % false-alarm budget, half each (weighted Bonferroni): a
  correct run fails with probability at most 5 %.

Each claim's verdict is reported beside them, not checked: a verdict the seeds disagree on
(unstable) would fail correct runs, and "not shown" would pass a pipeline that kills every effect.

The published record (config/published/*.yaml) keeps every run's value of every figure, so its
ranges are recomputed, not trusted; `softeval publish-ranges` writes it from runs' results.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import yaml

from softeval.analysis import replay
from softeval.analysis.claims.verdicts import claim_verdicts, stability, unstable
from softeval.analysis.contrasts import CONTRASTS, contrast_values, detectable_drop, lower_bound, t_quantile
from softeval.analysis.manifest import sha256
from softeval.analysis.tables import ALL_TASKS
from softeval.io import atomic_write_text, read_utf8
from softeval.names import BASE, POST, SOFT_PROMPT
from softeval.schema import InputError

# What any machine computes to the same bytes (relative to results/), given the same seed.
MACHINE_INDEPENDENT = (
    "world/world.json",
    "data/*/*.jsonl",
    "zoo/_tokenizer/tokenizer.json",
    "tables/judge_validation.csv",
)
LEVEL = 0.95
# A figure that did not move over the published runs still has the spread a few test examples
# (shares) or one swap (counts) would give it: zero spread over five seeds is not zero spread.
SD_FLOOR = {"share": 0.005, "count": 0.5}
BOUNDS = {"share": (0.0, 1.0), "count": (0.0, math.inf)}


@dataclass(frozen=True)
class Figure:
    value: float
    kind: str  # "share" (a mean of 0/1 scores or of their gaps) or "count" (swaps)


def _read(tables: Path, name: str) -> pd.DataFrame:
    path = tables / name
    if not path.is_file():
        raise InputError(f"{path}: table not found; run the workflow to its end (snakemake --cores all) first")
    return pd.read_csv(path)


def headline_figures(tables: Path) -> dict[str, Figure]:
    """The README's figures, by name: method means, swap distances, score gaps, the zoo's table."""
    figures: dict[str, Figure] = {}
    means = _read(tables, "knowledge_format.csv")
    soft = means[means["method"] == SOFT_PROMPT]
    final = int(soft["step"].max()) if len(soft) else None
    for role, metrics in ((BASE, ("format", "knowledge", "strict")), (POST, ("strict",))):
        rows = means[means["role"] == role]
        for _, row in rows.iterrows():
            if row["method"] == SOFT_PROMPT:
                if (role == POST and int(row["step"]) != final) or int(row["step"]) not in (0, final):
                    continue
                method = f"soft_prompt@{int(row['step'])}"
            else:
                method = row["method"]
            for metric in metrics:
                figures[f"knowledge_format/{role}/{method}/{metric}"] = Figure(float(row[metric]), "share")
    swaps = _read(tables, "swap_distance.csv")
    swaps = swaps[swaps["task"] != ALL_TASKS]  # the per-task rows, summed here as in the README
    for method, group in swaps.groupby("method", sort=True):
        figures[f"swap_distance/{method}/to_post"] = Figure(float(group["distance"].sum()), "count")
        if group["truth_distance"].notna().all():
            figures[f"swap_distance/{method}/to_truth"] = Figure(float(group["truth_distance"].sum()), "count")
    gaps = _read(tables, "score_gap.csv")
    for method, group in gaps.groupby("method", sort=True):
        overall = group[group["task"] == ALL_TASKS]  # the mean over units, as the README quotes it
        value = overall["gap_abs"].iloc[0] if len(overall) else group["gap_abs"].mean()
        figures[f"score_gap/{method}/mean_abs"] = Figure(float(value), "share")
    zoo_path = tables / "zoo.csv"
    if zoo_path.is_file():
        zoo = pd.read_csv(zoo_path)
        for _, row in zoo.iterrows():
            columns = ("knowledge", "zero_shot_format_open", "zero_shot_strict") if row["role"] == BASE else ()
            for column in (*columns, *(("zero_shot_strict",) if row["role"] == POST else ())):
                figures[f"zoo/{row['model']}/{row['role']}/{column}"] = Figure(float(row[column]), "share")
    return figures


def prediction_range(values: list[float], kind: str, figures: int, level: float = LEVEL) -> tuple[float, float] | None:
    """Where one new run's value falls, with probability `level` for all `figures` together.

    Normal prediction interval from n runs, Bonferroni over the figures: mean +- t(1 - a/2m,
    n-1) * s * sqrt(1 + 1/n), s at least SD_FLOOR; counts rounded outward to whole swaps,
    both clipped to what the figure can be. None for one run (no spread to go on).
    """
    n = len(values)
    if n < 2:
        return None
    mean = float(np.mean(values))
    sd = max(float(np.std(values, ddof=1)), SD_FLOOR[kind])
    alpha = (1 - level) / figures
    half = t_quantile(1 - alpha / 2, n - 1) * sd * math.sqrt(1 + 1 / n)
    low, high = BOUNDS[kind]
    lo, hi = max(low, mean - half), min(high, mean + half)
    if kind == "count":
        lo, hi = float(math.floor(lo)), float(math.ceil(hi))
    return round(lo, 4), round(hi, 4)


def family_size(figure_runs: dict[str, list[float]]) -> int:
    """How many tests share the false-alarm budget: every figure and every contrast the figures allow."""
    return len(figure_runs) + contrasts_of(figure_runs)


def contrasts_of(figure_runs: dict[str, list[float]]) -> int:
    return sum(contrast_values(c, figure_runs) is not None for c in CONTRASTS)


def denominators(record: dict[str, Any]) -> tuple[int, int]:
    """Bonferroni denominators of (each figure's range, each contrast's bound): half the
    false-alarm budget to the figures, half to the few pre-registered contrasts, which are the
    primary tests (so a contrast's bound is not diluted by the 44 figures). A record written before
    contrasts existed (no `family`) keeps its figures' ranges; its contrasts are tested at that level."""
    figures = {name: figure["runs"] for name, figure in record["figures"].items()}
    if "family" not in record:
        return len(figures), len(figures)
    return 2 * len(figures), 2 * max(contrasts_of(figures), 1)


def machine_independent_bytes(results: Path) -> dict[str, str]:
    """results-relative path -> sha256 of every machine-independent artifact present."""
    found = sorted({p for pattern in MACHINE_INDEPENDENT for p in results.glob(pattern) if p.is_file()})
    return {p.relative_to(results).as_posix(): sha256(p) for p in found}


def run_verdicts(tables: Path) -> dict[int, str]:
    return claim_verdicts(_read(tables, "claims.csv"))


# ---- the published record --------------------------------------------------------------------


def build_record(
    runs: dict[str, Path], bytes_from: Path, config: str, note: str = "", outputs: str | None = None
) -> dict[str, Any]:
    """A published record from several runs' results (label -> results directory). outputs: the
    name, beside the record, of the archive of `bytes_from`'s outputs (replay.pack): the record
    then keeps the digests of what that run computed from them (verify's deterministic layer)."""
    if not runs:
        raise InputError("publish-ranges: give at least one --run LABEL=RESULTS_DIR")
    figures_by_run = {label: headline_figures(path / "tables") for label, path in runs.items()}
    names = sorted(set.intersection(*(set(f) for f in figures_by_run.values())))
    record: dict[str, Any] = {
        "config": config,
        "note": note,
        "level": LEVEL,
        "family": 0,  # set below: the figures and contrasts sharing the false-alarm budget
        "runs": list(runs),
        "bytes": machine_independent_bytes(bytes_from),
        "verdicts": {
            int(claim): {label: run_verdicts(path / "tables").get(claim, "missing") for label, path in runs.items()}
            for claim in sorted(run_verdicts(next(iter(runs.values())) / "tables"))
        },
        "figures": {},
    }
    if outputs is not None:
        record["replay"] = {"outputs": outputs, "sha256": replay.computed_digests(bytes_from)}
        shipped = [label for label, path in runs.items() if path.resolve() == bytes_from.resolve()]
        if shipped:  # the run whose outputs are shipped: `publish-ranges --refresh-replay` rewrites its verdicts
            record["replay"]["run"] = shipped[0]
    calibrated = [path / "tables" / "calibration.csv" for path in runs.values()]
    if all(path.is_file() for path in calibrated):  # the calibration over the runs (rule calibration)
        record["calibration"] = calibration_over_runs(dict(zip(runs, calibrated, strict=True)))
    values_of = {name: [round(figures_by_run[label][name].value, 4) for label in runs] for name in names}
    record["family"] = family_size(values_of)
    tests = denominators(record | {"figures": {name: {"runs": v} for name, v in values_of.items()}})[0]
    for name in names:
        kind = figures_by_run[next(iter(runs))][name].kind
        values = values_of[name]
        rng = prediction_range(values, kind, tests)
        record["figures"][name] = {
            "kind": kind,
            "runs": values,
            "low": None if rng is None else rng[0],
            "high": None if rng is None else rng[1],
        }
    return record


def calibration_over_runs(tables: dict[str, Path]) -> dict[str, dict[str, Any]]:
    """ "control/claim" -> the expected verdict and each run's obtained one (calibration.csv's rows)."""
    out: dict[str, dict[str, Any]] = {}
    for label, path in tables.items():
        for row in pd.read_csv(path).itertuples():
            entry = out.setdefault(f"{row.control}/{row.claim}", {"expected": row.expected, "runs": {}})
            entry["runs"][label] = row.obtained
    return out


def write_record(record: dict[str, Any], path: Path) -> None:
    header = (
        "# A published record: what `make verify` (softeval verify) checks a run against.\n"
        "# Written by `softeval publish-ranges` from the runs listed; each figure keeps every run's\n"
        "# value, and its range is recomputed from them when read (softeval.analysis.verify).\n"
    )
    atomic_write_text(path, header + yaml.safe_dump(record, sort_keys=False, width=110))


def read_record(path: Path) -> dict[str, Any]:
    """A published record, its ranges checked against its runs' values."""
    if not path.is_file():
        raise InputError(f"{path}: published record not found; see config/published/README.md")
    try:
        record = yaml.safe_load(read_utf8(path))
    except yaml.YAMLError as error:
        raise InputError(f"{path}: not valid YAML ({error}); restore it from git") from None
    missing = {"runs", "bytes", "verdicts", "figures"} - set(record or {})
    if missing:
        raise InputError(f"{path}: keys {sorted(missing)} missing; rewrite it with softeval publish-ranges")
    needed = family_size({name: figure["runs"] for name, figure in record["figures"].items()})
    if "family" in record and record["family"] != needed:
        raise InputError(
            f"{path}: family {record['family']} is not its {needed} figures and contrasts; "
            "rewrite it with softeval publish-ranges"
        )
    tests = denominators(record)[0]
    for name, figure in record["figures"].items():
        expected = prediction_range(figure["runs"], figure["kind"], tests, record.get("level", LEVEL))
        stored = None if figure.get("low") is None else (figure["low"], figure["high"])
        if expected != stored:
            raise InputError(
                f"{path}: figures.{name}: range {stored} is not the one its runs give ({expected}); "
                "it was edited by hand: rewrite it with softeval publish-ranges"
            )
    return record


# ---- the check ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Row:
    check: str
    item: str
    published: str
    this_run: str
    inside: bool | None  # None: nothing to check against (one published run)

    @property
    def mark(self) -> str:
        if self.check == "verdict":  # reported beside the checks, not one of them
            return {True: "yes", False: "no", None: "n/a"}[self.inside]
        return {True: "yes", False: "**no**", None: "n/a"}[self.inside]


def verify(results: Path, record: dict[str, Any], replayed: dict[str, str] | None = None) -> list[Row]:
    """One row per byte file, claim, figure and contrast: published, this run, inside or not; with
    `replayed` (replay.replay's digests of the record's outputs recomputed here), the replay's rows."""
    rows: list[Row] = []
    actual_bytes = machine_independent_bytes(results)
    for name, digest in sorted(record["bytes"].items()):
        got = actual_bytes.get(name)
        rows.append(Row("bytes", name, digest[:16], "missing" if got is None else got[:16], got == digest))
    if replayed is not None and "replay" in record:
        rows += [Row("replay", *row) for row in replay.compare(record["replay"]["sha256"], replayed)]
    verdicts = run_verdicts(results / "tables")
    for claim, by_run in sorted(record["verdicts"].items(), key=lambda item: int(item[0])):
        got = verdicts.get(int(claim), "missing")
        published = stability(by_run) + ("; unstable" if unstable(by_run) else "")
        rows.append(Row("verdict", f"claim {claim}", published, got, got in set(by_run.values())))
    figures = headline_figures(results / "tables")
    for name, figure in record["figures"].items():
        got = figures.get(name)
        shown = "missing" if got is None else _format(got.value, figure["kind"])
        if figure.get("low") is None:
            published = ", ".join(_format(v, figure["kind"]) for v in figure["runs"]) + " (one run: no range)"
            rows.append(Row("figure", name, published, shown, None))
            continue
        low, high = figure["low"], figure["high"]
        inside = got is not None and low <= round(got.value, 4) <= high
        published = f"[{_format(low, figure['kind'])}, {_format(high, figure['kind'])}]"
        rows.append(Row("figure", name, published, shown, inside))
    return rows + contrast_rows(figures, record)


def contrast_rows(figures: dict[str, Figure], record: dict[str, Any]) -> list[Row]:
    """One row per contrast the record allows: its bound, the runs' mean and spread, the drop it
    catches four times in five, and this run's value."""
    published = {name: figure["runs"] for name, figure in record["figures"].items()}
    kinds = {name: figure["kind"] for name, figure in record["figures"].items()}
    tests, level = denominators(record)[1], record.get("level", LEVEL)
    mine = {name: [figure.value] for name, figure in figures.items()}
    rows = []
    for contrast in CONTRASTS:
        values = contrast_values(contrast, published)
        if values is None:
            continue
        names = contrast.resolve(list(published))
        assert names is not None
        kind = "count" if kinds[names[0]] == "count" else "share"
        got = contrast_values(contrast, mine) if contrast.resolve(list(mine)) == names else None
        shown = "missing" if got is None else _format(got[0], kind, signed=True)
        bound = lower_bound(values, SD_FLOOR[kind], tests, level)
        spread = f"{len(values)} runs: mean {_format(float(np.mean(values)), kind, signed=True)}"
        if bound is None:
            rows.append(Row("contrast", contrast.name, spread + " (one run: no bound)", shown, None))
            continue
        drop = detectable_drop(values, SD_FLOOR[kind], tests, level)
        text = (
            f">= {_format(bound, kind, signed=True)} ({spread}, sd {float(np.std(values, ddof=1)):.3f}; "
            f"catches a drop of {drop:.3f} 4 times in 5)"
        )
        rows.append(Row("contrast", contrast.name, text, shown, got is not None and round(got[0], 4) >= bound))
    return rows


def _format(value: float, kind: str, signed: bool = False) -> str:
    if kind == "count":
        return f"{value:+.1f}" if signed else f"{value:.0f}"
    return f"{value:+.3f}" if signed else f"{value:.3f}"


def report(rows: list[Row], record_path: Path, record: dict[str, Any]) -> str:
    """The verify table in Markdown, and a summary line per check."""
    lines = [
        f"Checked against {record_path} ({len(record['runs'])} published runs: {', '.join(record['runs'])}).",
        "",
        "| check | item | published | this run | inside |",
        "|---|---|---|---|---|",
    ]
    lines += [f"| {r.check} | {r.item} | {r.published} | {r.this_run} | {r.mark} |" for r in rows]
    lines.append("")
    for check in ("bytes", "replay", "figure", "contrast", "verdict"):
        mine = [r for r in rows if r.check == check]
        checked = [r for r in mine if r.inside is not None]
        if mine:
            passed = sum(bool(r.inside) for r in checked)
            unchecked = len(mine) - len(checked)
            lines.append(
                f"{check}: {passed} of {len(checked)} inside"
                + (f" ({unchecked} without a range)" if unchecked else "")
                + (" (reported beside the checks, not one of them)" if check == "verdict" else "")
            )
    return "\n".join(lines) + "\n"


def passed(rows: list[Row]) -> bool:
    """Every checked row inside; verdicts are reported, not checked."""
    return all(r.inside is not False for r in rows if r.check != "verdict")
