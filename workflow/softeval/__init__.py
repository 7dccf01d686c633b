"""softeval: fair evaluation of base language models with brief soft-prompt tuning."""

__version__ = "0.1.0"
