"""The thresholds and levels the evidence is read at: the paper's (format saturated, knowledge
flat), the significance of a paired test, the level of every interval and of an equivalence. One
module for them, so that the intervals, the tests, the tables, the leaderboard and the claims read
the same numbers."""

from __future__ import annotations

# The paper's thresholds: format "saturates" at 90% of answers in form; knowledge is "flat"
# when it moves by at most 0.05 (an equivalence margin: its interval must lie within it).
FORMAT_SATURATED = 0.9
KNOWLEDGE_FLAT = 0.05
# A difference is significant below this exact McNemar p-value.
SIGNIFICANCE = 0.05
# Every interval reported is a 95% one; a verdict against the claimed direction reads one side of it.
LEVEL = 0.95
# The two one-sided tests of an equivalence (TOST) at 5% each: the 90% interval within the margin.
EQUIVALENCE_LEVEL = 0.90
# How far below a baseline a method may score and still count as "not below" it (non-inferiority):
# the same five points as "flat".
NON_INFERIORITY = 0.05
