"""Does a zoo have the paper's setting? Read from its probes alone (results/tables/zoo.csv).

The checks issue-free of any soft prompt, so a world can be judged after `--until zoo_report`
(a few minutes) before a full run:

- extractable knowledge: the post-trained twins' zero-shot strict ranking against the true
  knowledge ranking (the cloze probe of the task's relation), swaps per task (ties in the
  scores at their alphabetical order, as the tables rank them);
- a formatting tax: base zero-shot format on the open tasks, per model, and the models whose
  mean zero-shot strict over the open tasks is at most 0.05 while their knowledge is not.

    python benchmarks/world_setting.py [results/tables/zoo.csv]
"""

from __future__ import annotations

import sys

import pandas as pd

from softeval.analysis.ranking import rank_by_score, swap_distance

RELATION = {
    "world_numeric": "founded",
    "world_phrase": "capital",
    "world_boxed": "districts",
    "world_choice": "language",
}
OPEN = ("world_numeric", "world_phrase", "world_boxed")


def setting(zoo: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Per task: twins' and base models' swaps to the truth; per base model: the tax."""
    base = zoo[zoo.role == "base"].set_index("model")
    post = zoo[zoo.role == "post"].set_index("model")
    tasks = [t for t in RELATION if f"zero_shot_strict_{t}" in zoo]
    swaps = []
    for task in tasks:
        truth = rank_by_score(base[f"knowledge_{RELATION[task]}"].to_dict())
        row = {"task": task, "models": len(base)}
        for role, frame in (("post", post), ("base", base)):
            row[f"{role}_swaps_to_truth"] = swap_distance(
                rank_by_score(frame[f"zero_shot_strict_{task}"].to_dict()), truth
            )
        swaps.append(row)
    open_tasks = [t for t in OPEN if t in tasks]
    tax = pd.DataFrame(
        {
            "knowledge": base[[f"knowledge_{RELATION[t]}" for t in open_tasks]].mean(axis=1),
            "format_open": base[[f"zero_shot_format_{t}" for t in open_tasks]].mean(axis=1),
            "strict_open": base[[f"zero_shot_strict_{t}" for t in open_tasks]].mean(axis=1),
            "post_format_open": post[[f"zero_shot_format_{t}" for t in open_tasks]].mean(axis=1),
        }
    )
    tax["compressed"] = (tax.strict_open <= 0.05) & (tax.knowledge >= 0.3)
    return pd.DataFrame(swaps), tax.round(3)


if __name__ == "__main__":
    swaps, tax = setting(pd.read_csv(sys.argv[1] if len(sys.argv) > 1 else "results/tables/zoo.csv"))
    print(swaps.to_string(index=False))
    print()
    print(tax.to_string())
