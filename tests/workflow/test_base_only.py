"""A model without a post-trained twin, through Snakemake: the dry run plans its base role only
and asks for no file of a post role it does not have."""

from __future__ import annotations

import yaml

from softeval.settings import RandomModelSettings
from softeval.zoo.random_model import build_random_model, filler_words, train_llama_style_tokenizer
from tests.workflow.test_workflow import planned_jobs, snakemake

RANDOM = {"vocab_size": 300, "layers": 1, "width": 16, "heads": 2}


def test_a_dry_run_plans_no_post_job_of_a_base_only_model(tmp_path):
    # a local base checkpoint of the user's own (a Hugging Face directory), and no post-trained twin
    tokenizer = tmp_path / "tokenizer"
    train_llama_style_tokenizer(filler_words(2000, 0), 300).save_pretrained(str(tokenizer))
    checkpoint = tmp_path / "mine"
    build_random_model(RandomModelSettings.parse(RANDOM, "test"), tokenizer, checkpoint, "base", chat=False)
    config = {
        "tasks": ["gsm8k", "mmlu"],  # one open task, one closed
        "data": {"source": "mirror", "mirror": "tests/fixtures"},
        "evaluation": {"tune": {"steps": 4, "batch_size": 4, "snapshots": [0]}},
        "models": [
            {"name": "mine", "base": {"id": str(checkpoint)}},
            {"name": "rand", "random": RANDOM, "post": {"chat_template": True}},
            {"name": "solo", "random": RANDOM, "post": False},
        ],
    }
    (tmp_path / "base-only.yaml").write_text(yaml.safe_dump(config))
    result = snakemake(tmp_path / "run", "-n", "--cores", "1", configfile=tmp_path / "base-only.yaml")
    assert result.returncode == 0, result.stderr[-3000:]
    assert "mine/post" not in result.stdout and "solo/post" not in result.stdout
    assert f"{checkpoint}/model.safetensors" in result.stdout  # the checkpoint's files are the jobs' inputs
    jobs = planned_jobs(result.stdout)
    # 4 model x role (mine/base, rand/base, rand/post, solo/base) on 1 open and 1 closed task
    assert {rule: jobs[rule] for rule in ("random_model", "tune", "evaluate", "evaluate_soft_prompt", "judge")} == {
        "random_model": 3,
        "tune": 4,
        "evaluate": 4,
        "evaluate_soft_prompt": 4,
        "judge": 8,
    }
    assert "base only, no post-trained twin: mine, solo" in result.stderr
    assert "swap distances and claims 3 and 4 need two models with a twin: not applicable" in result.stderr
