"""Each rule's settings: the JSON every job parses, its command-line arguments and its resources.

A `*_settings()` method returns the JSON string a rule passes to its job's --settings (sorted keys,
`dumps`, so a changed value changes the command line and reruns the job); the job reads it into
its dataclass of softeval.settings.
"""

from __future__ import annotations

import json
from typing import Any

from softeval.config import model_options
from softeval.plan.evaluated import Evaluated


def dumps(settings: dict[str, Any]) -> str:
    """A job's settings as its command line gets them (sorted keys: a changed value reruns the job)."""
    return json.dumps(settings, sort_keys=True)


class Settings(Evaluated):
    """The plan's settings: what each rule passes to its job."""

    # ---- data preparation --------------------------------------------------------------------
    def prepare_arguments(self, task: str, world: str | None) -> list[str]:
        """Where the rows come from, and the pilot run's test limit (with the seed that samples it)."""
        limit = self.evaluation["test_limit_per_task"].get(task, self.evaluation["test_limit"])
        args = ["--test-limit", str(limit), "--seed", str(self.config["seed"])] if limit else []
        source = self.source(task)
        if source == "world":
            args += ["--world", str(world)]
        elif source != "local":
            args += ["--source", self.config["data"]["source"]]
            if self.config["data"]["source"] == "mirror":
                args += ["--mirror", str(self.mirror)]
        return args

    # ---- model jobs ------------------------------------------------------------------------------
    def model_options(self, model: str, role: str) -> str:
        return dumps(model_options(self.entry(model), role))

    def chat_template(self, model: str, role: str) -> bool:
        return bool(model_options(self.entry(model), role)["chat_template"])

    def resource(self, model: str, key: str) -> Any:
        """A model job's resource: evaluation.resources, overridden by the entry's resources; a kind
        with small CPU jobs (the zoo) asks for no GPU, 2 GB and 30 minutes."""
        resources = self.evaluation["resources"]
        if self.kinds[model].small_cpu_jobs:
            return {**resources, "gpu": 0, "mem_mb": 2000, "runtime": 30, "cpus": self.evaluation["threads"]}[key]
        return {**resources, **self.entry(model).get("resources", {})}[key]

    @property
    def model_resource_keys(self) -> list[str]:
        """What every model job asks the scheduler for; gpu_model only where a site names one."""
        return ["gpu", "mem_mb", "runtime"] + (["gpu_model"] if "gpu_model" in self.evaluation["resources"] else [])

    # ---- job settings (the JSON each job parses) ----------------------------------------------
    def world_settings(self) -> str:
        return dumps({**self.config["world"], "seed": self.config["seed"]})

    def zoo_settings(self, section: str) -> str:
        """tokenizer or probe: a zoo section as it is."""
        return dumps(self.config["zoo"][section])

    def pretrain_settings(self, model: str) -> str:
        """Everything that determines a base model's weights."""
        zoo, recipe = self.config["zoo"], self.entry(model)["zoo"]
        return dumps(
            {
                "recipe": {k: recipe[k] for k in ("coverage", "format_exposure")},
                "corpus": zoo["corpus"],
                "size": zoo["sizes"][recipe["size"]],
                "pretrain": zoo["pretrain"],
                "seed": self.config["seed"],
                # the weights' bytes depend on it: changing it retrains the zoo (and so reruns its jobs)
                "cpu_kernels": self.config["cpu_kernels"],
            }
        )

    def posttrain_settings(self) -> str:
        return dumps({"posttrain": self.config["zoo"]["posttrain"], "seed": self.config["seed"]})

    def zoo_report_settings(self) -> str:
        return dumps({"models": [self.entry(m) for m in self.zoo_models]})

    def tune_settings(self) -> str:
        tune = {k: v for k, v in self.evaluation["tune"].items() if k != "snapshots"}
        return dumps({**tune, "snapshots": self.steps, "seed": self.config["seed"]})

    def generate_settings(self) -> str:
        return dumps(
            {"few_shot_k": self.evaluation["few_shot"]["k"], "seed": self.config["seed"], **self.evaluation["generate"]}
        )

    def loglik_settings(self) -> str:
        return dumps(
            {"few_shot_k": self.evaluation["few_shot"]["k"], "seed": self.config["seed"], **self.evaluation["loglik"]}
        )

    def judge_settings(self) -> str:
        return dumps(self.judge)

    def aggregate_settings(self) -> str:
        return json.dumps({"bootstrap": self.config["analysis"]["bootstrap"], "seed": self.config["seed"]})

    def analysis_settings(self) -> str:
        """What the tables, figures and claims are computed with."""
        analysis = self.config["analysis"]
        return dumps(
            {
                "steps": self.steps,
                "reference_method": analysis["reference_method"],
                "metric": analysis["metric"],
                "bootstrap": analysis["bootstrap"],
                "seed": self.config["seed"],
                "closed_tasks": self.closed_tasks,  # the figures draw closed and open tasks apart
            }
        )

    def export_settings(self) -> str:
        """softeval export --settings: the seed, the evaluation section and what each model role loaded."""
        loaded = {
            m: {r: {"ref": self.model_ref(m, r), **model_options(self.entry(m), r)} for r in self.roles(m)}
            for m in self.models
        }
        return dumps({"seed": self.config["seed"], "evaluation": self.evaluation, "loaded": loaded})
