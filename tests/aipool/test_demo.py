"""``aipool demo`` from a fresh directory, as a newcomer runs it: no Redis or database variables.

One run serves every assertion (module scope); a second, interrupted run checks Ctrl-C.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from aipool.children import pid_alive
from tests.support.cli import MARK, fresh_env, processes_marked, run_aipool

DEMO_TIMEOUT_S = 180


@pytest.fixture(scope="module")
def demo(tmp_path_factory) -> dict[str, Any]:
    """One demo run: its exit code, output, report and the mark of every process it started."""
    home = tmp_path_factory.mktemp("newcomer")
    # TMPDIR: the kept data directory lands in the test's own folder.
    env = fresh_env(home / "runtime", TMPDIR=str(home))
    env.pop("COLUMNS", None)  # printed to a pipe, as a newcomer's `make demo | tee` would
    done = run_aipool(["demo", "--keep"], env, home, timeout=DEMO_TIMEOUT_S)
    out = home / "aipool-demo"
    report = json.loads((out / "report.json").read_text()) if (out / "report.json").exists() else {}
    return {"done": done, "out": out, "report": report, "env": env, "home": home}


def test_every_step_behaves_as_the_story_says(demo):
    done = demo["done"]
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert [c for c in demo["report"]["checks"] if not c["ok"]] == []
    assert "every step behaved as ADR-006 says" in done.stdout


def test_its_tables_do_not_wrap_when_printed_to_a_pipe(demo):
    # Each provider's row of the usage table is one line with every column (Rich assumed 80
    # columns outside a terminal and cut every cell)
    rows = [line for line in demo["done"].stdout.splitlines() if line.startswith("│ ollama ")]
    assert rows and all(line.count("│") == 11 for line in rows), rows
    assert "…" not in demo["done"].stdout
    # and its sections' rules are drawn at most 100 wide, not across the pipe's 1,000 columns
    rules = [line for line in demo["done"].stdout.splitlines() if line.startswith("──")]
    assert rules and all(len(line) <= 100 for line in rules), max(map(len, rules))


def test_the_report_adds_up_to_the_requests_sent(demo):
    report = demo["report"]
    answers = report["answers"]
    assert report["requests"] == len(answers) > 0
    assert report["pending"] == 0
    # Every request was answered exactly once in the ledger: by a provider, static or refusal.
    assert sum(p["answered"] for p in report["providers"]) == len(answers)
    by_provider: dict[str, int] = {}
    for answer in answers:
        by_provider[answer["provider"]] = by_provider.get(answer["provider"], 0) + 1
    assert {
        p["provider"]: p["answered"] for p in report["providers"] if p["answered"]
    } == by_provider
    # Every hop is a row; calls and skips are counted apart.
    assert report["ledger_rows"] == report["hops"]
    for p in report["providers"]:
        assert p["calls"] == p["ok"] + p["failed"]
    assert sum(float(p["cost_usd"]) for p in report["providers"]) == pytest.approx(
        sum(float(a["cost_usd"] or 0) for a in answers)
    )


def test_a_repeated_question_is_answered_from_the_cache_with_its_saving(demo):
    # Given the demo's FAQ question asked twice
    cached = [a for a in demo["report"]["answers"] if a["scene"] == "response cache"]
    first, again = cached
    # Then the second was a hit at $0 saving what the first cost, and the ledger counts it
    assert not first["cached"] and again["cached"]
    assert again["cost_usd"] == 0 and again["saved_usd"] == first["cost_usd"] > 0
    providers = {p["provider"]: p for p in demo["report"]["providers"]}
    assert providers[again["provider"]]["cached"] == 1
    assert float(providers[again["provider"]]["saved_usd"]) == pytest.approx(first["cost_usd"])


def test_the_trace_of_a_request_that_failed_over_is_written_to_a_file(demo):
    # Given the trace file the demo wrote for the first request answered while Ollama was down
    lines = (demo["out"] / "failover-trace.jsonl").read_text().splitlines()
    spans = [json.loads(line) for line in lines]
    # Then it is one trace: the producer's send, both hops with their queue waits, the result
    assert len({s["context"]["trace_id"] for s in spans}) == 1
    names = [s["name"] for s in spans]
    assert names.count("run/ai.generate") == 2 and names.count("aipool.queue_wait") == 2
    assert {"aipool.submit", "aipool.route", "aipool.call", "aipool.result"} <= set(names)
    outcomes = {
        s["attributes"]["aipool.provider"]: s["attributes"]["aipool.outcome"]
        for s in spans
        if s["name"] == "aipool.attempt"
    }
    assert outcomes == {"ollama": "error", "gemini": "ok"}


def test_the_story_shows_the_breaker_quota_refusal_static_answer_and_alert(demo):
    report = demo["report"]
    transitions = [(t["old"], t["new"]) for t in report["transitions"] if t["provider"] == "ollama"]
    assert transitions[:3] == [("closed", "open"), ("open", "half_open"), ("half_open", "closed")]
    providers = {p["provider"]: p for p in report["providers"]}
    assert providers["ollama"]["skipped"].get("circuit_open", 0) >= 1
    assert providers["gemini"]["skipped"].get("quota_exceeded", 0) >= 1
    assert providers["ollama"]["failures"].get("unreachable", 0) >= 3
    assert providers["static"]["answered"] == 1 and providers["refuse"]["answered"] == 1
    monthly = [a for a in report["alerts"] if a["rule"] == "monthly_cost"]
    assert [a["status"] for a in monthly] == ["firing"]
    assert float(report["cost_usd"]) > 0


def test_it_writes_the_markdown_report_and_the_png_chart(demo):
    out = demo["out"]
    markdown = (out / "report.md").read_text()
    assert "## Per provider (from the ledger)" in markdown
    assert "| Provider | Calls | Failed (reason) |" in markdown
    assert "## Breaker transitions" in markdown and "## Alerts sent" in markdown
    assert (out / "chart.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert str(out / "report.md") in " ".join(demo["done"].stdout.split())


def test_no_process_it_started_is_alive_afterwards(demo):
    report = demo["report"]
    assert report["processes"].keys() == {"redis", "worker"}
    assert [pid for pid in report["processes"].values() if pid_alive(pid)] == []
    assert processes_marked(demo["env"][MARK]) == []
    runtime = demo["home"] / "runtime"
    assert not list(runtime.glob("redis-*.json"))


def test_its_worker_said_in_its_first_log_line_that_the_broker_is_embedded(demo):
    log = Path(demo["report"]["data_dir"]) / "worker.log"
    first = next(line for line in log.read_text().splitlines() if line.startswith("["))
    assert "WARNING" in first and "broker is an embedded Redis" in first
    assert "embedded Redis of `aipool demo`" in first


def test_ctrl_c_stops_every_process_the_demo_started(tmp_path):
    # Given a demo that has started its Redis and its worker
    env = fresh_env(tmp_path / "runtime", TMPDIR=str(tmp_path))
    demo = subprocess.Popen(
        [sys.executable, "-c", "from aipool.cli import main; main()", "demo"],
        env=env,
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        assert demo.stdout is not None
        seen = []
        deadline = time.monotonic() + DEMO_TIMEOUT_S
        for line in demo.stdout:
            seen.append(line)
            if "Routing by intent" in line or time.monotonic() > deadline:
                break
        assert any("Routing by intent" in line for line in seen), "".join(seen)
        # When it is interrupted as Ctrl-C does
        demo.send_signal(signal.SIGINT)
        rest, _ = demo.communicate(timeout=60)
    finally:
        if demo.poll() is None:
            demo.kill()
    # Then it exits 130 and nothing it started is left
    assert demo.returncode == 130, "".join(seen) + rest
    assert processes_marked(env[MARK]) == []
    assert not list((tmp_path / "runtime").glob("redis-*.json"))
    # And its data directory is gone (it was not asked to --keep it)
    assert not list(tmp_path.glob("aipool-demo-*"))
