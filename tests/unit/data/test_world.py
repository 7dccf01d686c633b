from __future__ import annotations

from collections import Counter

from softeval.data.world import RELATIONS, World, coverage_order, generate_world


def test_same_seed_gives_identical_world_file(tmp_path):
    generate_world(50, 0.3, seed=11).save(tmp_path / "a.json")
    generate_world(50, 0.3, seed=11).save(tmp_path / "b.json")
    assert (tmp_path / "a.json").read_bytes() == (tmp_path / "b.json").read_bytes()


def test_different_seed_gives_different_world():
    assert generate_world(50, 0.3, seed=1).entities != generate_world(50, 0.3, seed=2).entities


def test_round_trip_through_json(tmp_path, world):
    world.save(tmp_path / "w.json")
    assert World.load(tmp_path / "w.json") == world


def test_splits_are_disjoint_by_entity_and_sized(world):
    train = {e.name for e in world.split("train")}
    test = {e.name for e in world.split("test")}
    assert not train & test
    assert len(test) == 15 and len(train) == 45
    assert len({e.name for e in world.entities}) == 60


def test_every_entity_has_a_valid_value_per_relation(world):
    for entity in world.entities:
        assert set(entity.attributes) == set(RELATIONS)
        for name, rel in RELATIONS.items():
            value = entity.attributes[name]
            if rel.kind == "number":
                assert rel.low <= int(value) <= rel.high
            elif rel.kind == "category":
                assert value in world.categories[name]


def test_names_are_unique_across_roles(world):
    names = [e.name for e in world.entities] + [e.attributes["capital"] for e in world.entities]
    names += [v for pool in world.categories.values() for v in pool]
    assert len(names) == len(set(names))


def test_coverage_is_nested_and_stratified(world):
    half, most = world.covered(0.5), world.covered(0.8)
    assert half < most
    test_names = {e.name for e in world.split("test")}
    assert len(half & test_names) == round(0.5 * len(test_names))
    assert world.covered(0.0) == set()
    assert world.covered(1.0) == {e.name for e in world.entities}


def test_cloze_prefix_is_the_corpus_phrasing_without_the_value():
    assert RELATIONS["founded"].cloze_prefix("Vorlakia") == "Vorlakia was founded in"
    assert RELATIONS["capital"].cloze_prefix("Vorlakia") == "The capital of Vorlakia is"


def test_categories_are_balanced_among_known_and_unread_entities_at_every_coverage():
    """A constant guess about unread entities must score chance whichever option it is."""
    world = generate_world(200, 0.3, seed=0)
    for coverage in (0.25, 0.5, 0.8, 1.0):
        covered = world.covered(coverage)
        for split in ("train", "test"):
            entities = world.split(split)
            for relation, pool in world.categories.items():
                for group in (
                    [e for e in entities if e.name in covered],
                    [e for e in entities if e.name not in covered],
                ):
                    if not group:
                        continue
                    counts = Counter(e.attributes[relation] for e in group)
                    per_value = [counts[value] for value in pool]
                    assert max(per_value) - min(per_value) <= 2, (coverage, split, relation, per_value)


def test_categories_are_dealt_in_shuffled_blocks_along_the_coverage_order():
    world = generate_world(200, 0.3, seed=0)
    pool = set(world.categories["language"])
    by_name = {e.name: e for e in world.entities}
    for split in ("train", "test"):
        order = coverage_order(world.seed, [e.name for e in world.split(split)], split)
        dealt = [by_name[name].attributes["language"] for name in order]
        blocks = [dealt[i : i + len(pool)] for i in range(0, len(dealt) - len(pool) + 1, len(pool))]
        assert all(set(block) == pool for block in blocks)
        assert len({tuple(block) for block in blocks}) > 1  # each block shuffled on its own


def test_counts_have_three_digits_so_a_guess_rarely_scores():
    world = generate_world(200, 0.3, seed=0)
    assert all(100 <= int(e.attributes["districts"]) <= 999 for e in world.entities)
