"""softeval.layout: the one owner of where per-unit files live."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from softeval.layout import (
    GENERATIONS,
    LOGLIK,
    SCORES,
    UnitKey,
    benchmark_file,
    data_file,
    data_meta,
    figure_file,
    gguf_model_dir,
    lm_eval_file,
    parse_unit_path,
    probe_file,
    random_model_dir,
    random_tokenizer_dir,
    snapshot_name,
    softprompt_file,
    table_file,
    unit_file,
    unit_name,
    unit_path,
    unit_root,
    world_file,
    zoo_model_dir,
    zoo_tokenizer_dir,
)
from softeval.model_kinds import MODEL_KINDS
from softeval.schema import InputError

slug = st.from_regex(r"[a-z0-9][a-z0-9_-]{0,12}", fullmatch=True)


def test_the_workflows_patterns_and_the_jobs_paths_agree():
    assert unit_file(SCORES, "few_shot") == "results/scores/{model}/{role}/{task}/few_shot.jsonl"
    assert unit_file(LOGLIK, unit_name("soft_prompt", 80), "m", "base", "t") == (
        "results/loglik/m/base/t/soft_prompt/step80.jsonl"
    )
    assert str(unit_path(Path("results") / GENERATIONS, "m", "post", "t", "zero_shot", None)) == (
        "results/generations/m/post/t/zero_shot.jsonl"
    )
    assert softprompt_file(snapshot_name(20)) == "results/softprompts/{model}/{role}/{task}/step20.safetensors"


def test_the_runs_other_files_are_named_here_with_wildcards_by_default():
    """The rules' patterns (the defaults) and the plan's file lists (the values) come from one place."""
    assert data_file("test") == "results/data/{task}/test.jsonl"
    assert data_file("few_shot", "gsm8k") == "results/data/gsm8k/few_shot.jsonl"
    assert data_meta() == "results/data/{task}/meta.json" and world_file() == "results/world/world.json"
    assert probe_file("jsonl", "atlas", "post") == "results/probes/atlas/post.jsonl"
    assert probe_file("json") == "results/probes/{model}/{role}.json"
    assert zoo_tokenizer_dir() == "results/zoo/_tokenizer"
    assert random_tokenizer_dir(32000) == "results/random/_tokenizer/32000"
    assert table_file("claims", "md") == "results/tables/claims.md"
    assert figure_file("score_gap", "pdf") == "results/figures/score_gap.pdf"
    assert lm_eval_file("x-post", "post") == "results/lm_eval/results_x-post.post.json"
    assert benchmark_file("judge", ("model", "role", "task")) == "results/benchmarks/judge/{model}/{role}/{task}.tsv"
    assert benchmark_file("tables") == "results/benchmarks/tables.tsv" and unit_root(SCORES) == "results/scores"
    # where the workflow builds a model is the kind's built_at pattern
    built = {name: MODEL_KINDS.get(name).built_at for name in ("zoo", "random", "gguf")}
    assert built == {"zoo": zoo_model_dir(), "random": random_model_dir(), "gguf": gguf_model_dir()}
    assert zoo_model_dir("atlas", "base") == "results/zoo/atlas/base"


def test_a_soft_prompt_unit_needs_its_step_and_unknown_kinds_are_refused():
    with pytest.raises(InputError, match="--step"):
        unit_name("soft_prompt", None)
    with pytest.raises(ValueError, match="unknown unit file kind"):
        unit_file("verdicts", "zero_shot")


@given(
    slug,
    st.sampled_from(["base", "post"]),
    slug,
    st.sampled_from(["zero_shot", "few_shot", "soft_prompt"]),
    st.integers(0, 10_000),
)
def test_a_unit_path_reads_back_as_its_unit(model, role, task, method, step):
    step = step if method == "soft_prompt" else None
    root = Path("results") / SCORES
    assert parse_unit_path(root, unit_path(root, model, role, task, method, step)) == UnitKey(
        model, role, task, method, step
    )


@pytest.mark.parametrize("relative", ["m/base/t.jsonl", "m/base/t/soft_prompt/last.jsonl", "m/base/t/a/b/c.jsonl"])
def test_a_file_outside_the_layout_is_one_error(relative):
    root = Path("results") / SCORES
    with pytest.raises(InputError, match="not a per-unit file"):
        parse_unit_path(root, root / relative)
