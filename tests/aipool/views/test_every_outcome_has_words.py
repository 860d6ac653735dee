"""Every outcome, skip reason and failure code has words in every view an operator reads.

Issue #40: one request skipped as ``context_too_long`` broke ``aipool status``, ``aipool report``
and the daily report for the rest of the day (a ``KeyError`` on a word the views lacked). Here a
ledger holds one hop of every name of the vocabulary, and every view reads it: ``status`` (text
in both languages, ``--json``, ``--by service``), ``report`` (both languages, ``--by service``,
``--day``), the daily report and its notification, the served usage report, and the metrics.
An answer from the response cache (``cached``) is counted apart, with what it saved (#45).
"""

from __future__ import annotations

import json
import re
from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from prometheus_client import generate_latest
from rich.console import Console

from aipool.budget.report import Report, build_report, render_report, report_notification
from aipool.cli import run
from aipool.contract.vocabulary import (
    CALLED_OUTCOMES,
    FAILURE_CODES,
    OUTCOMES,
    SKIP_OUTCOMES,
    failure_word,
    outcome_word,
)
from aipool.ledger.db import make_engine, migrate
from aipool.ledger.record import UsageRecord
from aipool.ledger.summary import ProviderSummary
from aipool.ledger.usage_log import store_now
from aipool.periods import local_day, pool_zone
from aipool.views.status_tables import summary_table
from tests.support.cli import fresh_env

LANGS = ("en", "zh-TW")
SERVICE = "payments"
#: What the day's one answer from the response cache saved.
SAVED = Decimal("0.0123")


def _row(n: int, outcome: str, **fields: Any) -> UsageRecord:
    return UsageRecord(
        request_id=f"r-{n}",
        attempt=0,
        provider="gemini",
        model="gemini-2.5-flash",
        outcome=outcome,
        success=outcome == "ok",
        created_at=datetime.now(UTC),
        service=SERVICE,
        **fields,
    )


@pytest.fixture()
def every_name(tmp_path, monkeypatch):
    """A ledger with one hop of every outcome and one failed call of every failure code."""
    url = f"sqlite:///{tmp_path / 'ledger.db'}"
    migrate(url)
    engine = make_engine(url)
    n = 0
    for outcome in OUTCOMES:
        if outcome == "error":
            continue  # a failed call: one of every failure code below
        n += 1
        error = None if outcome in ("ok", "fallback", "refused", "cached") else f"{outcome}: why"
        saved = SAVED if outcome == "cached" else Decimal(0)
        store_now(engine, _row(n, outcome, error_message=error, latency_ms=10.0, saved_usd=saved))
    for code in FAILURE_CODES:
        n += 1
        store_now(engine, _row(n, "error", error_message=f"{code}: no answer", latency_ms=20.0))
    engine.dispose()
    monkeypatch.setenv("DATABASE_URL", url)
    monkeypatch.setenv("COLUMNS", "1000")
    return url


def _flat(text: str) -> str:
    return re.sub(r"\s+", " ", text)


def _says_every_word(text: str, lang: str) -> None:
    flat = _flat(text)
    # the cache's one answer, and what it saved, in its own column
    assert f"1 (${SAVED:.6f})" in flat, lang
    for outcome in SKIP_OUTCOMES:
        assert f"{outcome_word(outcome, lang)} 1" in flat, (outcome, lang)
    for code in FAILURE_CODES:
        # "abandoned" is an outcome of its own and a reason its call failed: counted twice.
        count = 2 if code == "abandoned" else 1
        assert f"{failure_word(code, lang)} {count}" in flat, (code, lang)


@pytest.mark.parametrize("lang", LANGS)
def test_status_and_report_name_every_outcome_and_failure_in_words(
    every_name, capsys, redis_client, lang
):
    # Given a day with a hop of every outcome and a failed call of every failure code
    # When status and report print it, in either language
    for command in (["status"], ["report"], ["report", "--day", _today()]):
        assert run([*command, "--lang", lang]) == 0, command
        out = capsys.readouterr().out
        # Then each is counted under its own word, and nothing fails
        _says_every_word(out, lang)


def test_the_json_views_count_every_outcome_by_its_name(every_name, capsys, redis_client):
    # When status prints JSON
    assert run(["status", "--json"]) == 0
    snapshot = json.loads(capsys.readouterr().out)
    (gemini,) = snapshot["today"]["providers"]
    # Then a program reads every skip under its outcome and every failure under its code
    assert gemini["skipped"] == dict.fromkeys(SKIP_OUTCOMES, 1)
    assert gemini["failures"] == {code: 2 if code == "abandoned" else 1 for code in FAILURE_CODES}
    assert gemini["calls"] == len(FAILURE_CODES) + len(CALLED_OUTCOMES) - 1
    assert (gemini["cached"], gemini["saved_usd"]) == (1, f"{SAVED:.6f}")


@pytest.mark.parametrize("lang", LANGS)
def test_the_per_service_views_count_every_hop(every_name, capsys, redis_client, lang):
    for command in (["status", "--by", "service"], ["report", "--by", "service"]):
        assert run([*command, "--lang", lang]) == 0, command
        out = capsys.readouterr().out
        assert re.search(rf"{SERVICE}\s*[│┃|]\s*{len(OUTCOMES) - 1 + len(FAILURE_CODES)}\b", out), (
            out
        )
        assert f"1 (${SAVED:.6f})" in out, out


@pytest.mark.parametrize("lang", LANGS)
def test_the_daily_report_and_its_notification_name_every_outcome(every_name, lang):
    # Given the same day, when beat's daily report is built and sent
    engine = make_engine(every_name)
    try:
        report = build_report(engine, date.fromisoformat(_today()))
    finally:
        engine.dispose()
    notification = report_notification(report, lang)
    # Then it is sent (its 110 columns wrap the long cells) and names every skip and failure in
    # the alerts' language: the same tables drawn wide enough not to wrap
    assert notification.body and "gemini" in notification.body
    wide = Console(width=1000, record=True, file=_Sink(), color_system=None)
    render_report(report, wide, lang)
    _says_every_word(wide.export_text(), lang)


def test_the_served_usage_report_counts_every_outcome(every_name, tmp_path):
    import subprocess
    import sys

    from tests.conftest import TEST_REDIS_URL
    from tests.support.services import free_port

    port = free_port()
    env = fresh_env(
        tmp_path / "runtime",
        REDIS_URL=TEST_REDIS_URL,
        DATABASE_URL=every_name,
        AIPOOL_ALLOW_ANONYMOUS="1",
    )
    env.pop("AIPOOL_HEALTH_TOKEN", None)
    server = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "from aipool.cli import main; main()",
            "status",
            "--serve",
            "--port",
            str(port),
        ],
        env=env,
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stderr is not None
        assert "serving on" in server.stderr.readline()  # it listens once it says so
        answer = httpx.get(f"http://127.0.0.1:{port}/api/v1/health/ai-usage", timeout=30)
        assert answer.status_code == 200
        (gemini,) = answer.json()["today"]["providers"]
        assert gemini["skipped"] == dict.fromkeys(SKIP_OUTCOMES, 1)
    finally:
        server.terminate()
        server.communicate(timeout=10)


def test_every_outcome_and_failure_code_is_a_metric_label() -> None:
    from aipool.attempt.event import AttemptEvent
    from aipool.contract.journey import Attempt
    from aipool.contract.route import Hop, Route
    from aipool.metrics.hops import observe_attempt

    hop = Hop("gemini", "gemini-2.5-flash")
    route = Route("QUERY", 4, (hop,), "test")
    for outcome in OUTCOMES:
        code = "server_error" if outcome == "error" else None
        attempt = Attempt("gemini", hop.model, outcome, f"{outcome}: x", 1.0, code=code)
        saved = SAVED if outcome == "cached" else Decimal(0)
        observe_attempt(AttemptEvent("r", "j", 0, hop, attempt, route, None, saved_usd=saved))
    scrape = generate_latest().decode()
    for outcome in OUTCOMES:
        assert f'outcome="{outcome}"' in scrape, outcome
    assert 'aipool_cache_saved_usd_total{provider="gemini",service="other"}' in scrape


def _today() -> str:
    return local_day(datetime.now(UTC), pool_zone()).isoformat()


# -- any summary at all --------------------------------------------------------------------------

_reasons = st.sampled_from(FAILURE_CODES) | st.from_regex(r"[a-z_]{1,12}", fullmatch=True)
_skips = st.sampled_from(OUTCOMES) | st.from_regex(r"[a-z][a-z_]{0,11}", fullmatch=True)
_summaries = st.lists(
    st.builds(
        ProviderSummary,
        provider=st.sampled_from(["ollama", "nemotron", "gemini", "claude", "static", "refuse"]),
        calls=st.integers(0, 10**9),
        ok=st.integers(0, 10**9),
        failures=st.dictionaries(_reasons, st.integers(1, 10**6), max_size=6),
        skipped=st.dictionaries(_skips, st.integers(1, 10**6), max_size=6),
        answered=st.integers(0, 10**9),
        input_tokens=st.integers(0, 10**12),
        output_tokens=st.integers(0, 10**12),
        cost_usd=st.decimals(0, 10**6, places=6),
        p50_ms=st.none() | st.floats(0, 10**7),
        p95_ms=st.none() | st.floats(0, 10**7),
        cached=st.integers(0, 10**9),
        saved_usd=st.decimals(0, 10**6, places=6),
    ),
    max_size=6,
    unique_by=lambda s: s.provider,
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(day=_summaries, month=_summaries, lang=st.sampled_from(LANGS))
def test_any_usage_summary_renders_in_every_table_and_report(day, month, lang) -> None:
    # Given any summaries a ledger could give (names old pools wrote included)
    report = Report(date(2026, 12, 6), "Asia/Taipei", day, month)
    console = Console(width=2000, record=True, file=_Sink(), color_system=None)
    # When the tables, the daily report and its notification are drawn
    console.print(summary_table(day, lang=lang, title="t"))
    render_report(report, console, lang)
    assert report_notification(report, lang).body
    # Then every count of every provider is there, under its word
    text = _flat(console.export_text())
    for s in day + month:
        for outcome, n in s.skipped.items():
            assert _flat(f"{outcome_word(outcome, lang)} {n}") in text
        for reason, n in s.failures.items():
            assert _flat(f"{failure_word(reason, lang)} {n}") in text
        if s.cached:
            assert _flat(f"{s.cached:,} (${s.saved_usd:.6f})") in text
    assert sum((s.cost_usd for s in month), Decimal(0)) == report.month_cost


class _Sink:
    def write(self, text: str) -> int:
        return len(text)

    def flush(self) -> None:
        pass
