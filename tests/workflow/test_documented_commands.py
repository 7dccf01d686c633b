"""Every `softeval`, `snakemake` and `make` command that README.md, docs/*.md, config/README.md and
results/README.md show runs as written: a doc command that no longer works fails here.

The commands are extracted from the Markdown (fenced blocks line by line, `# comments` cut; inline
code spans), and each must be listed below in one of:

- RUN: run as written in the folder of a small finished run (tests/configs/tiny.yaml: the embedded
  default's names, models atlas and pocket, its four tasks, soft prompts at steps 0 and 80), or in
  a fresh copy of the checkout (the embedded default's config, no results) for the dry runs a doc
  writes with `-n`; a placeholder (FILE, my.yaml, $P, ...) is replaced by what the doc says it is;
- DRY: a command that would start a whole workflow, run with `-n` added in the same place;
- MAKE: a make target, run as `make -n -B TARGET` in the repository (its recipe, printed, not run);
- MENTION: a command named in prose (`softeval export --date`, `softeval world`): the subcommand
  exists and every flag the doc names is in its `--help`;
- SKIPPED: what needs a GPU, a cluster, the network or the user's own files, with the reason.

A command in the docs that none of them lists fails `test_every_documented_command_is_checked`; an
entry no doc shows any more fails it too. Module-scoped fixtures: a copy of the session's tiny run
(tests/workflow/test_workflow.py's `tiny_run`: `snakemake --cores 2` on tests/configs/tiny.yaml,
shared with the workflow tests), only read afterwards except by `snakemake --unlock` and
`--rerun-incomplete`, which find nothing to do, and by the commands that write a report or export.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.workflow.test_workflow import copy_checkout, copy_run, tiny_run

DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), ROOT / "config" / "README.md"]
DOCS.append(ROOT / "results" / "README.md")
DOCS_CONFIG = ROOT / "tests" / "configs" / "tiny.yaml"
PROGRAMS = ("softeval", "snakemake", "make")
# cluster.md: the profile arguments of its judge phase
P = "--configfile config/paper.yaml --profile workflow/profiles/slurm"


def documented_commands() -> dict[str, list[str]]:
    """Every command the docs show: {command: [file:line, ...]}. A fenced block's line that starts
    with one of PROGRAMS (a trailing `# comment` cut; a comment "# or: COMMAND" is one more), and
    an inline code span that does and has at least one argument (`softeval` alone names the
    package)."""
    found: dict[str, list[str]] = {}
    for path in DOCS:
        fenced = False
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            where = f"{path.relative_to(ROOT)}:{number}"
            if line.lstrip().startswith("```"):
                fenced = not fenced
                continue
            if fenced:
                text, _, comment = line.strip().removeprefix("$ ").partition(" #")
                if text.split(" ")[0] in PROGRAMS:
                    found.setdefault(text.strip(), []).append(where)
                    # "# or: snakemake --profile ...": an alternative, a command too
                    if match := re.match(r"\s*or: (.*)$", comment):
                        found.setdefault(match[1].strip(), []).append(where)
                continue
            for span in re.findall(r"`([^`]+)`", line):
                if span.split(" ")[0] in PROGRAMS and " " in span.strip():
                    found.setdefault(span.strip(), []).append(where)
    return found


@dataclass(frozen=True)
class Run:
    """How one command is run: `command` replaces the documented text where a placeholder must be
    filled; `where` is "run" (the finished small run's folder) or "checkout" (a fresh copy of the
    checkout); `expect` must appear in stdout + stderr; `returncode` is what the doc says it
    exits with."""

    command: str | None = None
    where: str = "run"
    expect: str = ""
    returncode: int = 0


REVIEW_ATLAS_FORMAT = "softeval review --model atlas --task world_phrase --method soft_prompt --wrong-format"
RUN: dict[str, Run] = {
    # README "What it measures, in short": review; docs/reproducing.md "Reviewing a run"; docs/method.md
    REVIEW_ATLAS_FORMAT: Run(expect="atlas/base/world_phrase/soft_prompt"),
    "softeval review --model atlas --task world_phrase --method soft_prompt --vs-step 0 --metric knowledge": Run(
        expect="McNemar"
    ),
    "softeval review --task world_phrase --method soft_prompt --step 80": Run(expect="pocket"),
    "softeval review --task world_numeric --method soft_prompt --step 80": Run(expect="atlas"),
    "softeval review --model pocket --task world_phrase --method soft_prompt --step 80 --wrong-format": Run(
        expect="pocket/base/world_phrase/soft_prompt"
    ),
    "softeval review --model atlas --task world_choice --method soft_prompt --wrong-knowledge": Run(expect="letters"),
    "softeval review --model pocket --task world_boxed --method soft_prompt --vs-step 0 --metric knowledge": Run(
        expect="McNemar"
    ),
    "softeval review --model atlas --task world_phrase --method soft_prompt --vs zero_shot": Run(expect="McNemar"),
    "softeval review --help": Run(expect="--vs-step"),
    "softeval leaderboard": Run(expect="atlas"),
    "softeval leaderboard --metric knowledge": Run(expect="knowledge"),
    "softeval claims-explain N": Run("softeval claims-explain 5", expect="vs zero-shot"),
    "softeval claims-explain 3": Run(expect="vs zero-shot"),
    "softeval claims-explain 4": Run(expect="agreement owed to tie-breaks"),
    "softeval claims-explain 2 --results results": Run(expect="base models vs zero-shot"),
    "softeval manifest --check FILE": Run(
        "softeval manifest --write ../manifest.txt && softeval manifest --check ../manifest.txt"
    ),
    "softeval check-config my.yaml": Run(
        f"cp {DOCS_CONFIG} my.yaml && softeval check-config my.yaml", where="checkout"
    ),
    "softeval check-config FILE": Run("softeval check-config config/config.yaml", where="checkout"),
    "softeval plan-cost --configfile config/paper.yaml": Run(where="checkout", expect="GPU-hours"),
    # verify checks a finished *default* run against its published ranges: on the small run it
    # runs, reads everything, and says no (the default run's own test: tests/unit/analysis/test_verify.py).
    # Its replay reads this folder's config/config.yaml, the tiny config, so it differs too; the
    # record's replay on the shipped config: tests/workflow/test_published_replay.py
    "softeval verify --published config/published/default.yaml": Run(expect="bytes", returncode=1),
    "softeval verify --no-replay": Run(expect="replay: skipped (--no-replay)", returncode=1),
    "softeval publish-ranges --run LABEL=RESULTS ... --bytes-from RESULTS --config FILE --out FILE": Run(
        "softeval publish-ranges --run 'seed 3=results' --bytes-from results --config config/config.yaml "
        "--out ../published.yaml",
        expect="figures from 1 runs",
    ),
    'softeval judge validate --settings \'{"name": "name"}\'': Run(
        'softeval judge validate --settings \'{"name": "rule"}\' --out ../judge_validation', expect="rule"
    ),
    "snakemake -n": Run(expect="Nothing to be done"),
    "snakemake --unlock": Run(),
    "snakemake --cores all --rerun-incomplete": Run(expect="Nothing to be done"),
    "snakemake --report results/report.html": Run(expect="Report created"),
    "snakemake --lint": Run(where="checkout"),
    "snakemake -n --configfile config/paper.yaml": Run(where="checkout", expect="tune"),
}
# Would start a whole workflow (or redo part of the small run): `-n` added.
DRY: dict[str, Run] = {
    "snakemake --cores all": Run(where="checkout", expect="pretrain"),
    "snakemake --profile workflow/profiles/default": Run(where="checkout", expect="pretrain"),
    "snakemake --cores 2": Run(where="checkout", expect="pretrain"),
    "snakemake --cores all --forcerun judge": Run(expect="judge"),
    "snakemake --cores all --configfile my.yaml --replace-workflow-config": Run(
        f"cp {DOCS_CONFIG} my.yaml && snakemake --cores all --configfile my.yaml --replace-workflow-config",
        where="checkout",
        expect="pretrain",
    ),
    "snakemake --cores all --configfile config/paper.yaml pilot.yaml": Run(
        "echo 'evaluation: {test_limit: 100}' > pilot.yaml && "
        "snakemake --cores all --configfile config/paper.yaml pilot.yaml",
        where="checkout",
        expect="prepare_task",
    ),
}
SLURM = {  # docs/cluster.md: dry runs through the slurm profile, which needs its executor plugin
    "snakemake --configfile config/paper.yaml --profile workflow/profiles/slurm": Run(where="checkout", expect="tune"),
    "snakemake $P --until evaluate evaluate_soft_prompt": Run(
        f"snakemake {P} --until evaluate evaluate_soft_prompt",
        where="checkout",
        expect="tune",
    ),
    "snakemake $P": Run(f"snakemake {P}", where="checkout", expect="judge"),
}
DRY.update(SLURM)
# Documented, broken, in a file this test's author does not edit: the test fails (strict xfail)
# until the doc is fixed; then the fixed command replaces the entry above and leaves this list.
KNOWN_BROKEN: dict[str, str] = {}
MAKE = {
    "make reproduce": "snakemake --cores all",
    "make verify": "softeval verify --results results --published config/published/default.yaml",
    "make test": "pytest -n 2 --dist loadscope",
    "make test-fast": '-m "not integration"',
    "make venv": "pip install",
    "make lint": "snakemake --lint",
    'make reproduce TORCH="torch==2.9.1"': "torch==2.9.1",
    "make gpu-check": "benchmarks/gpu_check.py",
}
# Named in prose: the subcommand exists, the flags named are its own.
MENTION = {
    "softeval run",
    "softeval review",
    "softeval leaderboard",
    "softeval check-config",
    "softeval plan-cost",
    "softeval export",
    "softeval export --date",
    "softeval world",
    "softeval judge run",
    "softeval judge validate",
    "softeval verify",
    "softeval publish-ranges",
    "softeval mirror",
    "softeval convert-gguf",
    "softeval run --configfile my.yaml",
    "softeval <command> --help",
    "softeval --help",
}
SKIPPED = {
    "softeval run --models ./ckpt-a ./ckpt-b org/ckpt-c --tasks gsm8k,mmlu,triviaqa --out runs/recipes": (
        "the user's own checkpoints and a hub model (network); softeval run itself: tests/workflow/test_smoke.py"
    ),
    "softeval mirror --task gsm8k math500 triviaqa nq_open mmlu arc_challenge commonsense_qa --out /shared/mirror": (
        "downloads the benchmarks from the Hugging Face hub (network)"
    ),
    "softeval plan-cost --configfile config/paper.yaml --pilot results": (
        "reads a pilot run of config/paper.yaml (7B models, a GPU, the hub); --pilot on a run's generations: "
        "tests/unit/test_plan_cost.py::test_pilot_lengths_replace_the_estimates"
    ),
}
CHECKED = {**RUN, **DRY}


def test_every_documented_command_is_checked():
    documented = documented_commands()
    listed = set(CHECKED) | set(MAKE) | MENTION | set(SKIPPED)
    missing = {c: documented[c] for c in sorted(set(documented) - listed)}
    assert not missing, f"documented commands this test does not run (add each to a table here): {missing}"
    # a documented command only: the tables hold no command that no doc shows any more
    assert not listed - set(documented), sorted(listed - set(documented))
    assert all(SKIPPED.values())  # every skip says why


def test_the_extraction_finds_fenced_and_inline_commands():
    documented = documented_commands()
    assert "docs/reproducing.md" in " ".join(documented[REVIEW_ATLAS_FORMAT])  # a fenced block's line
    assert any(w.startswith("README.md") for w in documented[REVIEW_ATLAS_FORMAT])  # an inline span
    assert "make reproduce" in documented and "softeval" not in documented  # the package's bare name is no command


def environment() -> dict[str, str]:
    return {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        "HF_HUB_OFFLINE": "1",
        "HF_DATASETS_OFFLINE": "1",
    }


def shell(command: str, cwd: Path, timeout: int = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", "-c", command], cwd=cwd, env=environment(), capture_output=True, text=True, timeout=timeout
    )


@pytest.mark.parametrize("command", sorted(MENTION))
def test_mentioned_subcommand_exists_with_its_flags(command):
    words = [w for w in shlex.split(command)[1:] if w != "<command>"]
    subcommand = [w for w in words if not w.startswith("-")]
    flags = [w for w in words if w.startswith("--") and w != "--help"]
    if command == "softeval run --configfile my.yaml":
        subcommand = ["run"]
    result = shell(shlex.join(["softeval", *subcommand, "--help"]), ROOT, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    for flag in flags:
        assert flag in result.stdout, f"{command}: {flag} is not an option of softeval {' '.join(subcommand)}"


@pytest.mark.parametrize("command", sorted(MAKE))
def test_make_target_exists(command):
    """`make -n -B`: the recipe is printed, nothing run, even where the target is up to date (a
    built .venv); it holds what the docs say the target does."""
    result = shell(command.replace("make", "make -n -B", 1), ROOT, timeout=60)
    assert result.returncode == 0, result.stderr[-2000:]
    assert MAKE[command] in result.stdout, result.stdout


@pytest.fixture(scope="module")
def places(tmp_path_factory) -> dict[str, Path]:
    """The two places commands run in. "run": a copy of the session's tiny run (a checkout whose
    config/config.yaml is tests/configs/tiny.yaml, run to the end); "checkout": a fresh copy of
    the checkout, the embedded default's config, nothing run.
    SOFTEVAL_DOCS_RUN=FOLDER reuses such a finished run (while editing docs: the run costs minutes)."""
    checkout = copy_checkout(tmp_path_factory.mktemp("docs-checkout") / "softeval")
    if os.environ.get("SOFTEVAL_DOCS_RUN"):
        return {"run": Path(os.environ["SOFTEVAL_DOCS_RUN"]), "checkout": checkout}
    run = copy_run(tiny_run(tmp_path_factory), tmp_path_factory.mktemp("docs-run") / "softeval")
    return {"run": run, "checkout": checkout}


def dry(command: str) -> str:
    """The snakemake command of `command` (after any `&&`) with -n added."""
    head, sep, last = command.rpartition("&& ")
    assert last.startswith("snakemake "), command
    return f"{head}{sep}snakemake -n {last.removeprefix('snakemake ')}"


@pytest.mark.integration
@pytest.mark.parametrize("command", sorted(CHECKED))
def test_documented_command_runs(places, command, request):
    how = CHECKED[command]
    if command in KNOWN_BROKEN:
        request.applymarker(pytest.mark.xfail(strict=True, reason=KNOWN_BROKEN[command]))
    if command in SLURM:
        pytest.importorskip("snakemake_executor_plugin_slurm")
    text = how.command or command
    if command in DRY:
        text = dry(text)
    result = shell(text, places[how.where])
    output = result.stdout + result.stderr
    assert result.returncode == how.returncode, f"{text}\n{output[-3000:]}"
    assert how.expect in output, f"{text}\n{output[-3000:]}"
    if command in DRY:
        assert "This was a dry-run" in output


@pytest.mark.integration
def test_the_reviewing_table_names_fields_the_run_has(places):
    """docs/reproducing.md, "Reviewing a run", answers questions with files and fields: the small
    run has each of them (a renamed column fails here, not in a reviewer's hands)."""
    import json

    import pandas as pd

    results = places["run"] / "results"
    text = (ROOT / "docs" / "reproducing.md").read_text(encoding="utf-8").split("## Reviewing a run")[1]
    tables = results / "tables"
    columns = {
        "leaderboard.csv": ["vs_above", "diff_above", "diff_above_low", "diff_above_high", "tied_with"],
        "unit_checks.csv": ["p_knowledge_change", "vs_zero_shot", "choice_top", "choice_collapsed"],
        "claims.csv": ["estimate", "ci_low", "ci_high", "verdict", "caveat"],
    }
    for name, wanted in columns.items():
        have = set(pd.read_csv(tables / name).columns)
        assert set(wanted) <= have, (name, sorted(set(wanted) - have))
        assert all(f"`{c}`" in text for c in wanted), name
    for name in ("judge_validation.md", "timings.md", "claims.md"):
        assert (tables / name).is_file() and f"{name}`" in text
    unit = "atlas/base/world_phrase/soft_prompt/step80"
    row = json.loads((results / "scores" / f"{unit}.jsonl").read_text().splitlines()[0])
    assert {"knowledge", "format", "strict", "judge", "knowledge_from", "degenerate"} <= set(row)
    scores_meta = json.loads((results / "scores" / f"{unit}.meta.json").read_text())["params"]
    assert {"judge", "task_version", "scoring_sha256", "generations_sha256"} <= set(scores_meta), sorted(scores_meta)
    generation_meta = json.loads((results / "generations" / f"{unit}.meta.json").read_text())
    assert {"path", "sha256"} <= set(generation_meta["soft_prompt_file"])
    data_meta = json.loads((results / "data" / "world_phrase" / "meta.json").read_text())["provenance"]
    model_meta = json.loads((results / "zoo" / "atlas" / "base" / "softeval.json").read_text())["provenance"]
    for meta in (generation_meta, data_meta, model_meta):
        run = meta["run"]
        assert {"path", "sha256"} <= set(run["config"]["files"][0]) and "overrides" in run["config"], run["config"]
        assert {"commit", "dirty"} <= set(run["code"]) or "installed" in run["code"]
        assert {"cpu", "cores", "torch_threads", "cpu_kernels"} <= set(run["machine"])
        assert {"params_hash", "seed", "versions"} <= set(meta)
    # the steps a review names: step 0 and the final step were evaluated
    assert (results / "scores" / "pocket" / "base" / "world_boxed" / "soft_prompt" / "step0.jsonl").is_file()
