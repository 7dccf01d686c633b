"""The evaluation jobs end to end on a tiny local model: files, determinism, resume, verdicts."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
import torch
from peft import PeftConfig

from softeval.analysis.review import format_example
from softeval.data.splits import prepare_task
from softeval.data.tasks import load_task
from softeval.engine import backends as generate_backends
from softeval.engine.chunks import parts_dir
from softeval.engine.softprompt import TuneSettings, load_prompt
from softeval.jobs.common import meta_path
from softeval.jobs.evaluate import MethodOutputs, TaskOutputs, run_evaluate, task_outputs
from softeval.jobs.generate import run_generate
from softeval.jobs.judge import run_judge
from softeval.jobs.loglik import run_loglik
from softeval.jobs.tune import TuneUnit, run_tune, run_tunes
from softeval.provenance import CONFIG_ENV, file_sha256
from softeval.schema import InputError
from softeval.settings import GenerateSettings, LoglikSettings
from tests.conftest import TASK_DIR

SETTINGS = GenerateSettings.parse(
    {"few_shot_k": 3, "seed": 0, "max_new_tokens": 6, "batch_size": 4, "chunk_size": 5}, "test"
)
OPTION_SETTINGS = LoglikSettings.parse({"few_shot_k": 3, "seed": 0, "batch_size": 8, "chunk_size": 5}, "test")
CONFIG = TuneSettings(steps=4, batch_size=4, snapshots=(0, 2, 4))


@pytest.fixture(scope="module")
def workspace(tmp_path_factory, world, tasks, tiny_model_dir):
    root = tmp_path_factory.mktemp("jobs")
    (root / "model").symlink_to(tiny_model_dir, target_is_directory=True)
    world.save(root / "world.json")
    for name in ("world_numeric", "world_choice"):
        prepare_task(tasks[name], root / "data" / name, root / "world.json")
    return root


def job(workspace, tasks, name, method, outs, prompt_files=None):
    return {
        "model": str(workspace / "model"),
        "task": tasks[name],
        "data_dir": workspace / "data" / name,
        "method": method,
        "prompt_files": prompt_files or {},
        "outs": outs,
        "threads": 1,
    }


def read(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def tune_numeric(workspace, tasks, out):
    return run_tune(
        model=str(workspace / "model"),
        task=tasks["world_numeric"],
        data_dir=workspace / "data" / "world_numeric",
        config=CONFIG,
        threads=1,
        out_dir=out,
    )


def test_tune_writes_the_prompt_its_snapshots_curve_meta_and_peft_adapter(workspace, tasks):
    out = workspace / "sp"
    meta = tune_numeric(workspace, tasks, out)
    vectors, stored = load_prompt(out / "prompt.safetensors")
    assert vectors.shape == (10, 32) and stored["step"] == 4
    assert torch.equal(load_prompt(out / "step4.safetensors")[0], vectors)
    assert not torch.equal(load_prompt(out / "step0.safetensors")[0], vectors)
    curve = (out / "curve.csv").read_text().splitlines()
    assert curve[0] == "step,loss,lr" and len(curve) == 1 + 4
    assert meta["task_version"] == 1 and meta["revision"].startswith("sha256:") and meta["snapshots"] == [0, 2, 4]
    assert json.loads((out / "meta.json").read_text())["final_loss"] == pytest.approx(meta["final_loss"])
    assert PeftConfig.from_pretrained(str(out / "peft")).num_virtual_tokens == 10
    again = workspace / "sp-again"
    tune_numeric(workspace, tasks, again)
    assert (again / "prompt.safetensors").read_bytes() == (out / "prompt.safetensors").read_bytes()


def test_one_tune_job_for_several_tasks_writes_what_a_job_per_task_writes(workspace, tasks):
    """The workflow's tune job loads the model once for every task: each task's files are those of
    a job of its own (the second task's prompt does not depend on the first's training)."""
    names = ["world_choice", "world_numeric"]  # world_numeric second: its prompt follows another's
    units = [TuneUnit(tasks[n], workspace / "data" / n, workspace / "together" / n) for n in names]
    metas = run_tunes(model=str(workspace / "model"), units=units, config=CONFIG, threads=1)
    assert [m["task"] for m in metas] == names and all(m["model_load_seconds"] >= 0 for m in metas)
    for name in names:
        alone = workspace / "alone" / name
        run_tune(
            model=str(workspace / "model"),
            task=tasks[name],
            data_dir=workspace / "data" / name,
            config=CONFIG,
            threads=1,
            out_dir=alone,
        )
        together = workspace / "together" / name
        files = sorted(p.relative_to(alone) for p in alone.rglob("*") if p.is_file())
        assert files == sorted(p.relative_to(together) for p in together.rglob("*") if p.is_file())
        for rel in files:
            if rel.name != "meta.json":  # its timing fields differ
                assert (together / rel).read_bytes() == (alone / rel).read_bytes(), (name, rel)
        timing = {"wall_seconds", "tune_seconds", "model_load_seconds"}
        alone_meta, together_meta = (
            {k: v for k, v in json.loads((d / "meta.json").read_text()).items() if k not in timing}
            for d in (alone, together)
        )
        assert alone_meta == together_meta


@pytest.mark.parametrize("method", ["zero_shot", "few_shot"])
def test_generation_rows_cover_the_test_split(workspace, tasks, method):
    out = workspace / f"gen-{method}.jsonl"
    run_generate(settings=SETTINGS, **job(workspace, tasks, "world_numeric", method, {None: out}))
    rows = read(out)
    test = read(workspace / "data" / "world_numeric" / "test.jsonl")
    assert [r["id"] for r in rows] == [e["id"] for e in test]
    assert {r["stop_reason"] for r in rows} <= {"eos", "stop", "length"}
    assert all(r["method"] == method and r["step"] is None and 1 <= r["new_tokens"] <= 6 for r in rows)
    shots = rows[0]["prompt"].count("Answer: ####")
    assert shots == (3 if method == "few_shot" else 0)
    assert json.loads(out.with_name(out.stem + ".meta.json").read_text())["params"]["method"] == method


def test_generation_resumes_after_a_kill_with_the_same_file(workspace, tasks, monkeypatch):
    whole = workspace / "whole.jsonl"
    run_generate(settings=SETTINGS, **job(workspace, tasks, "world_numeric", "few_shot", {None: whole}))

    from softeval.engine import chunks as chunk_files

    real_write = chunk_files.atomic_write_jsonl
    writes = []

    def dies_on_second_chunk(path, rows):
        writes.append(path)
        if len(writes) == 2:
            raise KeyboardInterrupt  # as if the job were killed mid-run
        return real_write(path, rows)

    out = workspace / "killed.jsonl"
    monkeypatch.setattr(chunk_files, "atomic_write_jsonl", dies_on_second_chunk)
    with pytest.raises(KeyboardInterrupt):
        run_generate(settings=SETTINGS, **job(workspace, tasks, "world_numeric", "few_shot", {None: out}))
    assert not out.exists() and len(list(parts_dir(out).glob("0*.jsonl"))) == 1
    monkeypatch.setattr(chunk_files, "atomic_write_jsonl", real_write)
    real = generate_backends.iter_greedy
    in_flight = []

    def counted(model, tokenizer, prompts, **kwargs):
        in_flight.append(len(prompts))
        return real(model, tokenizer, prompts, **kwargs)

    monkeypatch.setattr(generate_backends, "iter_greedy", counted)
    run_generate(settings=SETTINGS, **job(workspace, tasks, "world_numeric", "few_shot", {None: out}))
    assert out.read_bytes() == whole.read_bytes()
    # 15 test examples, chunks of 5: the two missing chunks' 10 rows in flight together, the saved
    # chunk's 5 not redone
    assert in_flight == [10]


def test_judge_takes_closed_knowledge_from_option_likelihoods(workspace, tasks):
    name = "world_choice"
    generation, loglik, scores = (workspace / f"{kind}-choice.jsonl" for kind in ("gen", "ll", "scores"))
    run_generate(settings=SETTINGS, **job(workspace, tasks, name, "zero_shot", {None: generation}))
    run_loglik(settings=OPTION_SETTINGS, **job(workspace, tasks, name, "zero_shot", {None: loglik}))
    run_judge(
        task=tasks[name],
        data_dir=workspace / "data" / name,
        settings="rule",
        generations=[generation],
        logliks=[loglik],
        outs=[scores],
    )
    options, verdicts = read(loglik), read(scores)
    assert len(options) == len(verdicts) == 15
    for o, v in zip(options, verdicts, strict=True):
        assert len(o["logliks"]) == len(o["options"]) == 4 and o["ranking"][0] == o["chosen"]
        assert v["knowledge"] == (o["chosen"] == o["label"]) and v["knowledge_from"] == "loglik"
        assert v["strict"] <= v["format"]


def test_soft_prompt_generation_writes_one_file_per_step(workspace, tasks):
    prompts = {step: workspace / "sp" / f"step{step}.safetensors" for step in (0, 4)}
    outs = {step: workspace / f"sp-step{step}.jsonl" for step in (0, 4)}
    run_generate(settings=SETTINGS, **job(workspace, tasks, "world_numeric", "soft_prompt", outs, prompts))
    for step, out in outs.items():
        assert {r["step"] for r in read(out)} == {step}


def test_a_failed_job_leaves_no_provenance_beside_missing_outputs(workspace, tasks, monkeypatch):
    """The soft-prompt job writes one file per step; dying at the second leaves no .meta.json,
    not the first step's new one nor an old one from an earlier run."""
    prompts = {step: workspace / "sp" / f"step{step}.safetensors" for step in (0, 4)}
    if not prompts[0].exists():
        tune_numeric(workspace, tasks, workspace / "sp")
    outs = {step: workspace / f"fail-step{step}.jsonl" for step in (0, 4)}
    old = workspace / "fail-step4.meta.json"
    old.write_text("{}")
    real = generate_backends.iter_greedy

    def dies_at_step_four(model, tokenizer, prompts_, vectors=None, **kwargs):
        if vectors is not None and not torch.equal(vectors, load_prompt(prompts[0])[0]):
            raise RuntimeError("killed")
        return real(model, tokenizer, prompts_, vectors=vectors, **kwargs)

    monkeypatch.setattr(generate_backends, "iter_greedy", dies_at_step_four)
    with pytest.raises(RuntimeError, match="killed"):
        run_generate(settings=SETTINGS, **job(workspace, tasks, "world_numeric", "soft_prompt", outs, prompts))
    assert outs[0].exists() and not outs[4].exists()  # Snakemake removes outs[0] as a failed job's output
    assert sorted(workspace.glob("fail-step*.meta.json")) == []
    monkeypatch.setattr(generate_backends, "iter_greedy", real)
    run_generate(settings=SETTINGS, **job(workspace, tasks, "world_numeric", "soft_prompt", outs, prompts))
    assert sorted(p.name for p in workspace.glob("fail-step*.meta.json")) == [f"fail-step{s}.meta.json" for s in (0, 4)]


def method_files(workspace, folder, methods, steps, closed=True):
    keys = list(steps) or [None]
    return [
        MethodOutputs(
            method,
            {k: folder / f"gen-{method}-{k}.jsonl" for k in keys},
            {k: folder / f"ll-{method}-{k}.jsonl" for k in keys} if closed else {},
            {k: workspace / "sp" / f"step{k}.safetensors" for k in steps},
        )
        for method in methods
    ]


def evaluate_tasks(workspace, tasks, folder, names, methods, steps=(), subfolders=True):
    """One `evaluate` job over these tasks: responses and, on world_choice (closed), option
    log-likelihoods; each task's files in folder/<task>/ (or in `folder` itself)."""
    outputs = []
    for name in names:
        where = folder / name if subfolders else folder
        where.mkdir(parents=True, exist_ok=True)
        files = method_files(workspace, where, methods, steps, closed=tasks[name].closed)
        outputs.append(TaskOutputs(tasks[name], workspace / "data" / name, files))
    run_evaluate(
        model=str(workspace / "model"),
        tasks=outputs,
        generate_settings=SETTINGS,
        loglik_settings=OPTION_SETTINGS,
        threads=1,
    )
    return outputs


def evaluate_unit(workspace, tasks, folder, methods, steps=()):
    """One `evaluate` job over world_choice (closed) alone, its files in `folder`."""
    (out,) = evaluate_tasks(workspace, tasks, folder, ["world_choice"], methods, steps, subfolders=False)
    return out.methods


@pytest.mark.parametrize("soft", [False, True])
def test_one_evaluate_job_writes_the_files_of_one_job_per_method(workspace, tasks, soft):
    """The workflow's evaluate job (model loaded once, both kinds of output, several methods)
    writes byte for byte what separate generate and loglik jobs write, provenance included."""
    if soft and not (workspace / "sp" / "step4.safetensors").exists():
        tune_numeric(workspace, tasks, workspace / "sp")
    methods, steps = (["soft_prompt"], (0, 4)) if soft else (["zero_shot", "few_shot"], ())
    together = evaluate_unit(workspace, tasks, workspace / f"together-{soft}", methods, steps)
    for m in together:
        alone = {
            kind: {k: p.with_name("alone-" + p.name) for k, p in outs.items()}
            for kind, outs in (("gen", m.generations), ("ll", m.logliks))
        }
        spec = job(workspace, tasks, "world_choice", m.method, alone["gen"], m.prompt_files)
        run_generate(settings=SETTINGS, **spec)
        run_loglik(settings=OPTION_SETTINGS, **{**spec, "outs": alone["ll"]})
        for mine, theirs in [
            *zip(m.generations.values(), alone["gen"].values(), strict=True),
            *zip(m.logliks.values(), alone["ll"].values(), strict=True),
        ]:
            assert mine.read_bytes() == theirs.read_bytes()
            assert meta_path(mine).read_bytes() == meta_path(theirs).read_bytes()


def test_one_evaluate_job_over_several_tasks_writes_what_a_job_per_task_writes(workspace, tasks):
    """The workflow's evaluate job covers every task of a model x role: each task's files,
    provenance included, are those of a job of its own (nothing carries over between tasks)."""
    names = ["world_choice", "world_numeric"]
    together = evaluate_tasks(workspace, tasks, workspace / "multi", names, ["zero_shot", "few_shot"])
    for out in together:
        (alone,) = evaluate_tasks(workspace, tasks, workspace / "single", [out.task.name], ["zero_shot", "few_shot"])
        pairs = [
            (mine, theirs)
            for m, a in zip(out.methods, alone.methods, strict=True)
            for kind in ("generations", "logliks")
            for mine, theirs in zip(getattr(m, kind).values(), getattr(a, kind).values(), strict=True)
        ]
        assert len(pairs) == (4 if out.task.closed else 2)
        for mine, theirs in pairs:
            assert mine.read_bytes() == theirs.read_bytes() and read(mine)
            assert meta_path(mine).read_bytes() == meta_path(theirs).read_bytes()


def test_the_evaluate_flags_are_cut_task_by_task(tasks):
    """--generations per task in --task order, --logliks for the closed tasks only; a count that
    does not divide is one error naming what to give."""
    names = [tasks["world_choice"], tasks["world_numeric"]]
    data = [Path("d/choice"), Path("d/numeric")]
    gens = ["c-zs", "c-fs", "n-zs", "n-fs"]
    cut = task_outputs(names, data, ["zero_shot", "few_shot"], [], [], gens, ["c-zs-ll", "c-fs-ll"])
    assert [t.task.name for t in cut] == ["world_choice", "world_numeric"]
    assert [str(m.generations[None]) for m in cut[1].methods] == ["n-zs", "n-fs"]
    assert [str(m.logliks[None]) for m in cut[0].methods] == ["c-zs-ll", "c-fs-ll"] and cut[1].methods[0].logliks == {}
    soft = task_outputs(names, data, ["soft_prompt"], [0, 4], ["c0", "c4", "n0", "n4"], gens, [])
    assert {k: str(v) for k, v in soft[1].methods[0].prompt_files.items()} == {0: "n0", 4: "n4"}
    too_many = r"5 --generations files for 2 tasks; give 2 per task \(one per --methods value\)"
    with pytest.raises(InputError, match=too_many):
        task_outputs(names, data, ["zero_shot", "few_shot"], [], [], [*gens, "x"], [])
    with pytest.raises(InputError, match=r"give 2 per closed task \(world_choice\)"):
        task_outputs(names, data, ["zero_shot", "few_shot"], [], [], gens, ["a", "b", "c", "d"])


def test_a_failed_evaluate_job_leaves_no_provenance(workspace, tasks, monkeypatch):
    """Dying in the few-shot generations, after the option files and zero-shot responses are
    written, leaves no .meta.json at all (Snakemake removes the job's outputs)."""
    real = generate_backends.iter_greedy

    def dies_on_few_shot(model, tokenizer, prompts_, **kwargs):
        if kwargs.get("shared_prefix", "").count("Answer") > 1:  # the shots are in the prefix
            raise RuntimeError("killed")
        return real(model, tokenizer, prompts_, **kwargs)

    monkeypatch.setattr(generate_backends, "iter_greedy", dies_on_few_shot)
    folder = workspace / "failed"
    with pytest.raises(RuntimeError, match="killed"):
        evaluate_unit(workspace, tasks, folder, ["zero_shot", "few_shot"])
    assert (folder / "gen-zero_shot-None.jsonl").exists() and (folder / "ll-few_shot-None.jsonl").exists()
    assert sorted(folder.glob("*.meta.json")) == []


def test_a_truncated_generation_file_is_named(workspace, tasks):
    broken = workspace / "broken.jsonl"
    broken.write_text(json.dumps({"id": "x", "response": "1"}) + "\n")
    with pytest.raises(InputError, match=r"broken\.jsonl: generation rows do not match"):
        run_judge(
            task=tasks["world_numeric"],
            data_dir=workspace / "data" / "world_numeric",
            settings="rule",
            generations=[broken],
            logliks=[],
            outs=[workspace / "never.jsonl"],
        )


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["aggregate", "--scores-root", "r", "--scores", "x", "--settings", "{bootstrap: 10}"], "not valid JSON"),
        (["tables", "--summary", "s", "--scores-root", "r", "--out-dir", "o", "--settings", "[1, 2]"], "not list"),
        (["judge", "validate", "--settings", '{"name": "rule"'], "not valid JSON"),
    ],
)
def test_a_malformed_params_argument_is_one_line(capsys, argv, expected):
    from softeval.cli import main

    with pytest.raises(SystemExit) as info:
        main(argv)
    assert info.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert "argument --settings" in err[-1] and expected in err[-1] and "Traceback" not in "\n".join(err)


def test_judge_passes_stop_reasons_and_records_degenerate_responses(tmp_path):
    """A response of colons cut at its token budget is degenerate: not formatted, whatever the
    TriviaQA pattern says (it accepts colons), and the score row names why (issue 39)."""
    task = load_task(TASK_DIR, "triviaqa")
    examples = [
        {"id": f"t{i}", "question": "What is the capital of Germany?", "answer": "Berlin", "aliases": []}
        for i in range(3)
    ]
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "test.jsonl").write_text("".join(json.dumps(e) + "\n" for e in examples))
    answers = [(" Berlin", "stop"), (" " + ":" * 32, "length"), (" Berlin", None)]  # None: an older file
    generation = tmp_path / "gen.jsonl"
    generation.write_text(
        "".join(
            json.dumps(
                {"id": e["id"], "method": "zero_shot", "step": None, "response": response}
                | {"harness_response": response}  # TriviaQA also has lm-evaluation-harness's scores
                | ({"stop_reason": stop} if stop else {})
            )
            + "\n"
            for e, (response, stop) in zip(examples, answers, strict=True)
        )
    )
    assert task.is_formatted(answers[1][0], examples[1])  # the pattern alone is fooled
    out = tmp_path / "scores.jsonl"
    run_judge(task=task, data_dir=tmp_path / "data", settings="rule", generations=[generation], logliks=[], outs=[out])
    rows = read(out)
    assert [(r["knowledge"], r["format"], r["strict"]) for r in rows] == [
        (True, True, True),
        (False, False, False),
        (True, True, True),
    ]
    assert [r["degenerate"] for r in rows] == [
        None,
        "cut at its token budget (stop: length) before giving an answer",
        None,
    ]
    # the review shows the reason beside the format verdict
    assert "format=no (degenerate: cut at its token budget (stop: length) before giving an answer)," in (
        format_example(rows[1])
    )
    assert "knowledge=yes, format=yes, strict=yes;" in format_example(rows[0])


def test_provenance_names_the_code_config_machine_and_the_files_read(workspace, tasks, monkeypatch, tmp_path):
    """A reviewer's questions, each one field: which commit (and was the tree dirty), which config
    file (its sha256), which machine; which soft-prompt file a generation loaded (its sha256);
    which judge, task scoring rules and generations a scores file came from (issue 42)."""
    config_file = tmp_path / "my.yaml"
    config_file.write_text("seed: 0\n")
    record = json.dumps({"files": [{"path": str(config_file), "sha256": file_sha256(config_file)}], "overrides": {}})
    monkeypatch.setenv(CONFIG_ENV, record)
    out = workspace / "sp-provenance"
    meta = tune_numeric(workspace, tasks, out)
    run = meta["run"]
    assert run["config"] == json.loads(record) and run["machine"]["cpu"] and run["machine"]["cores"] >= 1
    assert len(run["code"]["commit"]) == 40 and isinstance(run["code"]["dirty"], bool)
    # the tensor file's bytes hold no commit, config or machine: equal prompts stay equal bytes
    assert "run" not in load_prompt(out / "prompt.safetensors")[1]
    generation = workspace / "provenance-step4.jsonl"
    prompts = {4: out / "step4.safetensors"}
    run_generate(settings=SETTINGS, **job(workspace, tasks, "world_numeric", "soft_prompt", {4: generation}, prompts))
    loaded = json.loads(meta_path(generation).read_text())["soft_prompt_file"]
    assert loaded == {"path": str(prompts[4]), "sha256": hashlib.sha256(prompts[4].read_bytes()).hexdigest()}
    scores = workspace / "provenance-scores.jsonl"
    run_judge(
        task=tasks["world_numeric"],
        data_dir=workspace / "data" / "world_numeric",
        settings="rule",
        generations=[generation],
        logliks=[],
        outs=[scores],
    )
    # each row names the country it asks about: the item the analysis resamples across tasks
    test = [json.loads(line) for line in (workspace / "data" / "world_numeric" / "test.jsonl").read_text().splitlines()]
    assert [row["entity"] for row in read(scores)] == [example["entity"] for example in test]
    params = json.loads(meta_path(scores).read_text())["params"]
    assert params["judge"] == {"name": "rule"} and params["task_version"] == tasks["world_numeric"].version
    assert params["generations_sha256"] == hashlib.sha256(generation.read_bytes()).hexdigest()
    assert len(params["scoring_sha256"]) == 64
