"""Pre-training text for the zoo: prose facts for covered entities, plus format exposure.

A recipe controls two things the evaluation must tell apart: *coverage* (which entities'
facts are stated, hence what the model can know) and *format exposure* (the share of
documents that are formatted Q&A — about facts the corpus states anyway, or about relations
no task asks — hence how well the model follows an answer format without knowing more).
The corpus style (the same for every model) adds what any web corpus has: questions
answered in prose, a long tail of entities mentioned once, and multiple-choice exams.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass

from softeval.data.splits import exposure_example, make_example, task_examples
from softeval.data.tasks import Task
from softeval.data.world import RELATIONS, Entity, World, answer_fact, state_fact, unknown_entity
from softeval.schema import InputError


@dataclass(frozen=True)
class Recipe:
    """What a model's corpus contains: its knowledge and its format exposure."""

    coverage: float
    format_exposure: float


@dataclass(frozen=True)
class CorpusStyle:
    """How facts are written, the same for every model of a zoo.

    prose_answer_share: share of fact documents that are a task question answered in a plain
      sentence, as web text answers questions; it is why base models know answers they do
      not give in the expected format.
    state_exposure_relations: also state the exposure relations in prose, so formatted Q&A
      about them teaches "recall what you read, write it in the format".
    exposure_about: what formatted Q&A documents ask. "own": the task's own question about
      entities the corpus covers (facts the model reads anyway, so exposure teaches the
      format and nothing new); "other": the task's exposure relation about any entity.
    long_tail_share: share of documents about a freshly invented entity outside the world,
      seen once (see softeval.data.world.unknown_entity). Without them a model guesses with
      confidence about entities it never read, and a soft prompt tuned on train questions it
      cannot answer learns to damp recall altogether; with them its guesses are spread out
      and tuning on unknown answers leaves known ones alone.
    answers_lead_with_value: prose answers about numbers give the value first ("1432, when
      settlers founded Zorbia."), as those about names do (softeval.data.world.answer_fact).
    exam_share: share of documents, for every recipe, that are lettered multiple-choice
      questions in the closed tasks' layout about covered entities (exams are everywhere on
      the web). Without them a model that rarely sees a formatted answer cannot rank lettered
      options at all, and option log-likelihood measures the letter bias, not knowledge.
    """

    prose_answer_share: float = 0.1
    state_exposure_relations: bool = False
    exposure_about: str = "own"
    long_tail_share: float = 0.0
    exam_share: float = 0.0
    answers_lead_with_value: bool = False


def fact_document(rng: random.Random, entity: Entity, relations: list[str]) -> str:
    """A short paragraph stating some of an entity's facts in varied phrasing and order."""
    chosen = rng.sample(relations, rng.randint(1, len(relations)))
    return " ".join(state_fact(rng, entity, relation) for relation in chosen)


def exposure_document(rng: random.Random, world: World, tasks: list[Task]) -> str:
    """One or two formatted Q&A pairs in a task's layout about the task's *other* relation
    (never the one it asks about). No pre-training document contains a task's written
    instruction."""
    task = rng.choice(tasks)
    pairs = []
    for _ in range(rng.randint(1, 2)):
        example = exposure_example(task, world, rng.choice(world.entities), rng)
        pairs.append(task.query(example) + task.target(example))
    return "\n\n".join(pairs)


def own_exposure_document(rng: random.Random, world: World, tasks: list[Task], entities: list[Entity]) -> str:
    """One or two formatted Q&A pairs in a task's layout about facts the corpus states."""
    task = rng.choice(tasks)
    pairs = []
    for _ in range(rng.randint(1, 2)):
        entity = rng.choice(entities)
        example = make_example(task, world, entity, task.dataset["relation"], task.dataset["question"], rng, "exposure")
        pairs.append(task.query(example) + task.target(example))
    return "\n\n".join(pairs)


def prose_answer_document(
    rng: random.Random, world: World, entity: Entity, task: Task, value_first: bool = False
) -> str:
    """A task's question about a covered entity, answered in a plain sentence ("Berlin is
    the capital city of Germany.").

    Web text answers questions this way; it is why base models know answers they do not
    give in the expected format.
    """
    relation = task.dataset["relation"]
    example = make_example(task, world, entity, relation, task.dataset["question"], rng, "prose")
    return task.query(example) + " " + answer_fact(rng, entity, relation, value_first)


class PretrainCorpus:
    """An endless, seeded stream of pre-training documents for one recipe."""

    def __init__(
        self, world: World, tasks: list[Task], recipe: Recipe, seed: str, style: CorpusStyle | None = None
    ) -> None:
        covered = world.covered(recipe.coverage)
        self.entities = [e for e in world.entities if e.name in covered]
        self.tasks = tasks
        self.style = style or CorpusStyle()
        self.relations = stated_relations(tasks, self.style.state_exposure_relations)
        self.exposed_tasks = [task for task in tasks if "exposure" in task.dataset]
        self.closed_tasks = [task for task in tasks if task.closed]
        self.world = world
        self.recipe = recipe
        self.rng = random.Random(seed)
        if not self.entities and not (self.exposed_tasks and recipe.format_exposure > 0):
            raise InputError("zoo recipe: coverage and format_exposure are both 0, so the corpus is empty")

    def document(self) -> str:
        exams = self.style.exam_share and self.closed_tasks and self.entities
        if exams and self.rng.random() < self.style.exam_share:
            return own_exposure_document(self.rng, self.world, self.closed_tasks, self.entities)
        entities = self.entities
        if self.style.long_tail_share and self.rng.random() < self.style.long_tail_share:
            entities = [unknown_entity(self.rng, self.world)]
        wants_exposure = self.rng.random() < self.recipe.format_exposure
        if wants_exposure and self.style.exposure_about == "own" and entities:
            return own_exposure_document(self.rng, self.world, self.tasks, entities)
        if self.exposed_tasks and (wants_exposure or not entities):
            return exposure_document(self.rng, self.world, self.exposed_tasks)
        entity = self.rng.choice(entities)
        if self.rng.random() < self.style.prose_answer_share:
            task = self.rng.choice(self.tasks)
            return prose_answer_document(self.rng, self.world, entity, task, self.style.answers_lead_with_value)
        return fact_document(self.rng, entity, self.relations)

    def documents(self) -> Iterator[str]:
        while True:
            yield self.document()


def stated_relations(tasks: list[Task], with_exposure: bool = False) -> list[str]:
    """Relations whose facts the corpus states in prose."""
    names = {task.dataset["relation"] for task in tasks}
    if with_exposure:
        names |= {task.dataset["exposure"]["relation"] for task in tasks if "exposure" in task.dataset}
    return sorted(names)


def tokenizer_corpus(world: World, tasks: list[Task]) -> Iterator[str]:
    """Text a tokenizer is trained on: every phrasing of every fact and every task layout."""
    relations = stated_relations(tasks)
    for entity in world.entities:
        for relation in relations:
            for template in RELATIONS[relation].prose:
                yield template.format(entity=entity.name, value=entity.attributes[relation])
    rng = random.Random(f"{world.seed}-tokenizer")
    for task in tasks:
        for split in ("train", "test"):
            for example in task_examples(task, world, split):
                yield task.prompt(example) + task.target(example)
        if "exposure" in task.dataset:
            for entity in world.entities:
                example = exposure_example(task, world, entity, rng)
                yield task.query(example) + task.target(example)
