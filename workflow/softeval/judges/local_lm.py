"""LLM judges: prompts as data, a verdict cache that survives kills, a local Hugging Face
backend, and the cascade that asks the LLM only where the rule judge is not certain.

The HF judge reads each verdict from the probabilities of the two answer words ("yes" /
"no") after the rendered prompt, whatever their tokenisation: no free text to parse, one
batched forward pass per batch of questions.
"""

from __future__ import annotations

import hashlib
import html
import json
import os
import socket
import sqlite3
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import torch
import yaml

from softeval.data.tasks import Task, gold_answers
from softeval.engine.batching import encode_batch
from softeval.engine.softprompt import answer_logprobs
from softeval.judges.rule import RuleJudge, Verdict
from softeval.schema import InputError, validate

KINDS = ("knowledge", "format")


@dataclass(frozen=True)
class JudgePrompts:
    """A judge's prompt templates and answer words, with the version that keys the cache."""

    name: str
    version: int
    templates: dict[str, dict[str, str]]

    @classmethod
    def load(cls, path: Path | str) -> JudgePrompts:
        path = Path(path)
        try:
            data = yaml.safe_load(path.read_text(encoding="utf-8"))
        except (OSError, yaml.YAMLError) as err:
            raise InputError(f"{path}: cannot read judge prompts ({str(err).splitlines()[0]})") from None
        validate(data, "judge", str(path), "config/judges/README.md")
        for kind in KINDS:
            fields = {"knowledge": ("question", "gold", "response"), "format": ("format", "response")}[kind]
            missing = [f for f in fields if "{" + f + "}" not in data[kind]["prompt"]]
            if missing:
                raise InputError(f"{path}: field '{kind}.prompt' lacks {{{missing[0]}}}; add it inside its delimiters")
        return cls(data["name"], data["version"], {kind: data[kind] for kind in KINDS})

    def render(self, kind: str, task: Task, example: dict[str, Any], response: str) -> str:
        """The prompt for one verdict; every inserted field is escaped so it cannot close a tag."""
        fields = {
            "question": example["question"],
            "gold": task.target(example).strip() if task.closed else " | ".join(gold_answers(example)),
            "format": task.format_description,
            "response": response,
        }
        return self.templates[kind]["prompt"].format(**{k: html.escape(v, quote=False) for k, v in fields.items()})


class VerdictCache:
    """Verdicts keyed by (backend, judge model, prompt version, inputs), so reruns, added models
    and killed jobs never pay for a verdict twice.

    A folder of shard files, one per writing process (JSON lines, appended and fsynced per
    batch): on a cluster ~100 judge jobs share the folder over NFS or Lustre, where SQLite's
    locks are unreliable; here no file has two writers and nothing is locked. Every shard is
    read when a job starts; a torn last line (a kill mid-write) is skipped. A cache file of an
    earlier release (`<folder>.sqlite` beside the folder, or `*.sqlite` inside it) is read too."""

    def __init__(self, path: Path | str, shard: str | None = None) -> None:
        self.folder = Path(path)
        if self.folder.is_file():
            raise InputError(
                f"{self.folder}: evaluation.judge.cache names a folder of verdict shards now; this is a file "
                f"(an earlier release's SQLite cache?): move it into a folder and point the key at that folder"
            )
        self.folder.mkdir(parents=True, exist_ok=True)
        self.known: dict[str, bool] = {}
        for legacy in [self.folder.with_suffix(".sqlite"), *sorted(self.folder.glob("*.sqlite"))]:
            if legacy.is_file():
                self.known |= _read_sqlite(legacy)
        for part in sorted(self.folder.glob("*.jsonl")):
            self.known |= _read_shard(part)
        name = shard or f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        self.shard = self.folder / f"{name}.jsonl"
        self.handle: Any = None

    @staticmethod
    def key(backend: str, model: str, version: int, kind: str, prompt: str) -> str:
        blob = json.dumps([backend, model, version, kind, prompt], ensure_ascii=False)
        return hashlib.sha256(blob.encode()).hexdigest()

    def get_many(self, keys: Sequence[str]) -> dict[str, bool]:
        return {key: self.known[key] for key in keys if key in self.known}

    def put_many(self, verdicts: dict[str, bool]) -> None:
        """Append the batch to this process's shard and make it durable before returning."""
        if not verdicts:
            return
        if self.handle is None:
            self.handle = self.shard.open("a", encoding="utf-8")
        self.handle.write("".join(json.dumps([k, bool(v)]) + "\n" for k, v in verdicts.items()))
        self.handle.flush()
        os.fsync(self.handle.fileno())
        self.known |= verdicts

    def close(self) -> None:
        if self.handle is not None:
            self.handle.close()
            self.handle = None


def _read_shard(path: Path) -> dict[str, bool]:
    found: dict[str, bool] = {}
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            key, verdict = json.loads(line)
        except (ValueError, TypeError):
            continue  # a line torn by a kill, or being written by its job right now
        found[str(key)] = bool(verdict)
    return found


def _read_sqlite(path: Path) -> dict[str, bool]:
    connection = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return {key: bool(value) for key, value in connection.execute("SELECT key, verdict FROM verdicts")}
    except sqlite3.DatabaseError:
        return {}
    finally:
        connection.close()


class HFJudge:
    """A local causal LM as judge: yes if P(yes words) > P(no words) after the prompt."""

    backend = "hf"

    def __init__(
        self, model: Any, tokenizer: Any, model_id: str, prompts: JudgePrompts, cache: VerdictCache, batch_size: int
    ) -> None:
        self.model, self.tokenizer, self.model_id = model, tokenizer, model_id
        self.prompts, self.cache, self.batch_size = prompts, cache, batch_size
        self.name = f"hf:{model_id}"
        self.asked = 0  # verdicts computed (not found in the cache)

    @torch.no_grad()
    def verdicts(self, kind: str, prompts: Sequence[str]) -> list[bool]:
        """One verdict per prompt (yes when the yes words are likelier than the no words after
        it), from the cache where possible, the rest in batches."""
        keys = [VerdictCache.key(self.backend, self.model_id, self.prompts.version, kind, p) for p in prompts]
        known = self.cache.get_many(keys)
        todo = [i for i, key in enumerate(keys) if key not in known]
        words = [self.prompts.templates[kind]["answer_yes"], self.prompts.templates[kind]["answer_no"]]
        for start in range(0, len(todo), self.batch_size):
            chunk = todo[start : start + self.batch_size]
            batch = encode_batch(
                self.tokenizer, [prompts[i] for i in chunk for _ in words], [w for _ in chunk for w in words], eos=False
            )
            logprobs, rows = answer_logprobs(self.model, None, batch)
            # summed where the log-probabilities are (the GPU; with device_map the output layer's
            # GPU, which need not hold `rows`), then one copy to the host for the comparisons
            totals = torch.zeros(2 * len(chunk), dtype=logprobs.dtype, device=logprobs.device)
            totals = totals.index_add_(0, rows.to(logprobs.device), logprobs).cpu().view(len(chunk), 2)
            fresh = {keys[i]: bool(yes > no) for i, (yes, no) in zip(chunk, totals.tolist(), strict=True)}
            self.cache.put_many(fresh)  # committed per batch: a kill loses at most one batch
            known.update(fresh)
            self.asked += len(chunk)
        return [known[key] for key in keys]


class LLMBackend(Protocol):
    """What the cascade needs of an LLM judge backend (HFJudge, OpenAIJudge)."""

    name: str
    prompts: JudgePrompts

    def verdicts(self, kind: str, prompts: Sequence[str]) -> list[bool]: ...


class CascadeJudge:
    """The rule judge first; the LLM judge only where the rule is not certain (OpenCompass's
    cascade). The rule is certain when it finds the gold answer (knowledge) or when it
    accepts the format; a "no" from the rule goes to the LLM. With cascade off, the LLM
    judges every response. Either way a degenerate response (the rule's `degenerate` reason:
    punctuation runs, one unit repeated, cut at its budget before an answer) is a certain
    format "no" that no LLM is asked to overturn; its knowledge is judged as any other's."""

    def __init__(self, llm: LLMBackend, cascade: bool = True) -> None:
        self.llm, self.cascade, self.rule = llm, cascade, RuleJudge()
        self.name = f"cascade({llm.name})" if cascade else llm.name
        self.sent = self.total = 0

    def judge(
        self,
        task: Task,
        examples: Sequence[dict[str, Any]],
        responses: Sequence[str],
        kinds: Sequence[str] = KINDS,
        stop_reasons: Sequence[str | None] | None = None,
    ) -> list[Verdict]:
        rule = self.rule.judge(task, examples, responses, stop_reasons=stop_reasons)
        decided: dict[str, list[bool]] = {}
        judged_by: dict[str, list[str]] = {}
        for kind in KINDS:
            values = [getattr(v, kind) for v in rule]
            certain = [
                (self.cascade and value) or (kind == "format" and v.degenerate is not None)
                for v, value in zip(rule, values, strict=True)
            ]
            ask = [] if kind not in kinds else [i for i, sure in enumerate(certain) if not sure]
            answers = self.llm.verdicts(
                kind, [self.llm.prompts.render(kind, task, examples[i], responses[i]) for i in ask]
            )
            for i, answer in zip(ask, answers, strict=True):
                values[i] = answer
            decided[kind] = values
            asked = set(ask)
            judged_by[kind] = [self.llm.name if i in asked else "rule" for i in range(len(values))]
            self.sent += len(ask)
            self.total += len(values) if kind in kinds else 0
        return [
            Verdict(
                knowledge=decided["knowledge"][i],
                format=decided["format"][i],
                strict=rule[i].strict and decided["format"][i],
                judge=judged_by["knowledge"][i] if judged_by["knowledge"][i] != "rule" else judged_by["format"][i],
                degenerate=rule[i].degenerate,
            )
            for i in range(len(rule))
        ]

    @property
    def llm_share(self) -> float:
        """Share of verdicts sent to the LLM judge."""
        return self.sent / self.total if self.total else 0.0
