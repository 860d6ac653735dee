"""The response cache's store on a real Redis: one leader per answer, bounded by its cap with the
least recently used evicted, and a Redis that fails costing hits only."""

from __future__ import annotations

from decimal import Decimal

import pytest
import redis

from aipool.cache.store import (
    ENTRY_OVERHEAD,
    MAX_ENTRY_BYTES,
    Entry,
    Hit,
    Lead,
    ResponseStore,
    Wait,
)


def _entry(text: str = "A pod is the smallest deployable unit.") -> Entry:
    return Entry(text, "gemini", "gemini-2.5-flash", "stop", 12, 30, Decimal("0.000042"), 1.0)


@pytest.fixture()
def store(clean_redis: redis.Redis) -> ResponseStore:
    return ResponseStore(clean_redis, max_bytes=1_000_000, lead_s=30)


def test_the_first_of_identical_requests_leads_the_others_wait_then_all_hit(store) -> None:
    # Given nothing kept: the first request leads, an identical one waits on it
    assert isinstance(store.lookup("k", "journey-1"), Lead)
    waiting = store.lookup("k", "journey-2")
    assert isinstance(waiting, Wait) and 29 < waiting.left_s <= 30
    # and a redelivery of the leader's own message still leads
    assert isinstance(store.lookup("k", "journey-1"), Lead)
    # When the leader's answer is kept
    assert store.keep("k", _entry(), 60, "journey-1")
    # Then every request finds it, and the lead is gone
    found = store.lookup("k", "journey-2")
    assert isinstance(found, Hit) and found.entry == _entry()
    assert not store.client.exists("aipool:cache:lead:k")


def test_a_leader_without_an_answer_to_keep_releases_its_lead_and_another_leads(store) -> None:
    store.lookup("k", "journey-1")
    store.release("k", "journey-2")  # not its lead: nothing happens
    assert isinstance(store.lookup("k", "journey-2"), Wait)
    store.release("k", "journey-1")
    assert isinstance(store.lookup("k", "journey-2"), Lead)


def test_an_entry_expires_with_its_ttl(store) -> None:
    store.keep("k", _entry(), 60, "j")
    assert 59_000 < store.client.pttl("aipool:cache:e:k") <= 60_000


def test_past_its_cap_the_cache_evicts_the_least_recently_used(clean_redis) -> None:
    # Given room for two entries
    size = len(_entry().to_json()) + ENTRY_OVERHEAD
    store = ResponseStore(clean_redis, max_bytes=2 * size, lead_s=30)
    store.keep("a", _entry(), 60, "j")
    store.keep("b", _entry(), 60, "j")
    # When "a" is read again and a third is kept
    assert isinstance(store.lookup("a", "j2"), Hit)
    store.keep("c", _entry(), 60, "j")
    # Then "b", the least recently used, made room; the count holds the cap
    assert isinstance(store.lookup("b", "j3"), Lead)
    assert isinstance(store.lookup("a", "j3"), Hit) and isinstance(store.lookup("c", "j3"), Hit)
    assert store.counted_bytes() == 2 * size


def test_an_answer_longer_than_an_entry_may_be_is_served_once_and_not_kept(store) -> None:
    store.lookup("k", "j")
    assert not store.keep("k", _entry("x" * MAX_ENTRY_BYTES), 60, "j")
    assert isinstance(store.lookup("k", "j2"), Lead)  # its lead was released all the same


def test_a_redis_flush_loses_the_entries_and_leads_only(store) -> None:
    store.keep("k", _entry(), 60, "j")
    store.lookup("other", "j")
    store.client.flushdb()
    assert isinstance(store.lookup("k", "j2"), Lead)
    assert isinstance(store.lookup("other", "j2"), Lead)


def test_a_redis_that_does_not_answer_is_a_miss_never_an_error() -> None:
    # Given a Redis nobody listens on
    client = redis.Redis(host="127.0.0.1", port=1, socket_connect_timeout=0.2)
    store = ResponseStore(client, max_bytes=1_000, lead_s=30)
    # Then looking up leads (the request is answered as without a cache) and keeping fails quietly
    assert isinstance(store.lookup("k", "j"), Lead)
    assert store.keep("k", _entry(), 60, "j") is False
    store.release("k", "j")
