"""softeval: fair evaluation of base language models with brief soft-prompt tuning."""

__version__ = "0.1.0"


def run(*args, **kwargs):
    """Rank base checkpoints from Python: softeval.runner.run (its leaderboard as a DataFrame)."""
    from softeval.runner import run as run_workflow

    return run_workflow(*args, **kwargs)
