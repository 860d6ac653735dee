"""``aipool report --by service`` and ``aipool status --by service`` (issue #24): each service's
requests, calls, tokens and cost, its month against its budget and its day against its shares,
from the same ledger rows as the per-provider tables; the usage endpoint's JSON has them too."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

import pytest

from aipool.cli import run
from aipool.ledger.db import make_engine, migrate
from aipool.ledger.record import UsageRecord
from aipool.ledger.usage_log import store_now

ROUTES = """
[[rules]]
name = "everything_to_gemini"
provider = "gemini"

[services.batch]
name = "Nightly summaries"
monthly_budget_usd = 0.01
[services.batch.shares.gemini]
daily_tokens = 0.1

[services.triage]
name = "Alert triage"
"""


def _call(service: str, request: str, attempt: int, provider: str, **fields: object) -> UsageRecord:
    return UsageRecord(
        request_id=request,
        attempt=attempt,
        provider=provider,
        model="m",
        outcome=str(fields.pop("outcome", "ok")),
        success=True,
        created_at=datetime.now(UTC),
        service=service,
        **fields,  # type: ignore[arg-type]
    )


@pytest.fixture()
def two_services(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """batch: 3 requests, 3 Gemini calls (1,500 tokens, $0.006) and one passed over Gemini to
    Claude (400 tokens, $0.002); triage: 2 Gemini calls (700 tokens); one undeclared request."""
    url = f"sqlite:///{tmp_path / 'ledger.db'}"
    migrate(url)
    engine = make_engine(url)
    cost = Decimal("0.002")
    for i in range(3):
        store_now(
            engine,
            _call(
                "batch", f"b{i}", 0, "gemini", input_tokens=100, output_tokens=400, cost_usd=cost
            ),
        )
    store_now(engine, _call("batch", "b3", 0, "gemini", outcome="service_budget_exhausted"))
    store_now(
        engine,
        _call("batch", "b3", 1, "claude", input_tokens=100, output_tokens=300, cost_usd=cost),
    )
    for i in range(2):
        store_now(engine, _call("triage", f"t{i}", 0, "gemini", input_tokens=50, output_tokens=300))
    store_now(engine, _call("other", "o0", 0, "ollama", input_tokens=5, output_tokens=5))
    engine.dispose()
    routes = tmp_path / "routes.toml"
    routes.write_text(ROUTES, encoding="utf-8")
    monkeypatch.setenv("DATABASE_URL", url)
    monkeypatch.setenv("AIPOOL_ROUTES_FILE", str(routes))
    monkeypatch.setenv("AIPOOL_GEMINI_DAILY_TOKENS", "20000")
    monkeypatch.setenv("COLUMNS", "220")
    return url


def _row(out: str, service: str) -> list[str]:
    for line in out.splitlines():
        if re.match(rf"^[│┃|]\s*{re.escape(service)}\s", line):
            return [cell.strip() for cell in re.split(r"[│┃|]", line)[1:-1]]
    raise AssertionError(f"no row for {service} in:\n{out}")


def test_report_by_service_shows_each_services_use_budget_and_share(two_services, capsys):
    # Given a day of batch, triage and an undeclared service's requests
    # When the report is asked per service
    assert run(["report", "--by", "service", "--lang", "en"]) == 0
    out = capsys.readouterr().out
    # Then each service has its requests, calls, tokens and cost; batch its budget (80% of $0.01)
    # and its share of Gemini's day (1,500 of 2,000 tokens); triage is within no limit
    batch = _row(out, "batch (Nightly summaries)")
    assert batch[1:5] == ["4", "4", "1,900", "0.008000"], batch
    assert batch[5] == "0"  # no answer of its came from the cache
    assert batch[6] == "$0.0080 / $0.01 (80%)"
    assert batch[7] == "gemini tokens 1,500 / 2,000 (75%)"
    triage = _row(out, "triage (Alert triage)")
    assert triage[1:5] == ["2", "2", "700", "0.000000"], triage
    assert triage[5:] == ["0", "no budget", "-"]
    assert _row(out, "other")[1:4] == ["1", "1", "10"]
    # And the month to date says the same (all of it happened today)
    assert out.count("batch (Nightly summaries)") == 2


def test_status_by_service_and_its_json_agree_with_the_report(two_services, capsys, redis_client):
    # Given the same day
    # When status prints it per service, and as JSON
    assert run(["status", "--by", "service", "--lang", "en"]) == 0
    table = capsys.readouterr().out
    assert run(["status", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    # Then the table and the JSON's services block carry the same figures
    assert _row(table, "batch (Nightly summaries)")[1:5] == ["4", "4", "1,900", "0.008000"]
    services = {s["service"]: s for s in data["services"]["services"]}
    assert list(services) == ["batch", "triage", "other"]
    batch = services["batch"]
    assert (batch["requests"], batch["calls"], batch["tokens"]) == (4, 4, 1900)
    assert Decimal(batch["cost_usd"]) == Decimal("0.008")
    assert batch["budget_used"] == 0.8
    assert batch["shares"] == [
        {
            "provider": "gemini",
            "limit": "daily_tokens",
            "used": 1500,
            "allowed": 2000,
            "used_fraction": 0.75,
        }
    ]
    # And the services add up to the pool's day, token for token
    pool_tokens = sum(p["input_tokens"] + p["output_tokens"] for p in data["today"]["providers"])
    assert sum(s["tokens"] for s in services.values()) == pool_tokens


def test_report_by_something_else_is_one_line_for_a_person(two_services):
    # When --by names neither provider nor service
    from tests.support.cli import fresh_env, run_aipool

    done = run_aipool(["report", "--by", "team"], fresh_env(Path("/tmp/none")), Path.cwd())
    # Then it says what it takes, without a traceback
    assert done.returncode != 0
    assert "Traceback" not in done.stderr and "provider" in done.stderr
