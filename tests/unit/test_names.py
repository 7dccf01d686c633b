"""The methods and roles are spelled once, in softeval.names: no other module of the package writes
one of their names as a string literal, except where the same word names something else."""

from __future__ import annotations

import io
import tokenize
from collections import Counter
from pathlib import Path

from softeval import names
from tests.conftest import ROOT

PACKAGE = ROOT / "workflow" / "softeval"
LITERALS = {repr(name).replace("'", '"') for name in (*names.METHODS, *names.ROLES)}
# The same word for another concept: the few-shot split of a task's prepared data (its name is the
# method's, whose shots it holds), the config section `evaluation.few_shot`, and the provenance
# field that records a generation's soft prompt. And the reviewer's script `analysis/explain.py`,
# which imports no softeval code so that its estimates are computed a second, independent way.
OTHER_CONCEPTS = Counter(
    {
        "analysis/explain.py": 42,  # imports nothing of softeval (test_explain checks it)
        "data/sources.py": 1,  # the splits a local task's files name
        "data/splits.py": 2,  # the few-shot split falls back to train
        "jobs/common.py": 2,  # reading the few-shot split; the provenance field
        "layout.py": 1,  # SPLITS
        "plan/settings.py": 2,  # evaluation.few_shot.k
        "plan_cost/costs.py": 1,  # evaluation.few_shot.k
        "plan_cost/table.py": 1,  # evaluation.few_shot.k
    }
)


def literal_names(path: Path) -> int:
    tokens = tokenize.generate_tokens(io.StringIO(path.read_text(encoding="utf-8")).readline)
    return sum(t.type == tokenize.STRING and t.string in LITERALS for t in tokens)


def test_methods_and_roles_are_named_once():
    found = Counter(
        {
            str(path.relative_to(PACKAGE)): n
            for path in sorted(PACKAGE.rglob("*.py"))
            if path.name != "names.py" and (n := literal_names(path))
        }
    )
    assert found == OTHER_CONCEPTS


def test_the_names_are_the_folder_and_rule_names_the_workflow_uses():
    assert names.METHODS == ("zero_shot", "few_shot", "soft_prompt") and names.ROLES == ("base", "post")
    common = (ROOT / "workflow" / "rules" / "common.smk").read_text(encoding="utf-8")
    assert 'role="base|post"' in common and 'method="zero_shot|few_shot"' in common
