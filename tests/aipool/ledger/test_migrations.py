"""The ledger's migrations carry rows written by older revisions forward, on both backends."""

from __future__ import annotations

import multiprocessing
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from alembic.script import ScriptDirectory
from sqlalchemy import Engine, text

from aipool.ledger.db import alembic_config, make_engine, migrate
from aipool.ledger.testing import scratch_database
from tests.aipool.ledger.conftest import LEDGER_DATABASE

OLD_ROW = """
INSERT INTO ai_usage_logs (id, request_id, attempt, provider, model, input_tokens,
  output_tokens, latency_ms, success, error_message, user_id, intent, complexity, outcome,
  fallback_position, cost_usd, created_at)
VALUES (:id, :request_id, :attempt, 'gemini', 'gemini-2.5-flash', 10, 5, 100, :success, NULL,
  NULL, 'QUERY', 2, :outcome, :attempt, 0.000010, '2026-11-30 10:00:00+00:00')
"""


@pytest.fixture(params=["postgresql", "sqlite"])
def at_0002(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, Engine]]:
    """A ledger migrated to revision 0002, empty; its URL and an engine on it."""
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path}/ledger.db"
    else:
        url = scratch_database(f"{LEDGER_DATABASE}_migrations")
        engine = make_engine(url)
        with engine.begin() as conn:
            conn.execute(
                text(
                    "DROP TABLE IF EXISTS ai_usage_logs, ai_usage_daily, "
                    "ai_usage_monthly, ai_alert_events, ai_ledger_clock, alembic_version CASCADE"
                )
            )
        engine.dispose()
    migrate(url, revision="0002_route_decision")
    engine = make_engine(url)
    yield url, engine
    engine.dispose()


def test_given_rows_of_revision_0002_when_upgraded_then_each_keeps_its_request_id_as_journey(
    at_0002: tuple[str, Engine],
) -> None:
    # Given: two attempts of one request, written when rows were keyed by task id
    url, engine = at_0002
    with engine.begin() as conn:
        for attempt, outcome in ((0, "error"), (1, "ok")):
            conn.execute(
                text(OLD_ROW),
                {
                    "id": f"00000000-0000-0000-0000-00000000000{attempt}",
                    "request_id": "task-1",
                    "attempt": attempt,
                    "success": outcome == "ok",
                    "outcome": outcome,
                },
            )
    # When: the ledger is upgraded
    migrate(url)
    # Then: the rows name their journey by their task id, billed as reported (not estimated)
    with engine.connect() as conn:
        rows = conn.execute(
            text(
                "SELECT request_id, journey_id, attempt, estimated FROM ai_usage_logs "
                "ORDER BY attempt"
            )
        ).all()
    assert [tuple(r) for r in rows] == [
        ("task-1", "task-1", 0, False),
        ("task-1", "task-1", 1, False),
    ]
    # And: a second request under the same task id gets rows of its own
    with engine.begin() as conn:
        conn.execute(
            text(
                "INSERT INTO ai_usage_logs (id, request_id, journey_id, attempt, provider, model,"
                " input_tokens, output_tokens, success, outcome, fallback_position, cost_usd,"
                " created_at) VALUES ('00000000-0000-0000-0000-000000000009', 'task-1', 'other',"
                " 0, 'ollama', 'llama3.2:3b', 1, 1, true, 'ok', 0, 0, '2026-11-30 11:00:00+00:00')"
            )
        )
        count = conn.execute(text("SELECT count(*) FROM ai_usage_logs")).scalar_one()
    assert count == 3


def test_given_rows_and_roll_ups_of_revision_0003_when_upgraded_then_spend_is_their_exact_sum(
    at_0002: tuple[str, Engine],
) -> None:
    # Given: rows of 0003 (six-decimal costs), a stale daily roll-up that missed one of them,
    # and an alert journaled once
    from datetime import date
    from decimal import Decimal
    from zoneinfo import ZoneInfo

    from aipool.ledger.rollup import rollup
    from aipool.ledger.spend import month_spend

    url, engine = at_0002
    migrate(url, revision="0003_attempt_identity")
    with engine.begin() as conn:
        for n, cost in enumerate(("0.000825", "1.250000", "0.000001")):
            conn.execute(
                text(
                    "INSERT INTO ai_usage_logs (id, request_id, journey_id, attempt, provider, "
                    "model, input_tokens, output_tokens, success, outcome, fallback_position, "
                    "cost_usd, created_at, estimated) VALUES (:id, :r, :r, 0, 'gemini', 'm', 10, "
                    "5, true, 'ok', 0, :cost, '2026-11-30 10:00:00+00:00', false)"
                ),
                {"id": f"00000000-0000-0000-0000-00000000001{n}", "r": f"r{n}", "cost": cost},
            )
        conn.execute(
            text(
                "INSERT INTO ai_usage_daily (day, provider, model, requests, successes, failures,"
                " fallbacks, input_tokens, output_tokens, cost_usd, updated_at) VALUES"
                " ('2026-11-30', 'gemini', 'm', 1, 1, 0, 0, 10, 5, 0.000825,"
                " '2026-11-30 12:00:00+00:00')"
            )
        )
        conn.execute(
            text(
                "INSERT INTO ai_alert_events (rule, provider, severity, threshold, period, state,"
                " message, channels, created_at) VALUES ('monthly_cost', '*', 'warning', '50%',"
                " '2026-11', 'firing', 'm', '{}', '2026-11-30 12:00:00+00:00')"
            )
        )
    # When: the ledger is upgraded
    migrate(url)
    # Then: every cost is kept exactly, the stale roll-up is gone, and the figure is the rows'
    taipei = ZoneInfo("Asia/Taipei")
    expected = Decimal("1.250826")
    assert month_spend(engine, date(2026, 11, 30), taipei).cost() == expected
    assert list(rollup(engine, taipei).days) == [date(2026, 11, 30)]
    assert month_spend(engine, date(2026, 11, 30), taipei).cost() == expected
    with engine.connect() as conn:
        assert conn.execute(text("SELECT episode FROM ai_alert_events")).scalar_one() == 1


def test_given_alerts_journaled_at_revision_0005_when_upgraded_then_they_are_about_no_service(
    at_0002: tuple[str, Engine],
) -> None:
    # Given: the pool's monthly budget alert journaled at 0005 (two episodes)
    url, engine = at_0002
    migrate(url, revision="0005_service")
    with engine.begin() as conn:
        for episode in (1, 2):
            conn.execute(
                text(
                    "INSERT INTO ai_alert_events (rule, provider, severity, threshold, period,"
                    " episode, state, message, channels, created_at) VALUES ('monthly_cost', '*',"
                    " 'warning', '50%', '2026-11', :e, 'firing', 'm', '{}',"
                    " '2026-11-30 12:00:00+00:00')"
                ),
                {"e": episode},
            )
    # When: the ledger is upgraded
    migrate(url)
    # Then: they are about no one service, and two services may each journal the same alert
    insert = text(
        "INSERT INTO ai_alert_events (service, rule, provider, severity, threshold, period,"
        " episode, state, message, channels, created_at) VALUES (:s, 'service_budget', '*',"
        " 'warning', '50%', '2026-11', 1, 'firing', 'm', '{}', '2026-11-30 12:00:00+00:00')"
    )
    with engine.begin() as conn:
        assert conn.execute(text("SELECT DISTINCT service FROM ai_alert_events")).all() == [("*",)]
        conn.execute(insert, {"s": "batch"})
        conn.execute(insert, {"s": "triage"})
    with pytest.raises(Exception, match=r"(?i)unique"), engine.begin() as conn:
        conn.execute(insert, {"s": "batch"})


def _migrate_when_released(url: str, start: Any) -> str:
    start.wait()
    try:
        migrate(url)
    except Exception as exc:  # reported to the parent, which names it
        return f"{type(exc).__name__}: {exc}"[:300]
    return ""


def test_given_a_new_sqlite_ledger_when_five_workers_migrate_it_at_once_then_all_succeed(
    tmp_path: Path,
) -> None:
    # Given a ledger file no one has migrated yet, as `aipool worker` starts its five workers on
    url = f"sqlite:///{tmp_path}/aipool.db"
    context = multiprocessing.get_context("spawn")
    with context.Manager() as manager:
        start = manager.Barrier(5)
        # When five processes migrate it at the same moment
        with context.Pool(5) as pool:
            failures = pool.starmap(_migrate_when_released, [(url, start)] * 5)
    # Then none fails, and the schema is at the head revision
    assert failures == [""] * 5
    engine = make_engine(url)
    try:
        with engine.connect() as conn:
            version = conn.execute(text("SELECT version_num FROM alembic_version")).scalar_one()
    finally:
        engine.dispose()
    head = ScriptDirectory.from_config(alembic_config(url)).get_current_head()
    assert version == head
