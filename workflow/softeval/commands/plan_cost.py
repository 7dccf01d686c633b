"""`softeval plan-cost`: the GPU-hours of a config's jobs (HF and vLLM backends), before running."""

from __future__ import annotations

import argparse
from pathlib import Path

from softeval.config import ConfigSources, check_config, task_dir
from softeval.plan_cost import cost_table, plan_cost
from softeval.preflight import one_line


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--configfile", nargs="+", required=True, help="laid over config/config.yaml, as snakemake does"
    )
    parser.add_argument("--workflow-root", default=".", help="folder holding config/ (and task_dir)")
    parser.add_argument("--gpu", default="h100-sxm", help="a100-80gb, h100-sxm or h200")
    parser.add_argument("--mfu", type=float, default=0.4, help="share of peak FLOP/s reached by prompts and tuning")
    parser.add_argument(
        "--bandwidth-efficiency", type=float, default=0.6, help="share of peak memory bandwidth in decoding"
    )
    parser.add_argument("--vllm-concurrency", type=int, default=256, help="sequences vLLM keeps in flight")
    parser.add_argument(
        "--job-start-s", type=float, default=60.0, help="seconds to start a GPU job, model load included"
    )
    parser.add_argument(
        "--pilot", help="a pilot run's results/ folder: prompt lengths measured there replace the estimates"
    )


def run(args: argparse.Namespace) -> None:
    root = Path(args.workflow_root)
    # what the Snakefile loads first, then each --configfile over it, as Snakemake merges them
    sources = ConfigSources.read([root / "config" / "config.yaml", *args.configfile])
    with one_line(", ".join(args.configfile)):
        config = check_config(sources.merged(), sources, root)
        plan = plan_cost(
            config,
            task_dir(config, root),
            gpu=args.gpu,
            mfu=args.mfu,
            bandwidth_efficiency=args.bandwidth_efficiency,
            vllm_concurrency=args.vllm_concurrency,
            job_start_s=args.job_start_s,
            pilot=Path(args.pilot) if args.pilot else None,
        )
    print(cost_table(plan), end="")
