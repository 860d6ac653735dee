"""Which requests the response cache may answer: off by default, on per rule and per service,
never for tool calls, alert triage or a high temperature."""

from __future__ import annotations

from pathlib import Path

import pytest

from aipool.cache.policy import cacheable
from aipool.contract.request import parse_request
from aipool.routing.router import decide
from aipool.routing.table import RouteTableError, load_table, parse_table
from tests.support.cache import SECRET, cached_routes

QUESTION = {"prompt": "What is a pod?", "service": "faq"}


@pytest.fixture()
def cache_on(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    routes = cached_routes(tmp_path)
    monkeypatch.setenv("AIPOOL_ROUTES_FILE", str(routes))
    monkeypatch.setenv("AIPOOL_CACHE_SECRET", SECRET)
    return routes


def _admitted(request: dict):  # type: ignore[no-untyped-def]
    parsed = parse_request(request)
    return cacheable(parsed, decide(parsed))


def test_a_query_of_a_service_with_the_cache_on_is_kept_for_its_rules_ttl(cache_on) -> None:
    admitted = _admitted(QUESTION)
    assert admitted is not None
    assert (admitted.ttl_s, admitted.scope) == (86400, "help-desk")


def test_without_the_secret_nothing_is_cached(cache_on, monkeypatch) -> None:
    monkeypatch.delenv("AIPOOL_CACHE_SECRET")
    assert _admitted(QUESTION) is None


def test_the_packaged_table_caches_nothing(monkeypatch) -> None:
    # Off by default: the packaged rules have no TTL and its services do not turn the cache on
    monkeypatch.setenv("AIPOOL_CACHE_SECRET", SECRET)
    assert _admitted({"prompt": "What is a pod?", "service": "copilot"}) is None
    assert all(rule.cache_ttl_s is None for rule in load_table().rules)


def test_a_service_without_the_cache_or_undeclared_is_never_cached(cache_on) -> None:
    assert _admitted({**QUESTION, "service": "quiet"}) is None
    assert _admitted({**QUESTION, "service": "nobody-declared-me"}) is None


def test_tool_calls_alert_triage_and_a_high_temperature_are_never_cached(cache_on) -> None:
    tool = {"name": "restart", "description": "", "parameters": {"type": "object"}}
    assert _admitted({**QUESTION, "tools": [tool]}) is None
    assert _admitted({**QUESTION, "intent": "ALERT_TRIAGE"}) is None
    assert _admitted({**QUESTION, "intent": "TOOL_CALL"}) is None
    assert _admitted({**QUESTION, "temperature": 0.9}) is None
    assert _admitted({**QUESTION, "temperature": 0.2}) is not None


def test_services_share_entries_only_when_both_name_the_same_scope(cache_on) -> None:
    faq, help_, billing = (
        _admitted({**QUESTION, "service": s}) for s in ("faq", "help", "billing")
    )
    assert faq is not None and help_ is not None and billing is not None
    assert faq.key == help_.key
    assert billing.key != faq.key


def test_a_table_asking_to_cache_tool_calls_is_refused_when_loaded() -> None:
    rules = [{"name": "t", "provider": "nemotron", "chain": "tools", "cache_ttl_s": 60}]
    with pytest.raises(RouteTableError, match="tool calls are never cached"):
        parse_table({"rules": rules})
    with pytest.raises(RouteTableError, match="cache_ttl_s"):
        parse_table({"rules": [{"name": "q", "provider": "gemini", "cache_ttl_s": 0}]})
