"""The evaluation engine: loading models, building method prompts, soft-prompt tuning,
batched generation and option log-likelihoods, generation backends, and their plumbing
(batching, context limits, memory back-off, chunked outputs, GPU slots)."""
