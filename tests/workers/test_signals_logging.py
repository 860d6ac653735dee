"""A worker's log never holds a configured key, whichever logger writes the line."""

from __future__ import annotations

import time

import pytest

from aipool.secrets import read_secret
from tasks.client import submit
from tests.support.pool import Worker

pytestmark = pytest.mark.integration

ENV_TOOL = {
    "name": "get_pod_env",
    "description": "Show the environment of a pod",
    "parameters": {
        "type": "object",
        "properties": {"pod": {"type": "string"}},
        "required": ["pod"],
    },
}


def _log_line(worker: Worker, needle: str, timeout: float = 10.0) -> str:
    """The first line of ``worker``'s log that holds ``needle``, waiting for it to be written."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for line in worker.log_path.read_text(errors="replace").splitlines():
            if needle in line:
                return line
        time.sleep(0.1)
    raise AssertionError(f"no log line with {needle!r}: {worker.log()}")


def test_given_an_answer_repeating_a_key_when_the_worker_logs_its_result_then_the_line_is_scrubbed(
    pool: Worker, healthy, clean_redis
) -> None:  # type: ignore[no-untyped-def]
    # Given the Gemini key the worker is configured with, and a conversation in which a tool
    # returned it (a pod's environment), so the model's answer repeats it
    key = read_secret("GEMINI_API_KEY")
    assert key
    request = {
        "messages": [
            {"role": "user", "content": "Show me the environment of pod api-7"},
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [{"name": "get_pod_env", "arguments": {"pod": "api-7"}}],
            },
            {"role": "tool", "name": "get_pod_env", "content": f"REGION=eu CRED={key}"},
        ],
        "tools": [ENV_TOOL],
    }
    # When the pool answers it
    answer = submit(request).get(timeout=30)
    assert answer["status"] == "ok"
    assert key in answer["content"]  # the producer gets the answer as the model gave it
    # Then Celery's "succeeded" line no longer prints the answer, and no line of the worker's
    # log holds the key
    line = _log_line(pool, f"[{answer['request_id']}] succeeded")
    assert "REGION=eu" not in line and answer["content"] not in line
    assert key not in pool.log_path.read_text(errors="replace")


def test_given_a_worker_at_info_when_it_calls_a_provider_then_its_log_has_the_hop_line_and_no_http_line(
    pool: Worker, healthy, clean_redis
) -> None:  # type: ignore[no-untyped-def]
    # Given the pool's worker at INFO (tests.support.pool), whose providers' SDKs call through
    # httpx, which logs every request it sends at INFO
    written = len(pool.log_path.read_bytes())
    # When it answers a request
    answer = submit({"messages": [{"role": "user", "content": "What is a pod?"}]}).get(timeout=30)
    assert answer["status"] == "ok"
    # Then the hop's own line says who answered and how, and no second line per call repeats it
    hop = _log_line(pool, f"hop request_id={answer['request_id']}")
    assert f"provider={answer['provider']}" in hop and "outcome=ok" in hop
    assert b"HTTP Request:" not in pool.log_path.read_bytes()[written:]
