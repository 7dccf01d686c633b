"""The run plan (softeval.plan): what each shipped config asks the workflow to build, checked on
values (units, steps, settings JSON, model references and resources, files, jobs), without Snakemake."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

import softeval.plan.evaluated as evaluated_module  # where the plan reads its task files
from softeval.config import check_config, load_config_file
from softeval.plan import MODEL_JOB_RULES, RULES, Plan, benchmark_pattern, soft_prompt_steps
from softeval.schema import InputError
from tests.conftest import ROOT

DEFAULT = ROOT / "config" / "config.yaml"


def config_of(*files: Path, **overrides) -> dict:
    """Config files laid over config/config.yaml, as snakemake --configfile does, validated."""
    config = load_config_file(DEFAULT)
    for path in files:
        config.update(load_config_file(path))
    config.update(overrides)
    return check_config(copy.deepcopy(config), "test", ROOT)


@pytest.fixture(scope="module")
def default() -> Plan:
    return Plan.from_config(config_of(), ROOT, ROOT)


@pytest.fixture(scope="module")
def smoke() -> Plan:
    return Plan.from_config(config_of(ROOT / "tests" / "configs" / "smoke.yaml"), ROOT, ROOT)


def test_each_task_file_is_read_once(monkeypatch):
    reads: list[str] = []
    real = evaluated_module.load_task_file
    monkeypatch.setattr(evaluated_module, "load_task_file", lambda path: reads.append(str(path)) or real(path))
    plan = Plan.from_config(config_of(), ROOT, ROOT)
    plan.prepare_inputs("world_choice"), plan.task_includes(*plan.task_names), plan.jobs(), plan.targets()
    assert sorted(reads) == sorted(f"config/tasks/{t}.yaml" for t in plan.task_names)


def test_the_steps_have_one_name_and_every_job_reads_them_from_there(default):
    tune = default.config["evaluation"]["tune"]
    assert default.steps == soft_prompt_steps(tune) == sorted({*tune["snapshots"], tune["steps"]})
    assert soft_prompt_steps({"snapshots": [40, 0, 40], "steps": 80}) == [0, 40, 80]
    assert json.loads(default.tune_settings())["snapshots"] == default.steps
    assert json.loads(default.analysis_settings())["steps"] == default.steps
    assert default.step_units == [f"soft_prompt/step{s}" for s in default.steps]
    assert default.units == ["zero_shot", "few_shot", *default.step_units]


def test_settings_are_the_json_their_jobs_parse(default):
    from softeval.settings import AnalysisSettings, GenerateSettings, JudgeSettings, LoglikSettings, TuneSettings

    analysis = AnalysisSettings.parse(json.loads(default.analysis_settings()), "tables")
    assert (analysis.first_step, analysis.final_step) == (
        default.steps[0],
        default.config["evaluation"]["tune"]["steps"],
    )
    assert set(analysis.closed_tasks) == {"world_choice"}
    TuneSettings.parse(json.loads(default.tune_settings()), "tune")
    GenerateSettings.parse(json.loads(default.generate_settings()), "generate")
    LoglikSettings.parse(json.loads(default.loglik_settings()), "loglik")
    judge = JudgeSettings.parse(json.loads(default.judge_settings()), "judge")
    assert judge.name == "rule" and not Path(judge.prompts).is_absolute()  # inside the checkout: relative
    assert judge.prompts == "config/judges/default.yaml"  # the schema default, relative to the checkout
    # sorted keys: the same config gives the same parameter string (Snakemake reruns on a change)
    assert default.generate_settings() == json.dumps(json.loads(default.generate_settings()), sort_keys=True)


def test_model_references_follow_the_kind(default, smoke):
    assert default.kinds["scholar"].name == "zoo" and default.zoo_models == default.models and default.has_truth
    assert default.model_ref("scholar", "post") == "results/zoo/scholar/post"
    assert default.model_inputs("scholar", "base") == {"model": "results/zoo/scholar/base"}
    assert smoke.model_ref("rand-a", "base") == "results/random/rand-a/base"
    assert not smoke.has_truth and smoke.zoo_models == []
    assert smoke.random_vocabularies() == [32000]
    assert smoke.chat_template("rand-a", "post") and not smoke.chat_template("rand-a", "base")


def test_checkpoint_and_gguf_models_are_referenced_as_their_entries_say(tmp_path):
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF")
    models = [
        {"name": "hub", "base": {"id": "org/base"}, "post": {"id": "org/post"}, "resources": {"mem_mb": 9000}},
        {"name": "file", "gguf": {"path": str(gguf)}},
    ]
    plan = Plan.from_config(config_of(ROOT / "tests" / "configs" / "smoke.yaml", models=models), ROOT, ROOT)
    assert [plan.kinds[m].name for m in plan.models] == ["checkpoint", "gguf"]
    assert plan.model_ref("hub", "post") == "org/post" and plan.model_inputs("hub", "post") == {}  # a hub id: no files
    assert json.loads(plan.model_options("hub", "base"))["revision"] == "main"
    assert json.loads(plan.model_options("file", "base"))["revision"] is None
    assert plan.resource("hub", "mem_mb") == 9000 and plan.resource("file", "mem_mb") != 9000
    assert plan.model_ref("file", "base") == plan.model_ref("file", "post") == "results/gguf/file"
    assert plan.gguf_file("file") == str(gguf) and plan.jobs()["convert_gguf"] == [{"model": "file"}]
    local = tmp_path / "ckpt"
    local.mkdir()
    (local / "config.json").write_text("{}")
    (local / "model.safetensors").write_bytes(b"")  # the config check wants weights there
    (local / ".hidden").write_text("")
    models[0] = {"name": "hub", "base": {"id": str(local)}, "post": {"id": str(local)}}
    plan = Plan.from_config(config_of(ROOT / "tests" / "configs" / "smoke.yaml", models=models), ROOT, ROOT)
    # each file, no dot files
    assert plan.model_inputs("hub", "base") == {"model": [str(local / "config.json"), str(local / "model.safetensors")]}


def test_zoo_jobs_are_small_cpu_jobs_whatever_the_resources(default):
    config = copy.deepcopy(default.config)
    config["evaluation"]["resources"] = {"gpu": 1, "mem_mb": 64000, "runtime": 600, "cpus": 8}
    plan = Plan.from_config(config, ROOT, ROOT)
    assert [plan.resource("scholar", k) for k in ("gpu", "mem_mb", "runtime")] == [0, 2000, 30]
    assert plan.model_resource_keys == ["gpu", "mem_mb", "runtime"]


def test_data_preparation_reads_the_world_a_mirror_or_local_files(default, smoke):
    assert default.prepare_inputs("world_numeric") == {
        "task": "config/tasks/world_numeric.yaml",
        "task_includes": [],
        "world": "results/world/world.json",
    }
    assert default.prepare_arguments("world_numeric", "results/world/world.json") == [
        "--world",
        "results/world/world.json",
    ]
    mmlu = smoke.prepare_inputs("mmlu")
    assert mmlu["task_includes"] == ["config/tasks/_lettered_choice.yaml"]
    assert mmlu["mirror"] and all(p.startswith("tests/fixtures/mmlu/") for p in mmlu["mirror"])
    assert smoke.prepare_arguments("mmlu", None) == ["--source", "mirror", "--mirror", "tests/fixtures"]
    limited = copy.deepcopy(smoke.config)
    limited["evaluation"]["test_limit_per_task"] = {"mmlu": 3}
    assert Plan.from_config(limited, ROOT, ROOT).prepare_arguments("mmlu", None)[:4] == [
        "--test-limit",
        "3",
        "--seed",
        str(smoke.config["seed"]),
    ]


def test_one_evaluation_job_per_model_and_role_writes_every_tasks_files(smoke):
    jobs = smoke.jobs()
    closed = {"mmlu", "arc_challenge", "commonsense_qa"}
    assert set(smoke.closed_tasks) == closed and set(smoke.open_tasks) == set(smoke.task_names) - closed
    pairs = [{"model": m, "role": r} for m in smoke.models for r in ("base", "post")]
    assert jobs["evaluate"] == jobs["evaluate_soft_prompt"] == jobs["tune"] == pairs
    assert len(jobs["judge"]) == len(smoke.models) * 2 * len(smoke.task_names)
    assert jobs["pretrain"] == [] and jobs["build_world"] == [] and len(jobs["random_model"]) == 4
    # the job's flags list its files task by task in the plan's order; option scores for closed tasks only
    generations = smoke.evaluation_files("generations", smoke.plain_units, "m", "base")
    assert generations == [
        f"results/generations/m/base/{task}/{unit}.jsonl" for task in smoke.task_names for unit in smoke.plain_units
    ]
    logliks = smoke.evaluation_files("loglik", smoke.step_units, "m", "base")
    assert {f.split("/")[4] for f in logliks} == closed and len(logliks) == len(closed) * len(smoke.steps)


def test_every_job_has_one_benchmark_file_of_the_one_pattern(default):
    files = default.benchmark_files()
    assert len(files) == len(set(files)) == sum(len(each) for each in default.jobs().values())
    assert benchmark_pattern("evaluate") == "results/benchmarks/evaluate/{model}/{role}.tsv"
    assert benchmark_pattern("judge") == "results/benchmarks/judge/{model}/{role}/{task}.tsv"
    assert "results/benchmarks/tune/scholar/post.tsv" in files and "results/benchmarks/aggregate.tsv" in files
    assert set(default.benchmark_patterns()) == set(RULES) == set(default.jobs())


def test_targets_name_every_per_example_file(default):
    targets = default.targets()
    assert len(targets) == len(set(targets))
    scores = default.all_scores()
    assert len(scores) == len(default.models) * 2 * len(default.task_names) * len(default.units)
    assert set(scores) <= set(targets) and set(default.per_example_files()) <= set(targets)
    assert "results/softprompts/scholar/base/world_numeric/prompt.safetensors" in targets
    assert "results/probes/scholar/post.jsonl" in targets and "results/tables/zoo.csv" in targets
    assert default.base_choice_files() == [
        f"results/loglik/{m}/base/world_choice/soft_prompt/step{s}.jsonl" for m in default.models for s in default.steps
    ]


def test_without_a_soft_prompt_there_is_no_tuning(default):
    config = copy.deepcopy(default.config)
    config["evaluation"]["methods"] = ["zero_shot"]
    plan = Plan.from_config(config, ROOT, ROOT)
    assert plan.units == ["zero_shot"] and plan.base_choice_files() == [] and not plan.tunes
    assert plan.jobs()["tune"] == [] == plan.jobs()["evaluate_soft_prompt"]
    assert not any("softprompts" in f for f in plan.targets())


def test_a_missing_published_record_is_one_error(default):
    config = copy.deepcopy(default.config)
    config["analysis"]["published"] = "config/published/nope.yaml"
    with pytest.raises(InputError, match=r"analysis\.published: .*nope\.yaml not found"):
        Plan.from_config(config, ROOT, ROOT).published_record()
    assert default.published_record() in ([], "config/published/default.yaml")


def test_paths_outside_the_working_directory_stay_absolute(tmp_path):
    plan = Plan.from_config(config_of(), ROOT, tmp_path)
    assert plan.task_file("world_numeric") == str(ROOT / "config" / "tasks" / "world_numeric.yaml")
    assert Path(plan.validation_set).is_absolute()


# ---- base-only models: a model entry without a post-trained twin ------------------------------
SMOKE = ROOT / "tests" / "configs" / "smoke.yaml"


def hub_models(n: int, base_only: bool = False) -> list[dict]:
    return [
        {"name": f"m{i}", "base": {"id": f"org/m{i}"}, **({} if base_only else {"post": {"id": f"org/m{i}-it"}})}
        for i in range(n)
    ]


def test_a_base_only_checkpoint_plans_no_post_role():
    models = [{"name": "pair", "base": {"id": "org/pair"}, "post": {"id": "org/pair-it"}}]
    models.append({"name": "solo", "base": {"id": "org/solo"}})
    plan = Plan.from_config(config_of(SMOKE, models=models), ROOT, ROOT)
    assert plan.roles("pair") == ("base", "post") and plan.roles("solo") == ("base",)
    assert plan.post_models == ["pair"] and plan.models == ["pair", "solo"]
    assert [(m, r) for m, r, t in plan.unit_triples() if t == "gsm8k"] == [
        ("pair", "base"),
        ("pair", "post"),
        ("solo", "base"),
    ]
    jobs = plan.jobs()
    assert jobs["tune"] == [
        {"model": "pair", "role": "base"},
        {"model": "pair", "role": "post"},
        {"model": "solo", "role": "base"},
    ]
    assert len(jobs["judge"]) == 3 * 7 and jobs["evaluate"] == jobs["evaluate_soft_prompt"] == jobs["tune"]
    files = plan.targets() + plan.benchmark_files()
    assert [f for f in files if "/solo/post" in f] == []
    assert "results/scores/solo/base/gsm8k/zero_shot.jsonl" in files
    assert "results/softprompts/solo/base/mmlu/prompt.safetensors" in files
    assert "results/benchmarks/tune/solo/base.tsv" in files and "results/benchmarks/tune/pair/post.tsv" in files
    assert "results/loglik/solo/base/mmlu/soft_prompt/step4.jsonl" in plan.base_choice_files()
    assert len(plan.all_scores()) == 3 * 7 * len(plan.units)
    with pytest.raises(InputError, match=r"model 'solo' has no post role \(a base-only entry\)"):
        plan.model_ref("solo", "post")
    assert plan.base_only_note() == (
        "base only, no post-trained twin: solo (their base role is evaluated as every model's is); "
        "score gaps and claim 5 are computed over pair; "
        "swap distances and claims 3 and 4 need two models with a twin: not applicable"
    )


def test_five_base_only_checkpoints_plan_half_the_model_jobs_of_five_pairs():
    pairs = Plan.from_config(config_of(SMOKE, models=hub_models(5)), ROOT, ROOT)
    bases = Plan.from_config(config_of(SMOKE, models=hub_models(5, base_only=True)), ROOT, ROOT)
    count = {
        name: {rule: len(plan.jobs()[rule]) for rule in (*MODEL_JOB_RULES, "judge")}
        for name, plan in (("pairs", pairs), ("bases", bases))
    }
    # per model x role: 1 tune job, 1 evaluate job and 1 evaluate_soft_prompt job over the 7 tasks
    assert count["bases"] == {"tune": 5, "evaluate": 5, "evaluate_soft_prompt": 5, "judge": 35}
    assert count["pairs"] == {rule: 2 * n for rule, n in count["bases"].items()}
    assert (
        sum(count["bases"][r] for r in MODEL_JOB_RULES) == 15 and sum(count["pairs"][r] for r in MODEL_JOB_RULES) == 30
    )
    assert 2 * len(bases.all_scores()) == len(pairs.all_scores())
    assert bases.post_models == [] and pairs.post_models == pairs.models and pairs.base_only_note() is None
    assert bases.base_only_note().endswith(
        "score gaps and claim 5: not applicable; swap distances and claims 3 and 4 need two models with a twin: "
        "not applicable"
    )


def test_random_and_gguf_entries_drop_their_post_role_with_post_false(tmp_path):
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF")
    spec = {"vocab_size": 32000, "layers": 2, "width": 64, "heads": 2}
    models = [
        {"name": "rand", "random": spec, "post": False},
        {"name": "twin", "random": spec, "post": {"chat_template": True}},
        {"name": "file", "gguf": {"path": str(gguf)}, "post": False},
    ]
    plan = Plan.from_config(config_of(SMOKE, models=models), ROOT, ROOT)
    assert [plan.roles(m) for m in plan.models] == [("base",), ("base", "post"), ("base",)]
    jobs = plan.jobs()
    assert jobs["random_model"] == [
        {"model": "rand", "role": "base"},
        {"model": "twin", "role": "base"},
        {"model": "twin", "role": "post"},
    ]
    assert jobs["convert_gguf"] == [{"model": "file"}]
    assert {(j["model"], j["role"]) for j in jobs["tune"]} == {
        ("rand", "base"),
        ("twin", "base"),
        ("twin", "post"),
        ("file", "base"),
    }
    assert not [f for f in plan.targets() if "/rand/post" in f or "/file/post" in f]
    # without `post:` a random or gguf model keeps both roles, as before
    plan = Plan.from_config(config_of(SMOKE, models=[{"name": "rand", "random": spec}]), ROOT, ROOT)
    assert plan.roles("rand") == ("base", "post")
