from __future__ import annotations

from softeval.world import RELATIONS, World, generate_world


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
