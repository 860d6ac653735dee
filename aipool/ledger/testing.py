"""Helpers for tests and benchmarks: a scratch PostgreSQL database holding the ledger schema.

Only loopback servers are accepted, so a test can never touch a shared or remote database.
"""

from __future__ import annotations

import psycopg
from psycopg import sql
from sqlalchemy import Engine, text
from sqlalchemy.engine import make_url

from aipool.ledger.db import make_engine, migrate

LEDGER_TABLES = ("ai_usage_logs", "ai_usage_daily", "ai_usage_monthly", "ai_alert_events")


def scratch_database(
    name: str, server: str = "postgresql+psycopg://postgres@127.0.0.1:5432"
) -> str:
    """Create database ``name`` on the loopback server if missing, migrate it, return its URL."""
    url = make_url(server)
    if url.host not in ("127.0.0.1", "localhost", "::1"):
        raise ValueError(f"refusing a non-loopback database server: {url.host}")
    admin = url.set(drivername="postgresql", database="postgres").render_as_string(
        hide_password=False
    )
    with psycopg.connect(admin, autocommit=True) as conn:
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone()
        if not exists:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    target = url.set(database=name).render_as_string(hide_password=False)
    migrate(target)
    return target


def empty_ledger(engine: Engine) -> None:
    """Delete every row of the ledger tables (the schema stays)."""
    with engine.begin() as conn:
        conn.execute(text(f"TRUNCATE {', '.join(LEDGER_TABLES)}"))
        conn.execute(
            text("UPDATE ai_ledger_clock SET seq = 0, rolled_through = 0, rolled_at = NULL")
        )


def ledger_engine(name: str) -> Engine:
    """An engine on the scratch database ``name`` (created and migrated if needed)."""
    return make_engine(scratch_database(name))
