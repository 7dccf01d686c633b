"""The user's commands that are no workflow job: a run, its leaderboard, config checks and costs, the
benchmark mirror, a run's manifest, verification against a published record, and review (each a
module with add_arguments and run; softeval.cli dispatches to them)."""
