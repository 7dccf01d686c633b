"""Many judge jobs against one judge server that cannot keep up (issue 41, item 1).

The paper's run starts ~100 judge jobs, each with 32 requests in flight, against one vLLM server
answering ~20-30 requests a second: a request waits in the server's queue longer than the client's
60 s timeout, the client gives up and sends it again, and every job ends in JudgeUnavailable. The
stand-in below behaves as vLLM does at that scale: it answers in arrival order at a fixed rate
(`workers` requests at a time, `service` seconds each) and drops a request whose client has hung
up before its turn (vLLM aborts a request on disconnect). Here 6 jobs x 8 requests in flight meet
a server that answers 40 a second, with a 0.5 s timeout: 48 in flight wait 1.2 s.
"""

from __future__ import annotations

import html
import json
import queue
import re
import select
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from softeval.judges.local_lm import JudgePrompts, VerdictCache
from softeval.judges.openai_compatible import JudgeUnavailable, OpenAIJudge
from tests.conftest import ROOT
from tests.fake_openai import completion

PROMPTS = JudgePrompts.load(ROOT / "config" / "judges" / "default.yaml")


class QueueingServer:
    """An OpenAI-compatible judge that serves in arrival order at a fixed rate."""

    def __init__(self, workers: int = 4, service: float = 0.1, refuse: str | None = None) -> None:
        self.service, self.refuse = service, refuse
        self.jobs: queue.Queue = queue.Queue()
        self.lock = threading.Lock()
        self.received = self.answered = self.dropped = self.in_flight = self.peak = 0
        self.arrivals: list[tuple[float, int]] = []  # (time, requests in the server with this one)
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with server.lock:
                    server.received += 1
                    server.in_flight += 1
                    server.peak = max(server.peak, server.in_flight)
                    server.arrivals.append((time.monotonic(), server.in_flight))
                if server.refuse:  # vLLM's answer to a prompt over its --max-model-len
                    with server.lock:
                        server.in_flight -= 1
                    return self._send(400, {"object": "error", "message": server.refuse, "code": 400})
                done: dict = {"event": threading.Event()}
                server.jobs.put((self.connection, body, done))
                done["event"].wait()
                with server.lock:
                    server.in_flight -= 1
                if "reply" in done:
                    self._send(200, done["reply"])

            def _send(self, status: int, reply: dict) -> None:
                payload = json.dumps(reply).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                except OSError:  # the client hung up
                    pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.threads = [threading.Thread(target=self.httpd.serve_forever, daemon=True)]
        self.threads += [threading.Thread(target=self._work, daemon=True) for _ in range(workers)]

    @staticmethod
    def hung_up(connection: socket.socket) -> bool:
        try:
            readable, _, _ = select.select([connection], [], [], 0)
            return bool(readable) and connection.recv(1, socket.MSG_PEEK) == b""
        except OSError:
            return True

    def _work(self) -> None:
        while True:
            connection, body, done = self.jobs.get()
            if self.hung_up(connection):  # the client gave up waiting: vLLM aborts the request
                with self.lock:
                    self.dropped += 1
            else:
                time.sleep(self.service)
                text = html.unescape(body["messages"][0]["content"])
                gold = re.search(r"<gold_answer>(.*?)</gold_answer>", text, re.S).group(1)
                response = re.search(r"<response>(.*?)</response>", text, re.S).group(1)
                done["reply"] = completion("yes" if gold in response else "no")
                with self.lock:
                    self.answered += 1
            done["event"].set()

    def load(self, after: float = 0.5) -> float:
        """Mean requests in the server (queued or served) seen by the arrivals after the first
        `after` share of the run: what the jobs settled on."""
        start, end = self.arrivals[0][0], self.arrivals[-1][0]
        seen = [n for t, n in self.arrivals if t >= start + after * (end - start)]
        return sum(seen) / len(seen)

    def __enter__(self) -> QueueingServer:
        for thread in self.threads:
            thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def job_prompts(job: int, n: int) -> tuple[list[str], list[bool]]:
    """A judge job's knowledge prompts (distinct across jobs: no job is served from another's cache)."""
    prompts, expected = [], []
    for i in range(n):
        gold = f"{1000 + 100 * job + i}"
        response = f"#### {gold}" if i % 3 else "#### 7"
        question = f"Job {job}, question {i}?"
        prompts.append(PROMPTS.templates["knowledge"]["prompt"].format(question=question, gold=gold, response=response))
        expected.append(i % 3 != 0)
    return prompts, expected


def run_jobs(server: QueueingServer, tmp_path, jobs: int, n: int, **options) -> list[object]:
    """`jobs` judge jobs at once, each its own client (as each is its own process), as Snakemake
    starts them; each job's outcome: its verdicts == the expected ones, or the exception."""
    outcomes: list[object] = [None] * jobs

    def job(j: int) -> None:
        prompts, expected = job_prompts(j, n)
        judge = OpenAIJudge(
            base_url=server.url, model="judge", prompts=PROMPTS, cache=VerdictCache(tmp_path / "cache"), **options
        )
        try:
            outcomes[j] = judge.verdicts("knowledge", prompts) == expected
        except Exception as err:  # the outcome is what the test compares
            outcomes[j] = err

    threads = [threading.Thread(target=job, args=(j,)) for j in range(jobs)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    return outcomes


def time_scaled(monkeypatch, timeout: float) -> None:
    """The run's clock scaled to the test's: the paper's 60 s timeout becomes `timeout`, and every
    retry delay (the openai client's own, 0.5 s doubling to 8 s; softeval's) shrinks with it."""
    import openai._base_client

    from softeval.judges import openai_compatible

    scale = timeout / 60.0
    monkeypatch.setattr(openai._base_client, "INITIAL_RETRY_DELAY", 0.5 * scale)
    monkeypatch.setattr(openai._base_client, "MAX_RETRY_DELAY", 8.0 * scale)
    for name in ("BACKOFF_BASE", "BACKOFF_CAP"):
        if hasattr(openai_compatible, name):
            monkeypatch.setattr(openai_compatible, name, getattr(openai_compatible, name) * scale)


def test_judge_jobs_that_swamp_one_server_back_off_and_all_finish(tmp_path, monkeypatch):
    """Sustained overload: 48 requests in flight, 20 answered within a timeout (the paper's run:
    100 x 32 in flight, ~1,500 answered within 60 s). Each job must end with its verdicts."""
    jobs, per_job, concurrency, timeout = 6, 40, 8, 0.5
    time_scaled(monkeypatch, timeout)
    with QueueingServer(workers=4, service=0.1) as server:  # 40 answers a second
        outcomes = run_jobs(
            server, tmp_path, jobs, per_job, concurrency=concurrency, timeout=timeout, max_retries=5, reply_retries=0
        )
    counts = f"received {server.received}, answered {server.answered}, dropped {server.dropped}"
    print(f"{counts}, peak {server.peak}, settled load {server.load():.1f}")
    failures = [o for o in outcomes if o is not True]
    assert not failures, f"{len(failures)} of {jobs} judge jobs failed: {failures[:1]}"
    # the jobs settle on what the server answers within a timeout (40/s x 0.5 s), not 6 x 8 = 48
    assert server.load() <= 40 * timeout, server.load()
    # and shed load instead of re-sending it: a request is sent ~once, not retried into a storm
    assert server.received <= 2 * jobs * per_job, counts


def test_the_in_flight_cap_halves_on_overload_and_grows_back():
    from softeval.judges.openai_compatible import InFlight

    cap = InFlight(8)
    rounds = [cap.acquire() for _ in range(8)]
    assert cap.active == 8 and cap.peak == 8
    for sent_in in rounds:  # eight timeouts of one round: one halving, not eight
        cap.release(sent_in, overloaded=True)
    assert cap.limit == 4
    late = cap.acquire()
    cap.release(late, overloaded=True)
    assert cap.limit == 2
    for _ in range(40):  # +1/limit per answer: about one step per round of answers
        cap.release(cap.acquire(), overloaded=False)
    assert cap.limit == 8  # back to the configured concurrency, never above


def test_a_prompt_longer_than_the_servers_context_is_named_and_not_retried(tmp_path):
    """vLLM answers 400 to a prompt over its --max-model-len: retrying cannot help, and the error
    says which server setting to raise."""
    message = (
        "This model's maximum context length is 8192 tokens. However, you requested 9000 tokens "
        "(8999 in the messages, 1 in the completion). Please reduce the length of the messages or completion."
    )
    with QueueingServer(refuse=message) as server:
        judge = OpenAIJudge(
            base_url=server.url, model="m", prompts=PROMPTS, cache=VerdictCache(tmp_path / "c"), max_retries=3
        )
        with pytest.raises(JudgeUnavailable, match=r"refused a request .*maximum context length.*--max-model-len"):
            judge.verdicts("knowledge", job_prompts(0, 1)[0])
    assert server.received == 1


def test_requests_go_to_every_server_of_a_comma_separated_url(tmp_path):
    """Several judge servers (sbatch --array): the requests are shared between them."""
    with QueueingServer(workers=2, service=0.01) as one, QueueingServer(workers=2, service=0.01) as two:
        judge = OpenAIJudge(
            base_url=f"{one.url}, {two.url}", model="m", prompts=PROMPTS, cache=VerdictCache(tmp_path / "c")
        )
        prompts, expected = job_prompts(0, 10)
        assert judge.verdicts("knowledge", prompts) == expected
    assert one.answered == two.answered == 5
