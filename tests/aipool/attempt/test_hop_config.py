"""The stored hop configuration: one hash per version of the route table and the settings, named
by its digest, which the attempt script reads instead of carrying it (#44)."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from aipool.attempt.hop_config import CONFIG_PREFIX
from aipool.attempt.layout import Call, Ended
from aipool.contract.route import Hop
from aipool.routing.table import RouteTable, parse_table
from aipool.settings import settings
from aipool.settings.provider_limits import BreakerSettings, ProviderLimits, QuotaLimits
from tests.support.attempts import SimulatedPool, begin, header
from tests.support.guards import client, real_redis

__all__ = ["client", "real_redis"]

CHAIN = (Hop("gemini", "gemini-2.5-flash"), Hop("ollama", "llama3.2:3b"), Hop("static", "static"))
COSTS = (1_000, 0, 0)


def _table(budget_usd: float) -> RouteTable:
    return parse_table(
        {
            "rules": [{"name": "any", "provider": "gemini"}],
            "services": {"capped": {"name": "Experiments", "monthly_budget_usd": budget_usd}},
        }
    )


def _capped(name: str) -> Any:
    return header(journey_id=name, chain=CHAIN, costs=COSTS, service="capped")


def test_the_same_table_and_settings_name_the_same_config(client: Any) -> None:
    # Given two worker processes built from the same route table and settings
    pool = SimulatedPool(client)
    one, two = pool.worker(), pool.worker()
    # Then they name one stored configuration, and a begin by each writes it once
    assert one.configs.current(pool.table).key == two.configs.current(pool.table).key
    assert isinstance(begin(one, header(journey_id="a")), Call)
    assert isinstance(begin(two, header(journey_id="b")), Call)
    assert (one.configs.loads, two.configs.loads) == (1, 0)
    assert client.keys(f"{CONFIG_PREFIX}*") == [one.configs.current(pool.table).key.encode()]


def test_a_new_route_table_names_a_new_config_and_its_rules_apply_at_once(client: Any) -> None:
    # Given a service allowed $1 a month, one of whose Gemini calls a worker admitted
    pool = SimulatedPool(client, table=_table(1.0))
    worker = pool.worker()
    old = worker.configs.current(pool.table).key
    assert isinstance(begin(worker, _capped("before")), Call)
    # When the route table changes under the running worker: the service now allows $0.0005
    pool.table = _table(0.0005)
    refused = begin(worker, _capped("after"))
    # Then the next op names (and writes) a new configuration, and is admitted by it: the
    # service's budget refuses Gemini ($0.001), and the request goes on to Ollama
    new = worker.configs.current(pool.table).key
    assert new != old and worker.configs.loads == 2
    assert isinstance(refused, Ended) and refused.code == "service_budget_exhausted"
    assert refused.decision.next == "ollama"
    # And the old version is never read again: changed by hand, it changes nothing
    client.hset(old, "svc:capped", '{"budget":-1,"s":{}}')
    again = begin(worker, _capped("again"))
    assert isinstance(again, Ended) and again.code == "service_budget_exhausted"


def test_new_settings_name_a_new_config(client: Any) -> None:
    # Given workers built from the settings, and workers built after Gemini's limits changed
    table = parse_table({"rules": [{"name": "any", "provider": "gemini"}]})
    before = SimulatedPool(client, table=table).worker()
    limits = {
        **settings().limits,
        "gemini": ProviderLimits(BreakerSettings(failure_threshold=9), QuotaLimits(rpm=1)),
    }
    after = SimulatedPool(client, limits, table=table).worker()
    # Then each names its own version, and each is held to its own limits
    assert before.configs.current(table).key != after.configs.current(table).key
    assert isinstance(begin(after, header(journey_id="a")), Call)
    assert isinstance(begin(after, header(journey_id="b")), Ended)  # 1 a minute
    assert isinstance(begin(before, header(journey_id="c")), Call)  # 10 a minute


def test_money_rules_are_part_of_the_version(client: Any) -> None:
    # Given the same route table and limits, under two monthly budgets
    pool = SimulatedPool(client)
    worker = pool.worker()
    pool.money = type(pool.money)(None, Decimal(20), None, "normal")
    other = pool.worker()
    # Then they name different versions
    assert worker.configs.current(pool.table).key != other.configs.current(pool.table).key
