"""The terminal's view of a run: Snakemake's lines and the running jobs' tqdm bars, read back."""

from __future__ import annotations

from softeval.progress import Progress, clock, shorten

SNAKEMAKE = """\
[Fri Dec  4 15:11:26 2026]
rule tune:
    input: results/zoo/a/base
    output: results/softprompts/a/base/world_numeric/prompt.safetensors
    log: logs/tune/a/base.log
    jobid: 7
    benchmark: results/benchmarks/tune/a/base.tsv
    wildcards: model=a, role=base
    threads: 1
[Fri Dec  4 15:11:27 2026]
localrule judge_validation:
    log: logs/judge_validation.log
    jobid: 3
[Fri Dec  4 15:11:40 2026]
Finished jobid: 3 (Rule: judge_validation)
1 of 4 steps (25%) done
"""


def feed(progress: Progress, text: str) -> None:
    for line in text.splitlines():
        progress.feed(line)


def test_jobs_done_running_and_their_bars(tmp_path):
    progress = Progress(tmp_path, start=0.0)
    feed(progress, SNAKEMAKE)
    assert (progress.done, progress.total) == (1, 4)
    assert list(progress.running) == ["7"]
    assert progress.running["7"].log == "logs/tune/a/base.log"
    (tmp_path / "logs" / "tune" / "a").mkdir(parents=True)
    bar = "tune:   0%|          | 0/80 [00:00<?, ?step/s]\rtune:  45%|####5     | 36/80 [00:10<00:12,  3.50step/s]"
    (tmp_path / "logs" / "tune" / "a" / "base.log").write_text("loading\n" + bar)
    # 1 of 4 jobs in 20 s: 3 more at that pace is 60 s
    assert progress.eta(now=20.0) == 60.0
    assert progress.line(now=20.0) == "1/4 jobs, 0:20 elapsed, ~1:00 left | tune a/base: tune 36/80, 00:12 left"
    feed(progress, "Finished jobid: 7 (Rule: tune)\n2 of 4 steps (50%) done")
    assert progress.running == {} and progress.line(now=30.0) == "2/4 jobs, 0:30 elapsed, ~0:30 left"


def test_no_eta_before_a_job_has_finished_and_no_bar_without_a_log(tmp_path):
    progress = Progress(tmp_path, start=0.0)
    feed(progress, "rule evaluate:\n    jobid: 1\n    wildcards: model=b, role=post, task=mmlu")
    assert progress.eta(now=5.0) is None
    assert progress.line(now=5.0) == "0/? jobs, 0:05 elapsed | evaluate b/post/mmlu"


def test_helpers():
    assert shorten("model=a, role=base, task=mmlu") == "a/base/mmlu"
    assert clock(59) == "0:59" and clock(3725) == "1:02:05" and clock(-3) == "0:00"
