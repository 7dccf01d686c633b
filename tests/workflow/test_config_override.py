"""`snakemake --config`: an override's error names the override, not the config file under it, and
stops before any job; a number inside an override's mapping is read as one (issue 39, item 5)."""

from __future__ import annotations

import yaml

from tests.workflow.test_workflow import TINY, snakemake


def error_lines(result) -> list[str]:
    """The lines naming a key (a dry run logs its error to stdout, a run to stderr)."""
    return [line for line in (result.stdout + result.stderr).splitlines() if "key '" in line]


def test_an_error_in_a_config_override_names_the_override(tmp_path):
    result = snakemake(tmp_path, "-n", "--cores", "1", "--config", "evaluation={test_limit: many}")
    assert result.returncode != 0
    (line,) = error_lines(result)
    assert line.startswith("--config evaluation=...: key 'evaluation.test_limit' must be of type"), line
    assert str(TINY) not in line
    assert not (tmp_path / "results").exists()


def test_a_number_in_a_config_override_is_a_number(tmp_path):
    result = snakemake(tmp_path, "-n", "-p", "--cores", "1", "--config", "evaluation={test_limit: 2}")
    assert result.returncode == 0, result.stderr[-3000:]
    assert "--test-limit 2 --seed 3" in result.stdout


def test_a_reference_method_not_evaluated_stops_the_dry_run_naming_the_file(tmp_path):
    config = yaml.safe_load(TINY.read_text())
    config["evaluation"]["methods"] = ["soft_prompt"]
    config["analysis"] = {"reference_method": "zero_shot"}
    (tmp_path / "mine.yaml").write_text(yaml.safe_dump(config))
    result = snakemake(tmp_path, "-n", "--cores", "1", configfile=tmp_path / "mine.yaml")
    assert result.returncode != 0
    (line,) = error_lines(result)
    assert line.startswith(f"{tmp_path / 'mine.yaml'}: key 'analysis.reference_method' is 'zero_shot'"), line
    # left unset, it follows the methods: the dry run plans the tables on the soft prompt
    result = snakemake(tmp_path, "-n", "--cores", "1", "--config", "evaluation={methods: [soft_prompt]}")
    assert result.returncode == 0, result.stderr[-3000:]
