"""The evaluation's vocabulary, each name spelled once: the methods a model is evaluated by and
the roles it is evaluated in. Every module of the package uses these constants; the rules'
wildcard constraints and the folders under results/ spell the same words (tests/unit/test_names.py)."""

from __future__ import annotations

ZERO_SHOT, FEW_SHOT, SOFT_PROMPT = "zero_shot", "few_shot", "soft_prompt"
METHODS = (ZERO_SHOT, FEW_SHOT, SOFT_PROMPT)  # in the order tables list them

BASE, POST = "base", "post"
ROLES = (BASE, POST)  # a model's base checkpoint and its post-trained twin
