"""Bad input, as a hostile but fair user gives it: every case stops with exit status 2 and one
line that names the file (or key) and the fix, and changes no result already computed.

Each case builds its bad input in a fresh folder beside a finished set of results and runs the
command line in process (`softeval.cli.main`); config and task-file cases run `check-config`,
which the workflow runs at planning time (tests/workflow/test_workflow.py runs some through snakemake).
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
import torch
import yaml
from safetensors.torch import load_file, save_file

from softeval.cli import main
from softeval.data.splits import prepare_task
from softeval.engine.softprompt import save_prompt
from tests.conftest import ROOT
from tests.kill import results_digest

TINY = ROOT / "tests" / "configs" / "tiny.yaml"
GENERATE = {"few_shot_k": 3, "seed": 0, "max_new_tokens": 4, "batch_size": 4, "chunk_size": 5}
OWN_TASK = {
    "name": "capitals",
    "version": 1,
    "kind": "open",
    "description": "My capitals",
    "dataset": {
        "source": "local",
        "files": {"train": "train.jsonl", "test": "test.jsonl"},
        "fields": {"id": "id", "question": "question", "answer": "answer"},
    },
    "prompt": {"instruction": "Answer.", "query": "Q: {question}\nA:", "target": " {answer}"},
    "format": {"description": "phrase", "pattern": "\\S.*"},
    "answer": {"extract": "^(.*)$", "type": "span"},
}
GOOD_ROWS = [{"id": "a", "question": "Capital of France?", "answer": "Paris"}]


@dataclass
class Bench:
    """A finished set of results, and the inputs the cases spoil copies of."""

    root: Path  # results/ of a tiny run: nothing in it may change
    tasks: Path
    data: Path  # prepared splits of world_numeric and world_choice
    model: Path
    prompt: Path
    case: Path  # the current case's own folder

    def config(self, edit: Callable[[dict], object] | None = None, text: bytes | str | None = None) -> list[str]:
        config = yaml.safe_load(TINY.read_text())
        if edit:
            edit(config)
        path = self.case / "bad.yaml"
        text = text if text is not None else yaml.safe_dump(config)
        path.write_bytes(text if isinstance(text, bytes) else text.encode())
        return ["check-config", str(path), "--workflow-root", str(ROOT)]

    def checkpoint(
        self, spoil: Callable[[Path], object] | None = None, model_id: str | None = None, **entry
    ) -> list[str]:
        """check-config of a checkpoint entry whose base model is `model_id`, or a copy of the tiny
        model spoilt by `spoil`."""
        if model_id is None:
            model_id = str(self.model_copy(spoil or (lambda model: None)))
        mine = {"name": "mine", "base": {"id": model_id}, "post": {"id": str(self.model)}, **entry}
        return self.config(lambda c: c.update(models=[mine]))

    def plan_cost(self, argv: list[str]) -> list[str]:
        """`plan-cost` of the config that `argv` (a check-config command line) checks."""
        return ["plan-cost", "--configfile", argv[1], "--workflow-root", str(ROOT)]

    def task_dir(self, name: str, edit: Callable[[dict], object] | None = None, text: str | None = None) -> list[str]:
        tasks = self.case / "tasks"
        shutil.copytree(self.tasks, tasks)
        if edit:
            data = yaml.safe_load((tasks / f"{name}.yaml").read_text())
            edit(data)
            (tasks / f"{name}.yaml").write_text(yaml.safe_dump(data))
        if text is not None:
            (tasks / f"{name}.yaml").write_bytes(text.encode("latin-1"))
        return self.config(lambda c: c.update(task_dir=str(tasks)))

    def own_task(self, test: bytes | str | None = None, edit: Callable[[dict], object] | None = None) -> list[str]:
        """`prepare` of a local task whose test file is `test`."""
        task = json.loads(json.dumps(OWN_TASK))
        if edit:
            edit(task)
        (self.case / "capitals.yaml").write_text(yaml.safe_dump(task))
        (self.case / "train.jsonl").write_text("".join(json.dumps(r) + "\n" for r in GOOD_ROWS))
        test = test if test is not None else "".join(json.dumps(r) + "\n" for r in GOOD_ROWS)
        (self.case / "test.jsonl").write_bytes(test if isinstance(test, bytes) else test.encode())
        out = self.root / "data" / "capitals"
        return ["prepare", "--task", str(self.case / "capitals.yaml"), "--out", str(out)]

    def task_args(self, task: str) -> list[str]:
        return ["--task", str(self.tasks / f"{task}.yaml"), "--data", str(self.data / task)]

    def job(
        self,
        model: Path | str | None = None,
        settings: dict | None = None,
        loglik: dict | None = None,
        methods: str = "zero_shot",
        **extra,
    ) -> list[str]:
        """An evaluate job on world_numeric writing into results/; given `loglik` settings, on
        world_choice with its option log-likelihoods too."""
        task = "world_choice" if loglik is not None else "world_numeric"
        out = self.root / "evaluate" / task
        argv = ["evaluate", "--model", str(model or self.model), *self.task_args(task), "--methods", methods]
        argv += ["--generate-settings", json.dumps(settings or GENERATE), "--generations", str(out / "g.jsonl")]
        if loglik is not None:
            argv += ["--loglik-settings", json.dumps(loglik), "--logliks", str(out / "l.jsonl")]
        for key, value in extra.items():
            argv += [f"--{key.replace('_', '-')}", *([value] if isinstance(value, str) else value)]
        return argv

    def soft_prompt(self, vectors: torch.Tensor | None = None, raw: bytes | None = None) -> list[str]:
        path = self.case / "step4.safetensors"
        if raw is not None:
            path.write_bytes(raw)
        elif vectors is not None:
            save_prompt(path, vectors, {"step": 4})
        return self.job(methods="soft_prompt", steps=["4"], prompts=[str(path)])

    def model_copy(self, spoil: Callable[[Path], object]) -> Path:
        model = self.case / "model"
        shutil.copytree(self.model, model)
        spoil(model)
        return model

    def scores(self, lines: str) -> list[str]:
        root = self.case / "scores"
        (root / "alpha" / "base" / "world_numeric").mkdir(parents=True)
        path = root / "alpha" / "base" / "world_numeric" / "zero_shot.jsonl"
        path.write_text(lines)
        out = self.root / "tables"
        argv = [
            "aggregate",
            "--scores-root",
            str(root),
            "--scores",
            str(path),
            "--settings",
            '{"bootstrap": 10, "seed": 0}',
        ]
        return [*argv, "--out-csv", str(out / "s.csv"), "--out-parquet", str(out / "s.parquet")]


def with_nan(model: Path) -> None:
    weights = load_file(model / "model.safetensors")
    name = sorted(weights)[0]
    weights[name][0] = float("nan")
    save_file(weights, model / "model.safetensors", metadata={"format": "pt"})


def truncate(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


# (id, how to build the bad input, what the one error line must contain)
CASES: list[tuple[str, Callable[[Bench], list[str]], tuple[str, ...]]] = [
    # ---- config files ----
    (
        "config-unknown-key",
        lambda b: b.config(lambda c: c["zoo"]["pretrain"].update(stepz=3)),
        ("bad.yaml", "zoo.pretrain.stepz"),
    ),
    ("config-unknown-top-level-key", lambda b: b.config(lambda c: c.update(modles=[])), ("bad.yaml", "modles")),
    (
        "config-wrong-type",
        lambda b: b.config(lambda c: c["world"].update(n_entities="many")),
        ("bad.yaml", "world.n_entities", "integer"),
    ),
    ("config-unknown-task", lambda b: b.config(lambda c: c["tasks"].append("gsm9k")), ("bad.yaml", "gsm9k")),
    (
        "config-model-name-is-a-path",
        lambda b: b.config(lambda c: c["models"][0].update(name="../evil")),
        ("bad.yaml", "../evil"),
    ),
    ("config-duplicate-model", lambda b: b.config(lambda c: c["models"].append(c["models"][0])), ("bad.yaml", "atlas")),
    (
        "config-unknown-size",
        lambda b: b.config(lambda c: c["models"][0]["zoo"].update(size="huge")),
        ("bad.yaml", "huge"),
    ),
    (
        "config-snapshot-past-the-end",
        lambda b: b.config(lambda c: c["evaluation"]["tune"].update(snapshots=[0, 99])),
        ("bad.yaml", "evaluation.tune.snapshots", "99"),
    ),
    (
        "config-negative-steps",
        lambda b: b.config(lambda c: c["evaluation"]["tune"].update(steps=-1)),
        ("bad.yaml", "evaluation.tune.steps"),
    ),
    (
        "config-remote-code-as-text",
        lambda b: b.config(lambda c: c["models"][0].update(trust_remote_code="yes")),
        ("bad.yaml", "trust_remote_code"),
    ),
    ("config-no-tasks", lambda b: b.config(lambda c: c.update(tasks=[])), ("bad.yaml", "tasks")),
    ("config-bad-yaml", lambda b: b.config(text="tasks: [world_numeric\n"), ("bad.yaml", "YAML", "fix")),
    ("config-not-utf8", lambda b: b.config(text="seed: 3\n# caf\xe9\n".encode("latin-1")), ("bad.yaml", "UTF-8")),
    ("config-missing-file", lambda b: ["check-config", str(b.case / "nope.yaml")], ("nope.yaml", "not found")),
    ("config-missing-task-dir", lambda b: b.config(lambda c: c.update(task_dir=str(b.case / "nowhere"))), ("nowhere",)),
    # ---- config files: what would fail only after GPU time (issue 39, item 5) ----
    (
        "config-reference-method-not-evaluated",
        lambda b: b.config(
            lambda c: (
                c["evaluation"].update(methods=["soft_prompt"]),
                c.update(analysis={"reference_method": "zero_shot"}),
            )
        ),
        (
            "bad.yaml: key 'analysis.reference_method' is 'zero_shot' but evaluation.methods evaluates only "
            "soft_prompt; set analysis.reference_method to soft_prompt",
            "or add zero_shot to evaluation.methods",
        ),
    ),
    (
        "config-published-record-missing",
        lambda b: b.config(lambda c: c.update(analysis={"published": str(b.case / "nope.yaml")})),
        ("bad.yaml: key 'analysis.published'", "nope.yaml does not exist", "publish-ranges"),
    ),
    (
        "checkpoint-folder-missing",
        lambda b: b.checkpoint(model_id=str(b.case / "nope")),
        ("bad.yaml: key 'models[0].base.id'", "nope': no such folder", "config.json and weights, or a hub id"),
    ),
    (
        "checkpoint-not-a-model-folder",
        lambda b: b.checkpoint(model_id=str(b.case)),
        ("bad.yaml: key 'models[0].base.id'", "no config.json there", "give the folder that holds"),
    ),
    (
        "checkpoint-no-weights",
        lambda b: b.checkpoint(lambda m: (m / "model.safetensors").unlink()),
        ("bad.yaml: key 'models[0].base.id'", "no weights there (model.safetensors", "copy the checkpoint's weight"),
    ),
    (
        "checkpoint-bin-weights-only",
        lambda b: b.checkpoint(lambda m: (m / "model.safetensors").rename(m / "pytorch_model.bin")),
        ("bad.yaml: key 'models[0].base.id'", "only .bin weights there", "set models[0].bin_weights: true"),
    ),
    (
        "checkpoint-shard-missing",
        lambda b: b.checkpoint(
            lambda m: (
                (m / "model.safetensors").rename(m / "model-1.safetensors"),
                (m / "model.safetensors.index.json").write_text(
                    json.dumps({"weight_map": {"a": "model-1.safetensors", "b": "model-2.safetensors"}})
                ),
            )
        ),
        (
            "bad.yaml: key 'models[0].base.id'",
            "lists model-2.safetensors, which is not there",
            "download the checkpoint",
        ),
    ),
    (
        "checkpoint-bare-name",
        lambda b: b.checkpoint(model_id="llama7b"),
        ("bad.yaml: key 'models[0].base.id' is 'llama7b'", "nor a hub id owner/name", "write the hub id"),
    ),
    (
        "checkpoint-hub-id-invalid",
        lambda b: b.checkpoint(model_id="owner/na--me"),
        ("bad.yaml: key 'models[0].base.id' is 'owner/na--me'", "not a valid hub id"),
    ),
    (
        "plan-cost-checkpoint-missing",
        lambda b: b.plan_cost(b.checkpoint(model_id=str(b.case / "nope"))),
        ("bad.yaml: key 'models[0].base.id'", "no such folder"),
    ),
    (
        "plan-cost-checkpoint-config-not-json",
        lambda b: b.plan_cost(b.checkpoint(lambda m: (m / "config.json").write_text("{"))),
        ("bad.yaml: key 'models[0].base.id'", "config.json there is not valid JSON"),
    ),
    # ---- task files ----
    (
        "task-missing-field",
        lambda b: b.task_dir("world_choice", lambda t: t["answer"].pop("extract")),
        ("world_choice.yaml", "answer.extract"),
    ),
    (
        "task-unknown-placeholder",
        lambda b: b.task_dir("world_numeric", lambda t: t["prompt"].update(query="Q: {question} {foo}")),
        ("world_numeric.yaml", "foo"),
    ),
    (
        "task-bad-regex",
        lambda b: b.task_dir("world_numeric", lambda t: t["answer"].update(extract="([0-9")),
        ("world_numeric.yaml", "answer.extract"),
    ),
    (
        "task-not-utf8",
        lambda b: b.task_dir("world_numeric", text="name: world_numeric\n# caf\xe9\n"),
        ("world_numeric.yaml", "UTF-8"),
    ),
    (
        "task-bad-yaml",
        lambda b: b.task_dir("world_numeric", text="name: [world_numeric\n"),
        ("world_numeric.yaml", "YAML"),
    ),
    # ---- data files ----
    (
        "data-broken-line",
        lambda b: b.own_task('{"id": "a", "question": "Q?", "answer": "A"}\n{"id": "b", "quest\n'),
        ("test.jsonl", "cannot read"),
    ),
    ("data-empty-file", lambda b: b.own_task(""), ("test.jsonl", "empty")),
    ("data-missing-field", lambda b: b.own_task('{"id": "a", "q": "Q?", "answer": "A"}\n'), ("test.jsonl", "question")),
    (
        "data-duplicate-id",
        lambda b: b.own_task("".join(json.dumps(GOOD_ROWS[0]) + "\n" for _ in range(2))),
        ("test", "'a'"),
    ),
    ("data-not-utf8", lambda b: b.own_task(b'{"id": "a", "question": "caf\xe9?", "answer": "A"}\n'), ("test.jsonl",)),
    (
        "data-no-mirror",
        lambda b: [
            "prepare",
            "--task",
            str(ROOT / "config" / "tasks" / "gsm8k.yaml"),
            "--source",
            "mirror",
            "--mirror",
            str(b.case),
            "--out",
            str(b.root / "data" / "g"),
        ],
        ("gsm8k",),
    ),
    # ---- models ----
    (
        "model-no-such-path",
        lambda b: b.job(model="no/such/dir"),
        ("no/such/dir", "fix the model's id"),
    ),
    ("model-not-a-model-dir", lambda b: b.job(model=str(b.case)), ("config.json",)),
    (
        "model-truncated-weights",
        lambda b: b.job(b.model_copy(lambda m: truncate(m / "model.safetensors"))),
        ("model", "download or convert it again"),
    ),
    (
        "model-nan-weights",
        lambda b: b.job(b.model_copy(with_nan)),
        ("non-finite", "replace it"),
    ),
    (
        "model-unknown-option",
        lambda b: b.job(model_options='{"dtpye": "float32"}'),
        ("dtpye",),
    ),
    (
        "model-unknown-dtype",
        lambda b: b.job(model_options='{"dtype": "float8"}'),
        ("float8",),
    ),
    # ---- soft prompts ----
    ("prompt-nan", lambda b: b.soft_prompt(torch.full((10, 32), float("nan"))), ("step4.safetensors", "delete it")),
    ("prompt-wrong-width", lambda b: b.soft_prompt(torch.zeros(10, 16)), ("step4.safetensors", "16")),
    ("prompt-not-safetensors", lambda b: b.soft_prompt(raw=b"garbage" * 10), ("step4.safetensors", "delete it")),
    ("prompt-missing", lambda b: b.soft_prompt(), ("step4.safetensors",)),
    (
        "prompt-steps-and-files-disagree",
        lambda b: [*b.soft_prompt(torch.zeros(10, 32)), "--steps", "4", "8"],
        ("--steps",),
    ),
    # ---- judges ----
    ("judge-unknown", lambda b: ["judge", "validate", "--settings", '{"name": "oracle"}'], ("oracle",)),
    (
        "judge-key-not-set",
        lambda b: [
            "judge",
            "validate",
            "--settings",
            json.dumps(
                {
                    "name": "openai",
                    "base_url": "http://127.0.0.1:9/v1",
                    "model": "m",
                    "api_key_env": "SOFTEVAL_NO_SUCH_KEY",
                    "prompts": str(ROOT / "config" / "judges" / "default.yaml"),
                    "cache": str(b.case / "c.sqlite"),
                }
            ),
        ],
        ("SOFTEVAL_NO_SUCH_KEY",),
    ),
    (
        "judge-validation-broken-line",
        lambda b: (
            (b.case / "v.jsonl").write_text("{not json\n")
            and ["judge", "validate", "--validation", str(b.case / "v.jsonl"), "--task-dir", str(b.tasks)]
        ),
        ("v.jsonl:1", "fix the line"),
    ),
    (
        "judge-truncated-generations",
        lambda b: (
            (b.case / "g.jsonl").write_text('{"id": "x"}\n')
            and [
                "judge",
                "run",
                *b.task_args("world_numeric"),
                "--settings",
                '{"name": "rule"}',
                "--generations",
                str(b.case / "g.jsonl"),
                "--out",
                str(b.root / "j.jsonl"),
            ]
        ),
        ("g.jsonl",),
    ),
    # ---- job parameters and other command lines ----
    (
        "settings-not-json",
        lambda b: [*b.job(), "--generate-settings", "{few_shot_k: 3}"],
        ("--generate-settings", "JSON"),
    ),
    (
        "settings-not-an-object",
        lambda b: [*b.job(), "--generate-settings", "[1, 2]"],
        ("--generate-settings", "object"),
    ),
    (
        "settings-unknown-key",
        lambda b: b.job(settings={**GENERATE, "max_new_tokns": 4}),
        ("max_new_tokns", "evaluation.generate"),
    ),
    ("settings-missing-key", lambda b: b.job(loglik={"seed": 0}), ("few_shot_k",)),
    (
        "settings-choice-not-allowed",
        lambda b: b.job(settings={**GENERATE, "backend": "tgi"}),
        ("backend", "'hf', 'vllm'"),
    ),
    (
        "tune-settings-unknown-key",
        lambda b: [
            "tune",
            "--model",
            str(b.model),
            *b.task_args("world_numeric"),
            "--settings",
            '{"stepz": 3}',
            "--out-dir",
            str(b.root / "sp"),
        ],
        ("stepz", "evaluation.tune"),
    ),
    (
        "tune-tasks-and-folders-disagree",
        lambda b: [
            "tune",
            "--model",
            str(b.model),
            *b.task_args("world_numeric"),
            "--settings",
            "{}",
            "--out-dir",
            str(b.root / "sp1"),
            str(b.root / "sp2"),
        ],
        ("--out-dir", "--task"),
    ),
    ("aggregate-corrupt-scores", lambda b: b.scores('{"id": "x", "knowl\n'), ("zero_shot.jsonl",)),
    ("review-unknown-model", lambda b: ["review", "--results", str(b.root), "--model", "gamma"], ("gamma",)),
    ("review-step-not-a-number", lambda b: ["review", "--results", str(b.root), "--step", "last"], ("--step",)),
    (
        "manifest-missing",
        lambda b: ["manifest", "--results", str(b.root), "--check", str(b.case / "m.sha256")],
        ("m.sha256",),
    ),
]


@pytest.fixture(scope="module")
def bench(tmp_path_factory, world, tasks, tiny_model_dir) -> Bench:
    root = tmp_path_factory.mktemp("bad-inputs")
    world.save(root / "world.json")
    for name in ("world_numeric", "world_choice"):
        prepare_task(tasks[name], root / "data" / name, root / "world.json")
    results = root / "results"
    shutil.copytree(root / "data", results / "data")
    (results / "tables").mkdir()
    summary = (
        "model,role,task,method,step,n,knowledge,format,strict\nalpha,base,world_numeric,zero_shot,,15,0.2,0.9,0.2\n"
    )
    (results / "tables" / "scores.csv").write_text(summary)
    prompt = root / "prompt.safetensors"
    save_prompt(prompt, torch.zeros(10, 32), {"step": 4})
    return Bench(results, ROOT / "config" / "tasks", root / "data", tiny_model_dir, prompt, root)


def test_the_table_has_at_least_forty_cases():
    assert len(CASES) >= 40 and len({case_id for case_id, _, _ in CASES}) == len(CASES)


@pytest.mark.parametrize(("build", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_a_bad_input_is_one_line_naming_it_and_the_fix(bench, build, expected, tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("SOFTEVAL_NO_SUCH_KEY", raising=False)
    bench.case = tmp_path
    argv = build(bench)
    before = results_digest(bench.root)
    capsys.readouterr()
    try:
        status = main(argv)
    except SystemExit as exit_:  # argparse's own one-line errors
        status = exit_.code
    err = capsys.readouterr().err
    assert status == 2, err[-2000:]
    assert "Traceback" not in err
    errors = [line for line in err.splitlines() if "error:" in line]
    assert len(errors) == 1, err[-2000:]
    for part in expected:
        assert part in errors[0], errors[0]
    assert results_digest(bench.root) == before
