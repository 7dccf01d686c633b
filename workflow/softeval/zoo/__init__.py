"""The embedded zoo: the world's corpus, its tokenizer, pre- and post-training of the tiny
models, their knowledge and format probes, random models for smoke runs, and the zoo table."""
