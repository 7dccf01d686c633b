"""Shared fixtures: the repository, its task files, and a small world."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

from softeval.data.tasks import Task, load_task
from softeval.data.world import World, generate_world

ROOT = Path(__file__).resolve().parents[1]
# The weights-digest cache of this test session (and of the workflows it runs), not the user's.
os.environ["SOFTEVAL_CACHE"] = tempfile.mkdtemp(prefix="softeval-cache-")
if os.environ.get("PYTEST_XDIST_WORKER"):
    # One CPU thread per test worker: the workers already fill the cores, and torch's own threads
    # would only compete for them. The workflows a test starts keep their own settings.
    import torch

    torch.set_num_threads(1)
TASK_DIR = ROOT / "config" / "tasks"
# The slowest test modules, slowest first (their end-to-end runs; CI's --durations table). Under
# pytest-xdist (`make test`: -n 2 --dist loadscope, each module whole on one worker, so that its
# module-scoped runs are made once) they are handed out before the rest, so that no worker starts
# a long run while the other has nothing left to do. The SLURM run goes first: it mostly waits for
# the scheduler, and the tiny run on the other worker has the cores meanwhile.
SLOWEST_FIRST = (
    "tests/workflow/test_slurm.py",
    "tests/workflow/test_workflow.py",
    "tests/workflow/test_smoke.py",
    "tests/workflow/test_real_small.py",
    "tests/workflow/test_documented_commands.py",
    "tests/unit/engine/test_real_model.py",
)
TASK_NAMES = ["world_numeric", "world_phrase", "world_boxed", "world_choice"]

# Hand-written examples shared by the task and judge tests.
NUMERIC = {"id": "n1", "question": "In what year was Vorlakia founded?", "answer": "1432"}
CHOICE = {
    "id": "c1",
    "question": "Which language is spoken in Vorlakia?",
    "answer": "Talvish",
    "options": ["Brisic", "Talvish", "Upese", "Zorish"],
    "label": 1,
}


def tasks_with_short_harness_readings(dest: Path, names: list[str], tokens: int) -> Path:
    """A copy of the shipped task files in which `names`' lm-evaluation-harness readings stop after
    `tokens` tokens instead of the harness's 256: a random or small model rarely writes the
    readings' stop strings, and reading on to 256 tokens is most of a CPU test run's generation.
    The shipped value is asserted, so a task file that changes it fails here."""
    shutil.copytree(TASK_DIR, dest)
    for name in names:
        path = dest / f"{name}.yaml"
        text = path.read_text()
        assert "max_gen_toks: 256}" in text, name
        path.write_text(text.replace("max_gen_toks: 256}", f"max_gen_toks: {tokens}}}"))
    return dest


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The slowest modules first (a stable sort: within a module, the written order)."""
    rank = {path: i for i, path in enumerate(SLOWEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::")[0], len(rank)))


@pytest.fixture(scope="session")
def tasks() -> dict[str, Task]:
    return {name: load_task(TASK_DIR, name) for name in TASK_NAMES}


@pytest.fixture(scope="session")
def world() -> World:
    return generate_world(n_entities=60, test_fraction=0.25, seed=7)


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory, world, tasks) -> Path:
    """A tiny randomly initialised Llama saved as a Hugging Face directory, the zoo's way."""
    import torch

    from softeval.zoo.corpus import tokenizer_corpus
    from softeval.zoo.tokenizer import train_tokenizer
    from softeval.zoo.training import build_model, save_model

    out = tmp_path_factory.mktemp("tiny-model") / "model"
    tokenizer = train_tokenizer(tokenizer_corpus(world, list(tasks.values())), 400)
    torch.manual_seed(0)
    model = build_model({"arch": "llama", "layers": 1, "width": 32, "heads": 2}, tokenizer)
    save_model(model, tokenizer, out, {"model": "tiny"}, [1.0])
    return out
