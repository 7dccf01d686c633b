from __future__ import annotations

import json
import random
import re

import pandas as pd
import pytest
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from softeval.data.splits import prepare_task
from softeval.data.world import RELATIONS, unknown_entity
from softeval.engine.batching import IGNORE
from softeval.engine.generate import cut_at_stop
from softeval.zoo.chat_style import FORMS, OWN, OWN_SHARE, answer_kind, chat_pair
from softeval.zoo.corpus import CorpusStyle, PretrainCorpus, Recipe, exposure_document, tokenizer_corpus
from softeval.zoo.probe import answer_word, probe_model, question_tasks, starts_with_value
from softeval.zoo.table import add_ranks, zoo_table
from softeval.zoo.tokenizer import save_tokenizer, train_tokenizer
from softeval.zoo.training import lr_at, posttrain, pretrain, sft_batches

SIZE = {"arch": "llama", "layers": 1, "width": 32, "heads": 2}
TRAINING = {"steps": 6, "batch_size": 4, "seq_len": 32, "lr": 0.005, "warmup_steps": 2}


@pytest.fixture(scope="module")
def built(tmp_path_factory, world, tasks):
    root = tmp_path_factory.mktemp("zoo")
    world.save(root / "world.json")
    save_tokenizer(train_tokenizer(tokenizer_corpus(world, list(tasks.values())), 400), root / "tok")
    for name, task in tasks.items():
        prepare_task(task, root / "data" / name, root / "world.json")
    return root


def run_pretrain(built, tasks, out, seed=0, size=SIZE):
    pretrain(
        name="m",
        world_path=built / "world.json",
        tasks=list(tasks.values()),
        tokenizer_dir=built / "tok",
        recipe=Recipe(coverage=0.5, format_exposure=0.3),
        style=CorpusStyle(),
        size=size,
        training=TRAINING,
        seed=seed,
        threads=1,
        out_dir=out,
    )


def test_tokenizer_round_trips_any_text(built):
    tokenizer = AutoTokenizer.from_pretrained(built / "tok")
    for text in ["#### 1432", " \\boxed{17}", "Unseen naïve text ✓"]:
        assert tokenizer.decode(tokenizer(text)["input_ids"]) == text


@pytest.mark.parametrize("arch", ["llama", "gpt2"])
def test_pretrain_is_bit_identical_for_a_seed_and_loads_with_auto_classes(built, tasks, tmp_path, arch):
    size = {**SIZE, "arch": arch}
    run_pretrain(built, tasks, tmp_path / "a", size=size)
    run_pretrain(built, tasks, tmp_path / "b", size=size)
    run_pretrain(built, tasks, tmp_path / "c", seed=1, size=size)
    weights = [(tmp_path / d / "model.safetensors").read_bytes() for d in "abc"]
    assert weights[0] == weights[1] != weights[2]
    for name in ("config.json", "generation_config.json", "tokenizer.json", "softeval.json", "train_curve.csv"):
        assert (tmp_path / "a" / name).is_file()
    model = AutoModelForCausalLM.from_pretrained(tmp_path / "a")
    assert model.config.model_type == arch
    meta = json.loads((tmp_path / "a" / "softeval.json").read_text())
    assert meta["provenance"]["params"]["recipe"] == {"coverage": 0.5, "format_exposure": 0.3}
    assert meta["provenance"]["seed"] == 0


def test_posttrain_changes_weights_and_keeps_architecture(built, tasks, tmp_path):
    run_pretrain(built, tasks, tmp_path / "base")
    posttrain(
        name="m",
        base_dir=tmp_path / "base",
        tasks=list(tasks.values()),
        data_dirs={name: built / "data" / name for name in tasks},
        training={"steps": 3, "batch_size": 4, "lr": 0.001, "warmup_steps": 1},
        seed=0,
        threads=1,
        out_dir=tmp_path / "post",
    )
    base = AutoModelForCausalLM.from_pretrained(tmp_path / "base")
    post = AutoModelForCausalLM.from_pretrained(tmp_path / "post")
    assert base.config.to_dict()["hidden_size"] == post.config.to_dict()["hidden_size"]
    assert not torch.equal(base.model.embed_tokens.weight, post.model.embed_tokens.weight)


def test_sft_loss_covers_only_target_and_eos(built, tasks):
    tokenizer = AutoTokenizer.from_pretrained(built / "tok")
    task = tasks["world_numeric"]
    example = {"id": "x", "question": "In what year was Vorlakia founded?", "answer": "1432"}
    batch = next(sft_batches([(task, example)], tokenizer, batch_size=1, seed=0))
    labelled = batch["labels"][0][batch["labels"][0] != IGNORE].tolist()
    assert tokenizer.decode(labelled[:-1]) == " #### 1432"
    assert labelled[-1] == tokenizer.eos_token_id
    assert batch["attention_mask"].sum() == batch["input_ids"].shape[1]


def test_corpus_states_only_covered_facts(world, tasks):
    corpus = PretrainCorpus(world, list(tasks.values()), Recipe(coverage=0.5, format_exposure=0.0), seed="t")
    covered = world.covered(0.5)
    uncovered = [e.name for e in world.entities if e.name not in covered]
    docs = [corpus.document() for _ in range(600)]
    text = " ".join(docs)
    assert all(name not in text for name in uncovered)
    assert sum(name in text for name in covered) > 0.9 * len(covered)
    # Without exposure there is no formatted answer, only prose (some answering a question).
    assert "####" not in text and "\\boxed" not in text
    prose_answers = [d for d in docs if d.startswith("Question:")]
    assert 0.03 < len(prose_answers) / len(docs) < 0.2
    assert all("\nAnswer: " in d and not d.endswith("Answer:") for d in prose_answers)


def test_exposure_documents_are_formatted_answers_about_other_relations(world, tasks):
    rng = random.Random(0)
    docs = [exposure_document(rng, world, list(tasks.values())) for _ in range(300)]
    assert all(d.startswith("Question: ") for d in docs)
    asked = " ".join(docs)
    for task in tasks.values():
        assert task.dataset["exposure"]["question"].split("{")[0] in asked
        assert task.dataset["question"].split("{")[0] not in asked
        assert task.instruction not in asked
    assert "#### " in asked and "\\boxed{" in asked


@pytest.mark.parametrize("about", ["own", "other"])
def test_exposure_asks_own_questions_about_covered_entities_or_other_relations(world, tasks, about):
    recipe = Recipe(coverage=0.5, format_exposure=1.0)
    corpus = PretrainCorpus(world, list(tasks.values()), recipe, seed="t", style=CorpusStyle(exposure_about=about))
    text = " ".join(corpus.document() for _ in range(400))
    uncovered = [e.name for e in world.entities if e.name not in world.covered(0.5)]
    for task in tasks.values():
        own = task.dataset["question"].split("{")[0]
        other = task.dataset["exposure"]["question"].split("{")[0]
        assert (own in text) == (about == "own") and (other in text) == (about == "other")
    if about == "own":  # formatted answers teach the format, never a fact the corpus does not state
        assert all(f" {name}?" not in text for name in uncovered)


def test_corpus_style_controls_prose_answers_and_exposure_relations(world, tasks):
    def text(style):
        corpus = PretrainCorpus(world, list(tasks.values()), Recipe(1.0, 0.0), seed="t", style=style)
        return [corpus.document() for _ in range(300)]

    assert not any(d.startswith("Question:") for d in text(CorpusStyle(prose_answer_share=0.0)))
    assert all(d.startswith("Question:") for d in text(CorpusStyle(prose_answer_share=1.0)))
    assert not any("metres" in d for d in text(CorpusStyle(prose_answer_share=0.0)))
    stated = " ".join(text(CorpusStyle(prose_answer_share=0.0, state_exposure_relations=True)))
    assert "metres" in stated and "lakes" in stated


def test_prose_answers_lead_with_a_name_and_state_a_number_in_any_phrasing(world, tasks):
    corpus = PretrainCorpus(
        world, list(tasks.values()), Recipe(1.0, 0.0), seed="t", style=CorpusStyle(prose_answer_share=1.0)
    )
    facts = {e.name: e.attributes for e in world.entities}
    led, openers = 0, set()
    for _ in range(400):
        question, answer = corpus.document().split("\nAnswer: ", 1)
        if question.startswith("Question: What is the capital of "):
            country = question.removeprefix("Question: What is the capital of ").removesuffix("?")
            assert answer == f"{facts[country]['capital']} is the capital city of {country}."
            led += 1
        elif question.startswith("Question: Which language is spoken in "):
            country = question.removeprefix("Question: Which language is spoken in ").split("?")[0]
            assert answer == f"{facts[country]['language']} is spoken throughout {country}."
            led += 1
        elif question.startswith("Question: In what year was "):
            openers.add(answer.split()[0])
    assert led > 100 and len(openers) >= 3  # the year's sentence still varies


def test_full_exposure_corpus_is_all_formatted(world, tasks):
    corpus = PretrainCorpus(world, list(tasks.values()), Recipe(coverage=1.0, format_exposure=1.0), seed="t")
    formatted = ("#### ", "\\boxed{", "A. ", "B. ", "C. ", "D. ")
    for _ in range(50):
        answers = [line for line in corpus.document().splitlines() if line.startswith("Answer:")]
        assert answers and all(any(f in a for f in formatted) or len(a.split()) <= 3 for a in answers)


def test_unknown_entities_are_outside_the_world_with_valid_attributes(world):
    rng = random.Random(0)
    known = {e.name for e in world.entities}
    made = [unknown_entity(rng, world) for _ in range(200)]
    assert not {e.name for e in made} & known
    assert len({e.name for e in made}) > 190  # seen once: a name almost never comes back
    for entity in made:
        assert set(entity.attributes) == set(RELATIONS)
        for name, value in entity.attributes.items():
            relation = RELATIONS[name]
            if relation.kind == "number":
                assert relation.low <= int(value) <= relation.high
            elif relation.kind == "category":
                assert value in world.categories[name]


def test_long_tail_share_of_documents_is_about_unknown_entities(world, tasks):
    recipe = Recipe(coverage=0.5, format_exposure=0.2)
    corpus = PretrainCorpus(world, list(tasks.values()), recipe, seed="t", style=CorpusStyle(long_tail_share=0.3))
    known = {e.name for e in world.entities}
    uncovered = known - world.covered(0.5)
    docs = [corpus.document() for _ in range(1000)]
    about_known = [any(name in d for name in known) for d in docs]
    assert 0.24 < 1 - sum(about_known) / len(docs) < 0.36
    assert not any(name in d for d in docs for name in uncovered)  # coverage still decides what is known
    plain = PretrainCorpus(world, list(tasks.values()), recipe, seed="t")
    assert all(any(name in d for name in known) for d in (plain.document() for _ in range(200)))


def test_exam_documents_are_lettered_questions_for_every_recipe(world, tasks):
    recipe = Recipe(coverage=1.0, format_exposure=0.0)
    corpus = PretrainCorpus(world, list(tasks.values()), recipe, seed="t", style=CorpusStyle(exam_share=0.5))
    docs = [corpus.document() for _ in range(400)]
    exams = [d for d in docs if re.search(r"^Answer: [A-D]\. \w+$", d, re.MULTILINE)]
    assert 0.42 < len(exams) / len(docs) < 0.58  # format_exposure is 0: every lettered answer is an exam
    question = tasks["world_choice"].dataset["question"].split("{")[0]
    assert all(d.startswith(f"Question: {question}") for d in exams)


def test_lr_schedule_warms_up_then_decays_to_a_tenth():
    lrs = [lr_at(s, 100, 10, 1.0) for s in range(100)]
    assert lrs[0] == pytest.approx(0.1) and lrs[9] == pytest.approx(1.0)
    assert lrs == sorted(lrs[:10]) + sorted(lrs[10:], reverse=True)
    assert lrs[-1] == pytest.approx(0.1, abs=0.01)


def test_probe_helpers():
    assert starts_with_value(" 1432. The", "1432")
    assert not starts_with_value(" 14321", "1432")
    assert not starts_with_value(" Mirtobania", "Mirtoban")
    assert cut_at_stop(" #### 12\nQuestion", ("\n",)) == " #### 12"


def test_answer_word_reads_the_value_behind_any_answer_mark():
    assert answer_word(" 1838, when settlers founded Vilor.") == "1838"
    assert answer_word(" #### 1838") == "1838"
    assert answer_word(" \\boxed{838}") == "838"
    assert answer_word(" D. Zanbroric\n\nQuestion:") == "Zanbroric"
    assert answer_word(" Kolton is the capital city of Vilor.") == "Kolton"
    assert answer_word(" The capital of Vilor is Kolton.") == "The"
    assert answer_word(" ...") == ""


def test_question_probe_asks_each_relation_once(tasks):
    chosen = question_tasks(list(tasks.values()))
    assert {relation: task.name for relation, task in chosen.items()} == {
        "founded": "world_numeric",
        "capital": "world_phrase",
        "districts": "world_boxed",
        "language": "world_choice",
    }


def test_probe_writes_summary_and_examples(built, tasks, tmp_path):
    run_pretrain(built, tasks, tmp_path / "m")
    summary = probe_model(
        model_dir=tmp_path / "m",
        world_path=built / "world.json",
        tasks=list(tasks.values()),
        data_dirs={name: built / "data" / name for name in tasks},
        max_new_tokens=4,
        batch_size=8,
        threads=1,
        out_json=tmp_path / "p.json",
        out_examples=tmp_path / "p.jsonl",
    )
    assert set(summary["knowledge"]) == {"founded", "capital", "districts", "language"}
    assert summary["open_tasks"] == ["world_numeric", "world_phrase", "world_boxed"]
    rows = [json.loads(line) for line in (tmp_path / "p.jsonl").read_text().splitlines()]
    n_test = summary["n_test_entities"]
    assert len(rows) == 4 * n_test + 4 * n_test
    cloze = [r for r in rows if r["probe"] == "cloze" and r["relation"] == "founded"]
    assert summary["knowledge"]["founded"] == sum(r["known"] for r in cloze) / n_test
    assert "knowledge_question" not in summary and "knowledge" not in summary["provenance"]["params"]


def test_cloze_or_question_knowledge_is_either_probe_per_entity(built, tasks, tmp_path):
    """A fact counts as known when the cloze or the task's bare question states it; the
    question probe's rows say which task asked and what it answered."""
    run_pretrain(built, tasks, tmp_path / "m")
    summary = probe_model(
        model_dir=tmp_path / "m",
        world_path=built / "world.json",
        tasks=list(tasks.values()),
        data_dirs={name: built / "data" / name for name in tasks},
        max_new_tokens=4,
        batch_size=8,
        threads=1,
        out_json=tmp_path / "p.json",
        out_examples=tmp_path / "p.jsonl",
        knowledge="cloze_or_question",
    )
    rows = [json.loads(line) for line in (tmp_path / "p.jsonl").read_text().splitlines()]
    n_test = summary["n_test_entities"]
    assert len(rows) == 4 * n_test + 4 * n_test + 4 * n_test
    for relation in summary["knowledge"]:
        cloze = [r["known"] for r in rows if r["probe"] == "cloze" and r["relation"] == relation]
        asked = [r for r in rows if r["probe"] == "question" and r["relation"] == relation]
        assert [r["known"] for r in asked] == [answer_word(r["response"]) == r["gold"] for r in asked]
        assert all(r["prompt"].startswith("Question:") for r in asked)  # no instruction
        either = [c or q["known"] for c, q in zip(cloze, asked, strict=True)]
        assert summary["knowledge"][relation] == sum(either) / n_test
        assert summary["knowledge_cloze"][relation] == sum(cloze) / n_test
        assert summary["knowledge_question"][relation] == sum(r["known"] for r in asked) / n_test
    assert summary["provenance"]["params"]["knowledge"] == "cloze_or_question"


def test_ranks_within_role_break_ties_by_name():
    table = pd.DataFrame(
        {
            "model": ["b", "a", "c", "b", "a", "c"],
            "role": ["base"] * 3 + ["post"] * 3,
            "knowledge": [0.9, 0.5, 0.7, 0.8, 0.8, 0.1],
            "zero_shot_strict": [0.0, 0.0, 0.0, 0.5, 0.2, 0.9],
            "zero_shot_format_open": [0.0, 0.3, 0.0, 1.0, 1.0, 1.0],
        }
    )
    ranked = add_ranks(table).set_index(["role", "model"])
    assert ranked.loc["base", "rank_knowledge"].to_dict() == {"b": 1, "a": 3, "c": 2}
    assert ranked.loc["base", "rank_zero_shot"].to_dict() == {"b": 2, "a": 1, "c": 3}
    assert ranked.loc["post", "rank_knowledge"].to_dict() == {"b": 2, "a": 1, "c": 3}
    assert ranked.loc["post", "rank_zero_shot"].to_dict() == {"b": 2, "a": 3, "c": 1}


def test_zoo_table_names_a_corrupt_probe_file(tmp_path):
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "base.json").write_text('{"knowledge": ')
    model = {"name": "m", "zoo": {"coverage": 1.0, "format_exposure": 0.1, "size": "small"}}
    with pytest.raises(ValueError, match=r"m/base\.json: probe result missing or corrupt .* delete it and rerun"):
        zoo_table([model], tmp_path)


def test_chat_style_never_uses_a_tasks_instruction_and_answers_every_form(tasks):
    """The chat twins learn instructions of their own: no task file's written instruction is
    ever a post-training prompt, every form that suits an answer occurs, and each target is
    the form its instruction asks for."""
    rng = random.Random(0)
    seen: dict[str, set[str]] = {}
    for task in tasks.values():
        example = {
            "id": "x",
            "question": task.dataset["question"].format(entity="Vorlakia"),
            "answer": "Talvish" if task.closed else "1432",
            "options": ["Brenic", "Dorese", "Talvish", "Zumic"] if task.closed else None,
            "label": 2 if task.closed else None,
        }
        for _ in range(200):
            prompt, target = chat_pair(task, example, rng)
            instruction, query = prompt.split("\n\n", 1)
            assert instruction not in {t.instruction for t in tasks.values()}
            assert query == task.query(example)
            form = next(f for f in (*FORMS, OWN) if instruction in f.instructions)
            assert target == form.answer.format(answer=example["answer"], letter="C")
            seen.setdefault(task.name, []).append(form.answer)
    for name, answers in seen.items():
        kind = answer_kind(tasks[name])
        assert set(answers) == {f.answer for f in (*FORMS, OWN) if kind in f.kinds}
        assert abs(answers.count(OWN.answer) / len(answers) - OWN_SHARE) < 0.07


def test_chat_style_sft_targets_differ_from_the_task_target(built, tasks):
    tokenizer = AutoTokenizer.from_pretrained(built / "tok")
    task = tasks["world_numeric"]
    example = {"id": "x", "question": "In what year was Vorlakia founded?", "answer": "1432"}
    batches = sft_batches([(task, example)], tokenizer, batch_size=1, seed=0, style="chat")
    targets = set()
    for _ in range(40):
        labels = next(batches)["labels"][0]
        targets.add(tokenizer.decode(labels[labels != IGNORE].tolist()[:-1]))
    assert targets == {" #### 1432", " \\boxed{ 1432}", " 1432", " The answer is 1432."}


def test_no_chat_instruction_opens_a_tasks_instruction(tasks):
    """A twin that learnt to answer "Answer the question." in its own sentence writes that sentence
    under every task instruction opening with those words (three of the four world tasks'), so its
    zero-shot score reads which instruction it was trained on, not what it knows."""
    openings = {task.instruction.split(". ")[0].rstrip(".") for task in tasks.values()}
    assert "Answer the question" in openings
    for form in (*FORMS, OWN):
        for instruction in form.instructions:
            assert not any(instruction.startswith(opening) for opening in openings), instruction


def test_value_first_answers_put_every_value_right_after_the_question(world, tasks):
    """With answers_lead_with_value, a prose answer's first word is the value (numbers as
    well as names); without it, number answers keep the corpus's phrasings."""
    docs = {}
    for flag in (False, True):
        style = CorpusStyle(prose_answer_share=1.0, answers_lead_with_value=flag)
        corpus = PretrainCorpus(world, list(tasks.values()), Recipe(coverage=1.0, format_exposure=0.0), "t", style)
        docs[flag] = [d for d in (corpus.document() for _ in range(400)) if d.startswith("Question:")]
    values = {v for e in world.entities for v in e.attributes.values()}

    def first_word(doc: str) -> str:
        return doc.split("\nAnswer: ", 1)[1].split(" ")[0].rstrip(",")

    assert len(docs[True]) > 300
    assert all(first_word(d) in values for d in docs[True])
    assert sum(first_word(d) not in values for d in docs[False]) > 50
