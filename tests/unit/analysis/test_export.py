"""Exports others can read, read back with the readers of their own tools: lm-evaluation-harness
results files (lm_eval's make_table and its W&B logger), TensorBoard event files (TensorBoard's
EventAccumulator) and an offline W&B run (its transaction log, in W&B's own protobuf records)."""

from __future__ import annotations

import argparse
import json
import random
import struct
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from softeval.analysis.aggregate import METRICS, aggregate_scores, write_summary
from softeval.analysis.export import (
    binary_stderr,
    export_tensorboard,
    export_wandb,
    harness_metric,
    lm_eval_results,
    read_curves,
    read_leaderboard,
    read_task_meta,
    results_file_name,
    write_lm_eval_results,
)
from softeval.analysis.leaderboard import COLUMNS as BOARD_COLUMNS
from softeval.analysis.leaderboard import write_leaderboard
from softeval.io import atomic_write_json, atomic_write_jsonl, atomic_write_text
from softeval.jobs.export import add_arguments
from softeval.jobs.export import run as command
from softeval.schema import InputError

N = 12
STEPS = (0, 40, 80)
UNITS = [
    (model, role, task, method, step)
    for model, roles in (("atlas", ("base", "post")), ("parrot", ("base",)))
    for role in roles
    for task in ("world_choice", "world_numeric")
    for method, steps in (("zero_shot", (None,)), ("few_shot", (None,)), ("soft_prompt", STEPS))
    for step in steps
]
HARNESS = {"world_numeric": ("lm_eval", ("exact_match,strict-match", "exact_match,flexible-extract"))}
HARNESS["world_choice"] = ("options", ("acc", "acc_norm"))


def unit_verdicts(model: str, role: str, task: str, method: str, step: int | None) -> list[dict]:
    """Seeded 0/1 verdicts of one unit (the format climbs with the soft prompt's step)."""
    rng = random.Random(f"{model}-{role}-{task}-{method}-{step}")
    climb = (step or 0) / 80 if method == "soft_prompt" else 0.3
    prefix, names = HARNESS[task]
    rows = []
    for i in range(N):
        knowledge = rng.random() < 0.6
        fmt = rng.random() < 0.2 + 0.7 * climb
        row = {"id": f"{task}-{i}", "knowledge": knowledge, "format": fmt, "strict": knowledge and fmt, "judge": "rule"}
        row[prefix] = {name: rng.random() < 0.5 for name in names}
        rows.append(row)
    return rows


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> dict:
    """results/ with per-unit verdicts, the aggregate table (parquet), task metas and tuning curves."""
    root = tmp_path_factory.mktemp("results")
    scores_root = root / "scores"
    verdicts, paths = {}, []
    for unit in UNITS:
        model, role, task, method, step = unit
        name = f"soft_prompt/step{step}" if method == "soft_prompt" else method
        path = scores_root / model / role / task / f"{name}.jsonl"
        verdicts[unit] = unit_verdicts(*unit)
        atomic_write_jsonl(path, verdicts[unit])
        paths.append(path)
    totals = {"world_choice": 20, "world_numeric": N}
    table = aggregate_scores(scores_root, paths, n_resamples=50, seed=0, test_totals=totals)
    write_summary(table, root / "tables" / "scores.csv", root / "tables" / "scores.parquet")
    metas = []
    for task, kind in (("world_choice", "closed"), ("world_numeric", "open")):
        meta = {"task": task, "task_version": 2, "kind": kind, "test_total": totals[task], "test_limit": None}
        atomic_write_json(root / "data" / task / "meta.json", meta)
        metas.append(root / "data" / task / "meta.json")
    for model, role, task, method, step in UNITS:
        if method == "soft_prompt" and step == 0:
            lines = "".join(f"{s},{2.0 / (1 + s):.6f},{0.03 * (1 - s / 80):.6g}\n" for s in range(80))
            atomic_write_text(root / "softprompts" / model / role / task / "curve.csv", "step,loss,lr\n" + lines)
    return {"root": root, "table": table, "verdicts": verdicts, "metas": metas}


def values(run: dict, unit: tuple, measure: str) -> np.ndarray:
    """One unit's per-example 0/1 values of a measure (a verdict, or a harness score 'prefix:name')."""
    prefix, _, name = measure.partition(":")
    rows = run["verdicts"][unit]
    return np.array([float(r[prefix][name]) if name else float(r[measure]) for r in rows])


CONFIG = {
    "seed": 3,
    "evaluation": {"few_shot": {"k": 4}, "tune": {"n_tokens": 10, "steps": 80}},
    # what Plan.model_ref and config.model_options give the jobs of a zoo model and a checkpoint
    "loaded": {
        "atlas": {
            role: {"ref": f"results/zoo/atlas/{role}", "revision": None, "dtype": "auto", "chat_template": False}
            for role in ("base", "post")
        },
        "parrot": {"base": {"ref": "org/parrot-7b", "revision": "abc123", "dtype": "bfloat16", "chat_template": False}},
    },
}


# ----------------------------------------------------------------------------- lm-evaluation-harness


def test_results_file_names_keep_a_twin_apart_from_any_model():
    assert results_file_name("atlas") == "results_atlas.json"
    assert results_file_name("atlas", "post") == "results_atlas.post.json"
    assert results_file_name("atlas-post") == "results_atlas-post.json"  # a slug never has '.'
    with pytest.raises(InputError, match="role"):
        results_file_name("atlas", "chat")
    with pytest.raises(InputError, match="invalid model"):
        results_file_name("../atlas")


def test_stderr_is_the_harness_mean_stderr_of_the_verdicts(run):
    from lm_eval.api.metrics import mean_stderr

    for unit in UNITS[:6]:
        for measure in ("knowledge", "format", "strict"):
            v = values(run, unit, measure)
            assert binary_stderr(float(v.mean()), len(v)) == pytest.approx(mean_stderr(list(v)), abs=1e-12)
    assert binary_stderr(1.0, 1) == "N/A"
    assert binary_stderr(1.0, 5) == 0.0


def test_harness_columns_map_to_metric_and_filter():
    assert harness_metric("lm_eval:exact_match,strict-match") == ("exact_match", "strict-match")
    assert harness_metric("lm_eval:math_verify") == ("math_verify", None)
    assert harness_metric("options:acc_norm") == ("options_acc_norm", None)


def test_results_dict_has_the_harness_layout_and_the_run_values(run):
    from lm_eval.api.metrics import mean_stderr
    from lm_eval.utils import sanitize_model_name

    data = lm_eval_results(run["table"], "atlas", "base", task_meta=read_task_meta(run["metas"]), config=CONFIG)
    assert {"results", "configs", "versions", "higher_is_better", "n-samples", "group_subtasks", "config"} <= set(data)
    assert data["model_name"] == "results/zoo/atlas/base"
    assert data["model_name_sanitized"] == sanitize_model_name(data["model_name"]) == "results__zoo__atlas__base"
    assert data["config"]["model_args"] == "pretrained=results/zoo/atlas/base,dtype=auto"
    assert data["config"]["random_seed"] == 3
    assert "date" not in data  # only when given: the file says when, never a made-up time
    assert set(data["results"]) == {"world_choice", "world_numeric"}
    assert data["versions"] == {"world_choice": 2, "world_numeric": 2}
    assert data["n-samples"]["world_choice"] == {"original": 20, "effective": N}
    assert data["group_subtasks"] == {}
    assert "n-shot" not in data  # one count per task cannot say the methods' (0, k, 0)
    methods = data["configs"]["world_numeric"]["metadata"]["methods"]
    assert methods == {
        "zero_shot": {"num_fewshot": 0},
        "few_shot": {"num_fewshot": 4},
        "soft_prompt": {"num_fewshot": 0, "soft_prompt_tokens": 10, "step": 80},
    }

    numeric = data["results"]["world_numeric"]
    assert numeric["alias"] == "world_numeric" and numeric["sample_len"] == N
    for method, step in (("zero_shot", None), ("few_shot", None), ("soft_prompt", 80)):
        unit = ("atlas", "base", "world_numeric", method, step)
        for metric in ("knowledge", "format", "strict"):
            v = values(run, unit, metric)
            assert numeric[f"{metric},{method}"] == pytest.approx(v.mean())
            assert numeric[f"{metric}_stderr,{method}"] == pytest.approx(mean_stderr(list(v)))
        v = values(run, unit, "lm_eval:exact_match,strict-match")
        assert numeric[f"exact_match,{method}:strict-match"] == pytest.approx(v.mean())
        assert numeric[f"exact_match_stderr,{method}:strict-match"] == pytest.approx(mean_stderr(list(v)))
    assert not any("@step" in key for key in numeric)  # snapshots only with all_steps
    choice = data["results"]["world_choice"]
    v = values(run, ("atlas", "base", "world_choice", "few_shot", None), "options:acc_norm")
    assert choice["options_acc_norm,few_shot"] == pytest.approx(v.mean())
    assert not any(key.startswith("exact_match") for key in choice)  # an empty harness column is left out
    assert data["higher_is_better"]["world_choice"] == {
        "knowledge": True,
        "format": True,
        "strict": True,
        "options_acc": True,
        "options_acc_norm": True,
    }
    row = run["table"].query("model == 'atlas' and role == 'base' and task == 'world_numeric' and step == 80")
    interval = data["softeval"]["intervals"]["world_numeric"]["strict,soft_prompt"]
    assert interval == pytest.approx([row["strict_low"].item(), row["strict_high"].item()])
    assert data["softeval"]["twin"] == "results_atlas.post.json"


def test_snapshots_and_final_step(run):
    data = lm_eval_results(run["table"], "parrot", config=CONFIG, all_steps=True, final_step=40)
    numeric = data["results"]["world_numeric"]
    assert data["config"]["model_args"] == "pretrained=org/parrot-7b,revision=abc123,dtype=bfloat16"
    assert data["softeval"]["twin"] is None  # base-only
    for step, key in ((0, "soft_prompt@step0"), (40, "soft_prompt"), (80, "soft_prompt@step80")):
        v = values(run, ("parrot", "base", "world_numeric", "soft_prompt", step), "format")
        assert numeric[f"format,{key}"] == pytest.approx(v.mean())
    with pytest.raises(InputError, match="no soft_prompt score at step 60"):
        lm_eval_results(run["table"], "parrot", final_step=60)
    with pytest.raises(InputError, match="no rows of model 'parrot' in role 'post'"):
        lm_eval_results(run["table"], "parrot", "post")


def test_files_per_model_and_role_load_in_lm_eval_tooling(run, tmp_path):
    from lm_eval.utils import make_table

    written = write_lm_eval_results(
        run["table"], tmp_path, task_meta=read_task_meta(run["metas"]), config=CONFIG, date=1.7e9
    )
    assert [p.name for p in written] == ["results_atlas.json", "results_atlas.post.json", "results_parrot.json"]
    post = json.loads((tmp_path / "results_atlas.post.json").read_text(encoding="utf-8"))
    assert post["model_name"] == "results/zoo/atlas/post" and post["date"] == 1.7e9
    v = values(run, ("atlas", "post", "world_choice", "soft_prompt", 80), "knowledge")
    assert post["results"]["world_choice"]["knowledge,soft_prompt"] == pytest.approx(v.mean())
    table = make_table(post)
    lines = [line for line in table.splitlines() if line.startswith("|")]
    metric_rows = [[cell.strip() for cell in line.strip("|").split("|")] for line in lines[2:]]
    # 2 tasks x 3 methods x 3 metrics, and the harness's scores: 2 per method on each task
    assert len(metric_rows) == 2 * 3 * 3 + 2 * 3 * 2
    strict = next(r for r in metric_rows if r[2] == "soft_prompt" and r[4] == "strict" and r[0] == "")
    assert strict[1] == ""  # make_table names the version only on a task's first row
    value = post["results"]["world_numeric"]["strict,soft_prompt"]
    stderr = post["results"]["world_numeric"]["strict_stderr,soft_prompt"]
    assert [f"{value:.4f}", "±", f"{stderr:.4f}"] in [r[6:9] for r in metric_rows]
    assert metric_rows[0][:2] == ["world_choice", "2"]


def test_command_writes_the_files_from_the_summary(run, tmp_path):
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    summary = run["root"] / "tables" / "scores.parquet"
    out = tmp_path / "lm_eval"
    metas = [str(p) for p in run["metas"]]
    args = parser.parse_args(
        ["--summary", str(summary), "--meta", *metas, "--lm-eval-dir", str(out), "--settings", json.dumps(CONFIG)]
    )
    command(args)
    data = json.loads((out / "results_parrot.json").read_text(encoding="utf-8"))
    # the workflow's files are reproducible: no time unless asked for (a rerun writes the same bytes)
    assert "date" not in data
    first = (out / "results_parrot.json").read_bytes()
    command(args)
    assert (out / "results_parrot.json").read_bytes() == first
    v = values(run, ("parrot", "base", "world_numeric", "zero_shot", None), "strict")
    assert data["results"]["world_numeric"]["strict,zero_shot"] == pytest.approx(v.mean())
    with pytest.raises(InputError, match="nothing to write"):
        command(parser.parse_args(["--summary", str(summary)]))


# ----------------------------------------------------------------------------- trackers


def leaderboard(run: dict) -> pd.DataFrame:
    """A leaderboard table with the columns build_leaderboard writes (the values of the soft prompt's
    final step; the ranks by strict accuracy, as it ranks)."""
    rows = []
    table = run["table"].query("role == 'base' and method == 'soft_prompt' and step == 80")
    for task, part in table.groupby("task"):
        for rank, row in enumerate(part.sort_values("strict", ascending=False).to_dict("records"), 1):
            entry = dict.fromkeys(BOARD_COLUMNS)
            entry |= {"task": task, "rank": rank, "place": str(rank), "model": row["model"], "n": row["n"]}
            entry |= {f"{m}{end}": row[f"{m}{end}"] for m in METRICS for end in ("", "_low", "_high")}
            entry |= {"method": "soft_prompt step 80"}
            entry |= {"flags": "", "vs_above": "separable" if rank > 1 else ""}
            rows.append(entry)
    board = pd.DataFrame(rows, columns=BOARD_COLUMNS)
    board.attrs["caption"] = "Leaderboard of base models: soft_prompt step 80"
    return board


def test_read_curves(run):
    curves = read_curves(run["root"] / "softprompts")
    assert list(curves.columns) == ["model", "role", "task", "step", "loss", "lr"]
    assert len(curves) == 6 * 80  # 3 model roles x 2 tasks x 80 steps
    first = curves.query("model == 'parrot' and task == 'world_numeric' and step == 1")
    assert first["loss"].item() == pytest.approx(1.0)


def test_tensorboard_event_files_read_back(run, tmp_path):
    pytest.importorskip("tensorboard")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    board = leaderboard(run)
    logdir = export_tensorboard(run["table"], board, tmp_path / "tb", curves=read_curves(run["root"] / "softprompts"))
    assert sorted(p.relative_to(logdir).as_posix() for p in logdir.glob("*/*") if p.is_dir()) == [
        "atlas/base",
        "atlas/post",
        "parrot/base",
    ]
    events = EventAccumulator(str(logdir / "atlas" / "base"))
    events.Reload()
    tags = set(events.Tags()["scalars"])
    assert {"strict/world_numeric/soft_prompt", "format/world_choice/zero_shot", "tune_loss/world_numeric"} <= tags
    assert "lm_eval:exact_match,strict-match/world_numeric/few_shot" in tags
    assert "options:acc/world_choice/soft_prompt" in tags
    curve = events.Scalars("format/world_numeric/soft_prompt")
    assert [e.step for e in curve] == list(STEPS)
    for event in curve:
        v = values(run, ("atlas", "base", "world_numeric", "soft_prompt", event.step), "format")
        assert event.value == pytest.approx(v.mean(), rel=1e-6)  # float32 in the event file
    (zero,) = events.Scalars("knowledge/world_choice/zero_shot")
    assert zero.step == 0
    assert zero.value == pytest.approx(
        values(run, ("atlas", "base", "world_choice", "zero_shot", None), "knowledge").mean()
    )
    loss = events.Scalars("tune_loss/world_numeric")
    assert len(loss) == 80 and loss[3].value == pytest.approx(0.5)
    mine = board.query("model == 'atlas' and task == 'world_numeric'")
    (rank,) = events.Scalars("leaderboard/world_numeric/rank")
    assert rank.value == mine["rank"].item()
    post = EventAccumulator(str(logdir / "atlas" / "post"))
    post.Reload()
    assert not any(t.startswith("leaderboard/") for t in post.Tags()["scalars"])  # base models only

    text = EventAccumulator(str(logdir / "leaderboard"))
    text.Reload()
    (tag,) = text.Tags()["tensors"]
    markdown = text.Tensors(tag)[0].tensor_proto.string_val[0].decode()
    assert markdown.startswith("Leaderboard of base models: soft_prompt step 80")
    assert "| task | rank | place | model |" in markdown and "| world_numeric | 1 |" in markdown

    again = export_tensorboard(run["table"], None, logdir)  # a rerun replaces the folder whole
    assert not (again / "leaderboard").exists()
    events = EventAccumulator(str(again / "atlas" / "base"))
    events.Reload()
    assert len(events.Scalars("format/world_numeric/soft_prompt")) == len(STEPS)


def test_command_exports_the_leaderboard_file_and_curves_to_tensorboard(run, tmp_path):
    pytest.importorskip("tensorboard")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    write_leaderboard(leaderboard(run), tmp_path / "leaderboard")
    board = read_leaderboard(tmp_path / "leaderboard.csv")
    assert board.attrs["caption"] == "Leaderboard of base models: soft_prompt step 80"
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    summary, softprompts = run["root"] / "tables" / "scores.parquet", run["root"] / "softprompts"
    args = ["--summary", str(summary), "--leaderboard", str(tmp_path / "leaderboard.csv")]
    command(parser.parse_args([*args, "--softprompts", str(softprompts), "--tensorboard-dir", str(tmp_path / "tb")]))
    events = EventAccumulator(str(tmp_path / "tb" / "parrot" / "base"))
    events.Reload()
    (rank,) = events.Scalars("leaderboard/world_choice/rank")
    assert rank.value == board.query("model == 'parrot' and task == 'world_choice'")["rank"].item()
    assert len(events.Scalars("tune_lr/world_choice")) == 80


def test_missing_tracking_packages_are_one_clear_error(run, tmp_path, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "torch.utils.tensorboard", None)
    monkeypatch.setitem(sys.modules, "wandb", None)
    with pytest.raises(InputError, match=r"softeval\[tracking\]"):
        export_tensorboard(run["table"], None, tmp_path / "tb")
    with pytest.raises(InputError, match=r"softeval\[tracking\]"):
        export_wandb(run["table"], None, tmp_path / "wb", "p", "r")
    assert not (tmp_path / "tb").exists() and not (tmp_path / "wb").exists()


# ----------------------------------------------------------------------------- Weights & Biases


def wandb_records(path: Path) -> list:
    """The records of a W&B transaction log (run-<id>.wandb): W&B's header (':W&B', 2-byte key,
    1-byte version), then LevelDB-log blocks of 32 KiB, each chunk with a 7-byte header (crc32,
    length, type: 1 full, 2 first, 3 middle, 4 last) holding a serialized wandb.proto Record."""
    from wandb.proto import wandb_internal_pb2

    data = path.read_bytes()
    assert data[:4] == b":W&B"
    block, header, pos, buffer, records = 32768, 7, 7, b"", []
    while pos + header <= len(data):
        if block - pos % block < header:  # a block's tail too short for a header is padding
            pos += block - pos % block
            continue
        _, length, kind = struct.unpack("<IHB", data[pos : pos + header])
        chunk, pos = data[pos + header : pos + header + length], pos + header + length
        if kind == 0:
            continue
        buffer = chunk if kind in (1, 2) else buffer + chunk
        if kind in (1, 4):
            record = wandb_internal_pb2.Record()
            record.ParseFromString(buffer)
            records.append(record)
    return records


def summary_of(records: list) -> dict:
    """The run's summary: its summary records' updates, in order ('/'-joined nested keys)."""
    summary = {}
    for record in records:
        if record.WhichOneof("record_type") == "summary":
            for item in record.summary.update:
                summary[item.key or "/".join(item.nested_key)] = json.loads(item.value_json)
    return summary


def history_of(records: list) -> list[dict]:
    rows = []
    for record in records:
        if record.WhichOneof("record_type") == "history":
            rows.append(
                {item.key or "/".join(item.nested_key): json.loads(item.value_json) for item in record.history.item}
            )
    return rows


@pytest.fixture
def offline_wandb(tmp_path, monkeypatch):
    """A home W&B must not touch, and no W&B variables of the user's."""
    pytest.importorskip("wandb")
    for name in list(__import__("os").environ):
        if name.startswith("WANDB_"):
            monkeypatch.delenv(name)
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CACHE_HOME", str(home / ".cache"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(home / ".local" / "share"))
    yield home
    assert not any(home.iterdir()), f"W&B wrote to the home folder: {list(home.rglob('*'))}"


def test_wandb_offline_run_reads_back(run, tmp_path, offline_wandb):
    board = leaderboard(run)
    curves = read_curves(run["root"] / "softprompts")
    folder = export_wandb(run["table"], board, tmp_path / "wandb", "softeval-test", "unit", curves=curves)
    assert folder.parent == (tmp_path / "wandb" / "wandb").resolve() and folder.name.startswith("offline-run-")
    (log,) = folder.glob("run-*.wandb")
    records = wandb_records(log)
    (start,) = [r.run for r in records if r.WhichOneof("record_type") == "run"]
    assert start.project == "softeval-test" and start.display_name == "unit"
    summary = summary_of(records)
    for unit in [
        ("atlas", "post", "world_numeric", "few_shot", None),
        ("parrot", "base", "world_choice", "soft_prompt", 80),
    ]:
        model, role, task, method, _ = unit
        for measure in ("knowledge", "format", "strict", *(f"{HARNESS[task][0]}:{n}" for n in HARNESS[task][1])):
            assert summary[f"{model}/{role}/{task}/{method}/{measure}"] == pytest.approx(
                values(run, unit, measure).mean()
            )
    mine = board.query("model == 'parrot' and task == 'world_choice'")
    assert summary["leaderboard/world_choice/parrot/rank"] == mine["rank"].item()
    assert summary["leaderboard/world_choice/parrot/strict"] == pytest.approx(mine["strict"].item())

    history = history_of(records)
    tune = {row["tune_step"]: row for row in history if "tune_step" in row}
    assert sorted(tune) == list(range(81))  # the curves' steps 0-79 and the final snapshot's 80
    key = "tune/atlas/base/world_numeric/format"
    for step in STEPS:
        expected = values(run, ("atlas", "base", "world_numeric", "soft_prompt", step), "format").mean()
        assert tune[step][key] == pytest.approx(expected)
    assert tune[3]["tune/atlas/base/world_numeric/loss"] == pytest.approx(0.5)
    assert "tune/atlas/base/world_numeric/loss" not in tune[80]

    (table_file,) = (folder / "files" / "media" / "table").glob("scores_*.table.json")
    table = json.loads(table_file.read_text(encoding="utf-8"))
    assert table["columns"] == [str(c) for c in run["table"].columns]
    assert len(table["data"]) == len(run["table"])
    rows = [dict(zip(table["columns"], r, strict=True)) for r in table["data"]]
    row = next(
        r
        for r in rows
        if (r["model"], r["role"], r["task"], r["method"], r["step"])
        == ("atlas", "base", "world_choice", "soft_prompt", 40)
    )
    assert row["strict"] == pytest.approx(
        values(run, ("atlas", "base", "world_choice", "soft_prompt", 40), "strict").mean()
    )
    assert next(r for r in rows if r["method"] == "zero_shot")["step"] is None
    (board_file,) = (folder / "files" / "media" / "table").glob("leaderboard_*.table.json")
    assert len(json.loads(board_file.read_text(encoding="utf-8"))["data"]) == len(board)


def test_lm_eval_wandb_logger_takes_the_results_file(run, tmp_path, offline_wandb):
    """lm-evaluation-harness's own W&B logger (what `lm_eval --wandb_args` runs) consumes the file."""
    import os

    import wandb
    from lm_eval.loggers import WandbLogger

    from softeval.analysis.export import wandb_environment

    (path,) = write_lm_eval_results(run["table"], tmp_path / "lm_eval", models=["parrot"], config=CONFIG)
    results = json.loads(path.read_text(encoding="utf-8"))
    with wandb_environment(tmp_path / "wb", "offline"):
        assert os.environ["WANDB_MODE"] == "offline"
        logger = WandbLogger(init_args={"project": "lm-eval", "dir": str(tmp_path / "wb"), "mode": "offline"})
        logger.post_init(results)
        logger.log_eval_result()
        folder = Path(logger.run.dir).parent
        logger.run.finish()
        wandb.teardown()  # waits for W&B's service to write the run's records (finish() may not)
    summary = summary_of(wandb_records(next(folder.glob("run-*.wandb"))))
    assert summary["world_numeric/strict,soft_prompt"] == pytest.approx(
        results["results"]["world_numeric"]["strict,soft_prompt"]
    )
    assert summary["world_choice/alias"] == "world_choice"
