"""Does a zoo have the paper's setting, and what does each method recover in it?

Read from the zoo's probes (results/tables/zoo.csv), so a world can be judged after `--until
zoo_report` (a few minutes) before a full run:

- extractable knowledge: the post-trained twins' zero-shot strict ranking against the true
  knowledge ranking of the task's relation (the zoo's probe), swaps per task (ties in the
  scores at their alphabetical order, as the tables rank them);
- a formatting tax: base zero-shot format on the open tasks, per model, and the models whose
  mean zero-shot strict over the open tasks is at most 0.05 while their knowledge is not.

After a full run (results/tables/scores.csv beside zoo.csv) it also prints, per task and
method, the base ranking's swaps to that relation's truth and to the twins' zero-shot ranking.
The workflow's `truth_distance` column ranks by each model's knowledge averaged over the
relations; a task asks about one relation, and a model may hold one relation far worse than
the others (atlas: districts 0.12 beside capitals 1.0), so this script ranks by the task's own.

    python benchmarks/world_setting.py [results/tables]
"""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

from softeval.analysis.ranking import rank_by_score, swap_distance
from softeval.config.sources import load_config_file
from softeval.data.tasks import load_task

# The default's world tasks, as their task files define them (every overlay keeps each task's
# relation and kind): the relation a task asks about, and which tasks are open.
CONFIG = Path(__file__).resolve().parents[1] / "config"
WORLD_TASKS = [load_task(CONFIG / "tasks", name) for name in load_config_file(CONFIG / "config.yaml")["tasks"]]
RELATION = {task.name: task.dataset["relation"] for task in WORLD_TASKS}
OPEN = tuple(task.name for task in WORLD_TASKS if not task.closed)


def truth_of(zoo: pd.DataFrame, task: str) -> dict[str, float]:
    """Each base model's knowledge of the relation the task asks about."""
    base = zoo[zoo.role == "base"].set_index("model")
    return base[f"knowledge_{RELATION[task]}"].to_dict()


def setting(zoo: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Per task: twins' and base models' swaps to the truth; per base model: the tax."""
    base = zoo[zoo.role == "base"].set_index("model")
    post = zoo[zoo.role == "post"].set_index("model")
    tasks = [t for t in RELATION if f"zero_shot_strict_{t}" in zoo]
    swaps = []
    for task in tasks:
        truth = rank_by_score(truth_of(zoo, task))
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


def same_run(zoo: pd.DataFrame, scores: pd.DataFrame) -> bool:
    """The probes' zero-shot strict is the evaluation's zero-shot strict (the same greedy engine):
    where they differ, scores.csv is left from a run of another zoo."""
    zero_shot = scores[scores.method == "zero_shot"].set_index(["model", "role", "task"]).strict
    return all(
        abs(zero_shot[(row.model, row.role, task)] - row[f"zero_shot_strict_{task}"]) < 1e-9
        for _, row in zoo.iterrows()
        for task in RELATION
        if (row.model, row.role, task) in zero_shot.index
    )


def recovered(zoo: pd.DataFrame, scores: pd.DataFrame) -> pd.DataFrame:
    """Per task and method: the base ranking's swaps to the relation's truth and to the twins'
    zero-shot ranking (strict; the soft prompt at its last snapshot), summed over the tasks in
    the last rows."""
    final = scores[(scores.method != "soft_prompt") | (scores.step == scores.step.max())]
    rows = []
    for task in [t for t in RELATION if t in set(scores.task)]:
        of_task = final[final.task == task]
        twins = of_task[(of_task.role == "post") & (of_task.method == "zero_shot")].set_index("model").strict
        truth = rank_by_score(truth_of(zoo, task))
        for method in ("zero_shot", "few_shot", "soft_prompt"):
            base = of_task[(of_task.role == "base") & (of_task.method == method)].set_index("model").strict
            ranking = rank_by_score(base.to_dict())
            rows.append(
                {
                    "task": task,
                    "method": method,
                    "to_truth": swap_distance(ranking, truth),
                    "to_twins": swap_distance(ranking, rank_by_score(twins.to_dict())),
                }
            )
    table = pd.DataFrame(rows)
    totals = table.groupby("method", sort=False)[["to_truth", "to_twins"]].sum().reset_index()
    return pd.concat([table, totals.assign(task="all tasks")], ignore_index=True)


if __name__ == "__main__":
    tables = Path(sys.argv[1] if len(sys.argv) > 1 else "results/tables")
    zoo = pd.read_csv(tables / "zoo.csv")
    swaps, tax = setting(zoo)
    print(swaps.to_string(index=False))
    print()
    print(tax.to_string())
    if (tables / "scores.csv").exists():
        scores = pd.read_csv(tables / "scores.csv")
        print()
        if same_run(zoo, scores):
            print(recovered(zoo, scores).to_string(index=False))
        else:
            print(f"{tables / 'scores.csv'}: another run's (its zero-shot scores are not the probes'): not read")
