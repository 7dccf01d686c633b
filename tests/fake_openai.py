"""A fake OpenAI-compatible chat server on 127.0.0.1 that injects failures, for judge tests.

It judges like a perfect grader: "yes" when the gold answer (between <gold_answer> tags)
appears in the response (between <response> tags), or, for format prompts, when the
response is exactly "#### <digits>". A plan of failures is consumed request by request.
"""

from __future__ import annotations

import html
import json
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def verdict_for(prompt: str) -> str:
    response = html.unescape(re.search(r"<response>(.*?)</response>", prompt, re.S).group(1))
    gold = re.search(r"<gold_answer>(.*?)</gold_answer>", prompt, re.S)
    if gold:
        return "yes" if html.unescape(gold.group(1)) in response else "no"
    return "yes" if re.fullmatch(r"#### \d+", response.strip()) else "no"


def completion(word: str) -> dict:
    other = {"yes": "no", "no": "yes"}.get(word, "perhaps")
    token = {"token": word, "logprob": -0.05, "bytes": None}
    return {
        "id": "fake",
        "object": "chat.completion",
        "created": 0,
        "model": "fake-judge",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": word},
                "finish_reason": "length",
                "logprobs": {
                    "content": [{**token, "top_logprobs": [token, {"token": other, "logprob": -3.0, "bytes": None}]}]
                },
            }
        ],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }


class FakeServer:
    """Start with a plan like ["500", "429", "timeout", "malformed", "words", "slow"]; then "ok"."""

    def __init__(self, plan: list[str] | None = None, always: str | None = None, hang: float = 2.0) -> None:
        self.plan, self.always, self.hang = list(plan or []), always, hang
        self.requests: list[dict] = []
        self.headers: list[dict] = []
        self.lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # quiet
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with server.lock:
                    server.requests.append(body)
                    server.headers.append(dict(self.headers))
                    action = server.always or (server.plan.pop(0) if server.plan else "ok")
                if action == "500":
                    return self._send(500, b'{"error": {"message": "boom"}}')
                if action == "429":
                    return self._send(429, b'{"error": {"message": "slow down"}}', {"Retry-After": "0.05"})
                if action == "timeout":
                    time.sleep(server.hang)
                    return self._send(200, json.dumps(completion("yes")).encode())
                if action == "malformed":
                    return self._send(200, b'{"choices": [ this is not json')
                if action == "words":
                    return self._send(200, json.dumps(completion("maybe")).encode())
                if action == "slow":
                    time.sleep(0.2)
                word = verdict_for(body["messages"][0]["content"])
                return self._send(200, json.dumps(completion(word)).encode())

            def _send(self, status, payload, headers=None):
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                for key, value in (headers or {}).items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(payload)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> FakeServer:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
