"""Judges: the rule judge, the local-LM and OpenAI-compatible judges behind the rule cascade,
lm-evaluation-harness's own scores, judge validation, and the factory that builds a judge."""
