"""A seeded synthetic knowledge world: invented countries with known attributes.

The world gives the embedded default its ground truth. Every entity has one value per
relation; the split (train/test) is by entity, so no test fact is ever seen in tuning.
Which facts a model's pre-training corpus states is decided per model (its *coverage*),
so the true knowledge ranking of the zoo is known by construction.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from softeval.io import atomic_write_text

WORLD_FORMAT_VERSION = 1
SPLITS = ("train", "test")

_ONSETS = ["b", "d", "f", "g", "k", "l", "m", "n", "p", "r", "s", "t", "v", "z", "th", "sh", "br", "kr", "tr"]
_VOWELS = ["a", "e", "i", "o", "u", "ai", "ou"]
_CODAS = ["", "", "n", "r", "l", "s", "m"]
_SUFFIXES = {
    "country": ["ia", "or", "an", "esh", "ara", "ovia"],
    "city": ["burg", "dal", "mir", "ton", "vik", "grad"],
    "river": ["en", "ol", "ash", "ine"],
    "language": ["ish", "ic", "ese"],
    "currency": ["ar", "mark", "ling", "o"],
}


@dataclass(frozen=True)
class Relation:
    """One attribute of every entity, with the prose that states it.

    The first prose template ends with the value: its prefix is the cloze probe, phrased
    exactly as the corpus phrases the fact.
    """

    name: str
    kind: str  # "number" | "name" | "category"
    prose: tuple[str, ...]
    low: int = 0
    high: int = 0
    pool: str = ""  # name style for names and categories
    pool_size: int = 0  # number of distinct categories

    @cached_property
    def answer_prose(self) -> tuple[str, ...]:
        """The phrasings that answer a question about this fact: for a name (a capital, a
        language) those that lead with it, as answers do; for a number, or a name with no
        such phrasing, all of them."""
        leading = tuple(t for t in self.prose if t.startswith("{value}"))
        return leading if self.kind in ("name", "category") and leading else self.prose

    def cloze_prefix(self, entity: str) -> str:
        """The corpus's own phrasing of the fact, cut right before the value."""
        template = self.prose[0]
        return template[: template.index("{value}")].format(entity=entity).rstrip()


RELATIONS: dict[str, Relation] = {
    r.name: r
    for r in (
        Relation(
            "founded",
            "number",
            (
                "{entity} was founded in {value}.",
                "The founding year of {entity} is {value}.",
                "In {value}, settlers founded {entity}.",
                "Historians date the founding of {entity} to {value}.",
            ),
            low=1000,
            high=1999,
        ),
        Relation(
            "capital",
            "name",
            (
                "The capital of {entity} is {value}.",
                "{value} is the capital city of {entity}.",
                "{entity} is governed from its capital, {value}.",
                "Travellers to {entity} usually arrive in {value}, the capital.",
            ),
            pool="city",
        ),
        # Counts run to three digits so that a guessed count almost never scores: with 3-60
        # provinces, a model's one habitual guess hit ~1 in 58 unread countries by luck.
        Relation(
            "districts",
            "number",
            (
                "{entity} is divided into {value} districts.",
                "There are {value} districts in {entity}.",
                "The map of {entity} shows {value} districts.",
            ),
            low=100,
            high=999,
        ),
        Relation(
            "language",
            "category",
            (
                "In {entity}, people speak {value}.",
                "The language of {entity} is {value}.",
                "{value} is spoken throughout {entity}.",
            ),
            pool="language",
            pool_size=4,
        ),
        # Relations below are not stated in prose (unless the corpus style asks for it): they
        # exist so that format exposure about *other* relations (exposure_about: other) has
        # consistent answers to show.
        Relation("elevation", "number", ("The highest point of {entity} rises {value} metres.",), 200, 4999),
        Relation("river", "name", ("The longest river of {entity} is the {value}.",), pool="river"),
        Relation("lakes", "number", ("{entity} has {value} lakes.",), low=2, high=99),
        Relation(
            "currency",
            "category",
            ("People in {entity} pay with the {value}.",),
            pool="currency",
            pool_size=4,
        ),
    )
}


@dataclass(frozen=True)
class Entity:
    name: str
    split: str
    attributes: dict[str, str]


@dataclass(frozen=True)
class World:
    """The generated world: entities, their attribute values, and category pools."""

    seed: int
    entities: tuple[Entity, ...]
    categories: dict[str, tuple[str, ...]]

    def split(self, split: str) -> list[Entity]:
        return [e for e in self.entities if e.split == split]

    def covered(self, coverage: float) -> set[str]:
        """Entities whose facts a corpus of this coverage states.

        Nested across coverages (a higher coverage states a superset) and stratified by
        split, so a model's share of known test entities equals its coverage.
        """
        chosen: set[str] = set()
        for split in SPLITS:
            names = coverage_order(self.seed, [e.name for e in self.split(split)], split)
            chosen.update(names[: round(coverage * len(names))])
        return chosen

    def to_json(self) -> dict[str, Any]:
        return {
            "format_version": WORLD_FORMAT_VERSION,
            "seed": self.seed,
            "categories": {k: list(v) for k, v in self.categories.items()},
            "entities": [{"name": e.name, "split": e.split, "attributes": e.attributes} for e in self.entities],
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> World:
        return cls(
            seed=data["seed"],
            entities=tuple(Entity(e["name"], e["split"], dict(e["attributes"])) for e in data["entities"]),
            categories={k: tuple(v) for k, v in data["categories"].items()},
        )

    def save(self, path: Path) -> None:
        atomic_write_text(path, json.dumps(self.to_json(), indent=1, sort_keys=True) + "\n")

    @classmethod
    def load(cls, path: Path) -> World:
        return cls.from_json(json.loads(Path(path).read_text()))


class _NameMaker:
    """Pronounceable invented names, unique across the whole world."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.used: set[str] = set()

    def make(self, style: str) -> str:
        while True:
            syllables = self.rng.choice((1, 2, 2))
            stem = "".join(
                self.rng.choice(_ONSETS) + self.rng.choice(_VOWELS) + self.rng.choice(_CODAS) for _ in range(syllables)
            )
            name = (stem + self.rng.choice(_SUFFIXES[style])).capitalize()
            if name not in self.used and 5 <= len(name) <= 12:
                self.used.add(name)
                return name


def coverage_order(seed: int, names: list[str], split: str) -> list[str]:
    """A split's entities in the order coverage takes them: a corpus of coverage c states the first c."""
    order = list(names)
    random.Random(f"{seed}-coverage-{split}").shuffle(order)
    return order


def generate_world(n_entities: int, test_fraction: float, seed: int) -> World:
    """Generate a world deterministically from its seed."""
    rng = random.Random(seed)
    names = _NameMaker(rng)
    categories = {
        rel.name: tuple(names.make(rel.pool) for _ in range(rel.pool_size))
        for rel in RELATIONS.values()
        if rel.kind == "category"
    }
    entity_names = [names.make("country") for _ in range(n_entities)]
    n_test = round(test_fraction * n_entities)
    test_names = set(rng.sample(entity_names, n_test))
    entities = tuple(
        Entity(name, "test" if name in test_names else "train", _random_attributes(rng, names, categories))
        for name in entity_names
    )
    # the independent category draws above are replaced; unknown entities (outside the world) keep theirs
    return World(seed=seed, entities=_balance_categories(entities, categories, seed), categories=categories)


def _balance_categories(
    entities: tuple[Entity, ...], categories: dict[str, tuple[str, ...]], seed: int
) -> tuple[Entity, ...]:
    """Deal category values in shuffled blocks along each split's coverage order.

    Every model's known and unread entities then carry each category equally often (within
    one or two), so on a closed task a constant guess about unread entities scores chance,
    whichever option it is. With independent draws, scholar's 12 unread test countries had
    golds A 4, B 0, C 6, D 2: when the tuned prompt moved its guess from A to B, knowledge
    fell by 4/60 while its accuracy on the countries it knows stayed 0.979.
    """
    values: dict[str, dict[str, str]] = {e.name: dict(e.attributes) for e in entities}
    for split in SPLITS:
        order = coverage_order(seed, [e.name for e in entities if e.split == split], split)
        for relation, pool in categories.items():
            rng = random.Random(f"{seed}-{relation}-{split}")
            dealt: list[str] = []
            while len(dealt) < len(order):
                block = list(pool)
                rng.shuffle(block)
                dealt.extend(block)
            for name, value in zip(order, dealt, strict=False):
                values[name][relation] = value
    return tuple(Entity(e.name, e.split, values[e.name]) for e in entities)


def _random_attributes(rng: random.Random, names: _NameMaker, categories: dict[str, tuple[str, ...]]) -> dict[str, str]:
    attributes = {}
    for rel in RELATIONS.values():
        if rel.kind == "number":
            attributes[rel.name] = str(rng.randint(rel.low, rel.high))
        elif rel.kind == "name":
            attributes[rel.name] = names.make(rel.pool)
        else:
            attributes[rel.name] = rng.choice(categories[rel.name])
    return attributes


def unknown_entity(rng: random.Random, world: World) -> Entity:
    """A freshly invented country outside the world, with random attributes.

    Pre-training text about such entities is seen once and cannot be memorised; it teaches
    a model that an unfamiliar name has no fact to recall, so its guesses about entities it
    never read are spread over plausible values, as a web-trained model's are.
    """
    names = _NameMaker(rng)
    names.used.update(e.name for e in world.entities)
    return Entity(names.make("country"), "unknown", _random_attributes(rng, names, world.categories))


def state_fact(rng: random.Random, entity: Entity, relation: str) -> str:
    """One sentence stating a fact, in a randomly chosen phrasing."""
    template = rng.choice(RELATIONS[relation].prose)
    return template.format(entity=entity.name, value=entity.attributes[relation])


# Answers that give the value first, as a short answer does ("1432, when settlers founded
# Zorbia."), for the numbers whose prose states them last. Used only where a corpus style asks
# (zoo.corpus.answers_lead_with_value); names already lead with the value.
VALUE_FIRST: dict[str, tuple[str, ...]] = {
    "founded": ("{value} is the year {entity} was founded.", "{value}, when settlers founded {entity}."),
    "districts": ("{value} districts make up {entity}.", "{value}, the number of districts of {entity}."),
    "elevation": ("{value} metres is the height of the highest point of {entity}.",),
    "lakes": ("{value} lakes lie in {entity}.",),
}


def answer_fact(rng: random.Random, entity: Entity, relation: str, value_first: bool = False) -> str:
    """A sentence answering a question about a fact: a name (a capital, a language) leads
    ("Kelmir is the capital city of Zorbia."), as answers do; a number in any phrasing.

    A sentence that opens with its own words ("Travellers to ...", "The language of ...")
    gives a model guessing about a country it never read one concentrated sentence opener
    to weigh against a guess spread over many names (or four letters), and greedy decoding
    takes the sentence. Leading with the name moves the choice between a bare answer and a
    sentence to *after* the name, where the next token is the same whatever the name is.

    value_first: numbers lead with their value too (VALUE_FIRST), so every answer puts the
    value right after the question, as the task's formats do: recalling a fact straight after
    a question is then learnt from prose by every model, whatever its format exposure.
    """
    templates = RELATIONS[relation].answer_prose
    if value_first and relation in VALUE_FIRST:
        templates = VALUE_FIRST[relation]
    template = rng.choice(templates)
    return template.format(entity=entity.name, value=entity.attributes[relation])
