"""``aipool submit`` against a real worker: the answer as JSON, timed from when it was routed."""

from __future__ import annotations

import json

import pytest

from aipool.cli import run
from aipool.cli.submit import ANSWER_GRACE_S

pytestmark = pytest.mark.integration


def test_submit_prints_the_answer_and_its_latency_leaves_out_the_worker_check(
    pool, healthy, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    import aipool.metrics.pool_state
    import tasks.client

    # Given a worker on every queue and healthy providers, and a record of what submit does
    steps: list[str] = []
    for module, name in ((aipool.metrics.pool_state, "queue_consumers"), (tasks.client, "route")):
        real = getattr(module, name)

        def spy(*args, real=real, name=name, **kwargs):  # type: ignore[no-untyped-def]
            steps.append(name)
            return real(*args, **kwargs)

        monkeypatch.setattr(module, name, spy)
    # When a request is submitted from the command line
    code = run(["submit", "What is a pod?"])
    # Then the answer is printed as JSON
    out = capsys.readouterr().out
    answer = json.loads(out)
    assert code == 0 and answer["status"] == "ok" and answer["provider"] == "ollama"
    # and the workers were asked which queues they consume (a second's broadcast) before the
    # request was routed, which is when its latency starts: it read about 1,100 ms for a 10 ms
    # answer when the order was the other way round
    assert steps == ["queue_consumers", "route"]
    assert answer["latency_ms"] > 0


def test_submit_whose_call_hangs_past_its_timeout_prints_the_chains_answer_at_the_expiry(
    pool, healthy, tmp_path
) -> None:  # type: ignore[no-untyped-def]
    import os
    import time

    from tests.conftest import TEST_REDIS_URL
    from tests.support.cli import fresh_env, run_aipool

    # Given Ollama hanging, so its call outlasts the request's --timeout
    healthy.set_fault("ollama", "hang")
    env = fresh_env(
        tmp_path / "runtime",
        REDIS_URL=TEST_REDIS_URL,
        DATABASE_URL=os.environ["DATABASE_URL"],
        OLLAMA_BASE_URL=os.environ["OLLAMA_BASE_URL"],
    )
    try:
        # When a request is submitted with --timeout 1
        started = time.monotonic()
        done = run_aipool(["submit", "--timeout", "1", "What is a pod?"], env, tmp_path)
        took = time.monotonic() - started
    finally:
        healthy.reset()
    # Then the worker cuts the call at the expiry and the chain's end answers, which the command
    # prints (it raced that answer and said it had none): each provider's reason is in it
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    assert answer["status"] == "fallback"
    first = answer["attempts"][0]
    assert (first["provider"], first["code"]) == ("ollama", "deadline")
    assert "expired during the call" in first["error"]
    assert took < 1 + ANSWER_GRACE_S + 5  # the command's own start-up, not Ollama's timeout


def test_submit_that_gets_no_answer_in_time_says_so_in_one_line(pool, healthy, tmp_path) -> None:  # type: ignore[no-untyped-def]
    import os
    import signal
    import subprocess

    from tests.conftest import TEST_REDIS_URL
    from tests.support.cli import fresh_env, run_aipool

    # Given a worker that says it consumes every queue but cannot run a task: its pool
    # processes stopped (a stalled host), so no answer comes, not even the one at the expiry
    env = fresh_env(
        tmp_path / "runtime",
        REDIS_URL=TEST_REDIS_URL,
        DATABASE_URL=os.environ["DATABASE_URL"],
        OLLAMA_BASE_URL=os.environ["OLLAMA_BASE_URL"],
    )
    children = subprocess.run(
        ["pgrep", "-P", str(pool.process.pid)], capture_output=True, text=True, check=True
    ).stdout.split()
    assert children
    for pid in children:
        os.kill(int(pid), signal.SIGSTOP)
    try:
        # When a request is submitted with --timeout 1
        done = run_aipool(["submit", "--timeout", "1", "What is a pod?"], env, tmp_path)
    finally:
        for pid in children:
            os.kill(int(pid), signal.SIGCONT)
    # Then the command says it got no answer, in one line and nothing after it (871a594 printed
    # 17 more: "Exception ignored in: <function AsyncResult.__del__>" ... at interpreter exit)
    assert done.returncode == 1
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("aipool: no answer within 1 s for request ")


def test_a_prompt_piped_on_standard_input_arrives_whole(pool, healthy, tmp_path) -> None:  # type: ignore[no-untyped-def]
    import os

    from tests.conftest import TEST_REDIS_URL
    from tests.support.cli import fresh_env, run_aipool

    # Given a pasted log of several lines, quotes and non-ASCII text (an on-call's question held
    # in a file, awkward to quote as one argument)
    prompt = (
        "Why does this pod restart?\n"
        'kubelet: "Back-off restarting failed container" app=payments\n'
        '  File "/app/main.py", line 12, in <module>\n'
        "OOMKilled 記憶體不足\n"
    ) * 40
    env = fresh_env(
        tmp_path / "runtime",
        REDIS_URL=TEST_REDIS_URL,
        DATABASE_URL=os.environ["DATABASE_URL"],
        OLLAMA_BASE_URL=os.environ["OLLAMA_BASE_URL"],
        GEMINI_BASE_URL=os.environ["GEMINI_BASE_URL"],
        ANTHROPIC_BASE_URL=os.environ["ANTHROPIC_BASE_URL"],
    )
    # When it is piped to `aipool submit -`, and given as the argument
    piped = run_aipool(["submit", "-"], env, tmp_path, input=prompt.encode())
    typed = run_aipool(["submit", prompt], env, tmp_path)
    # Then the pool answers both, and the provider was sent the same prompt (the same input
    # tokens as it counts them), so the piped one arrived whole
    assert piped.returncode == 0 == typed.returncode, piped.stderr + typed.stderr
    answers = [json.loads(done.stdout) for done in (piped, typed)]
    assert [a["status"] for a in answers] == ["ok", "ok"]
    tokens = [a["usage"]["input_tokens"] for a in answers]
    assert tokens[0] == tokens[1] > 1000
