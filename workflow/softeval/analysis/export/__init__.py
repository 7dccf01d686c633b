"""Output others can read: lm-evaluation-harness results files, TensorBoard event files and a
Weights & Biases run, all made from the tidy score table (`aggregate`: results/tables/scores.parquet).

lm-evaluation-harness (`write_lm_eval_results`): one `results_<model>.json` per model (its base
role) and `results_<model>.post.json` for a post-trained twin (a model may be base-only; '.' is
no slug character, so no model's name collides with another's twin), in the layout of the
harness's own results file (`simple_evaluate` + `EvaluationTracker`): `results`, `configs`,
`versions`, `higher_is_better`, `n-samples`, `group_subtasks`, `config`, `model_name` (and `date` when asked).
Each task's entry holds `"<metric>,<filter>"` keys with `"<metric>_stderr,<filter>"` beside them,
where the harness's filter slot names softeval's method:

- `knowledge,soft_prompt`, `format,few_shot`, `strict,zero_shot`: softeval's three accuracies
  (`soft_prompt` is the final tuning step; with `all_steps`, snapshots as `soft_prompt@step<N>`);
- `exact_match,soft_prompt:strict-match`, `math_verify,zero_shot`: lm-evaluation-harness's
  scores of the same responses (the aggregate's `lm_eval:<metric>[,<filter>]` columns; the
  harness's own filter follows the method after ':');
- `options_acc,few_shot`, `options_acc_norm,...`: the harness's acc / acc_norm over softeval's
  option continuations (`options:<name>` columns), under a name of their own: not the harness's.

Every stderr is the harness's for a mean of 0/1 scores (`lm_eval.api.metrics.mean_stderr`: the
sample standard deviation over sqrt(n), i.e. sqrt(p(1-p)/(n-1))), computed from the accuracy and
n; "N/A" for n < 2, as the harness writes it. softeval's 95% percentile-bootstrap intervals are
in the file's `softeval` block (`intervals`), which lm-eval's readers ignore. The harness has one
shot count per task (`n-shot`) and softeval's methods differ in it, so the file leaves `n-shot`
out (lm-eval's readers treat it as optional) and says each method's in `configs[task].metadata`.

TensorBoard (`export_tensorboard`) and W&B (`export_wandb`, offline by default) are optional
(`pip install "softeval[tracking]"`); see their docstrings for the tags and keys they write.

One module per concern, their names re-exported here: `harness` (the harness's keys, stderrs and
file names), `results_files` (the lm-evaluation-harness results files), `tracking` (what the
trackers share: curves, the written leaderboard, unit values), `tensorboard_events`
(`export_tensorboard`) and `wandb_run` (`export_wandb`, `wandb_environment`).
"""

from __future__ import annotations

from softeval.analysis.export.harness import (
    HARNESS_PREFIXES,
    KEY_NOTE,
    NOT_AVAILABLE,
    STDERR_NOTE,
    binary_stderr,
    harness_columns,
    harness_metric,
    method_filter,
    results_file_name,
    sanitize_model_name,
)
from softeval.analysis.export.results_files import lm_eval_results, read_task_meta, write_lm_eval_results
from softeval.analysis.export.tensorboard_events import export_tensorboard
from softeval.analysis.export.tracking import (
    BOARD_COLUMNS,
    BOARD_METRICS,
    TRACKING_HINT,
    markdown_table,
    read_curves,
    read_leaderboard,
)
from softeval.analysis.export.wandb_run import export_wandb, wandb_environment

__all__ = [
    "BOARD_COLUMNS",
    "BOARD_METRICS",
    "HARNESS_PREFIXES",
    "KEY_NOTE",
    "NOT_AVAILABLE",
    "STDERR_NOTE",
    "TRACKING_HINT",
    "binary_stderr",
    "export_tensorboard",
    "export_wandb",
    "harness_columns",
    "harness_metric",
    "lm_eval_results",
    "markdown_table",
    "method_filter",
    "read_curves",
    "read_leaderboard",
    "read_task_meta",
    "results_file_name",
    "sanitize_model_name",
    "wandb_environment",
    "write_lm_eval_results",
]
