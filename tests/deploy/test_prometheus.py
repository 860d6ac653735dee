"""A real Prometheus server scrapes a worker and the maintenance worker and evaluates the rules.

Deadline skips at Ollama (Ollama never called) fire nothing; an Ollama outage driven through the
simulator puts OllamaConsecutiveFailures in Prometheus's alerts, pending or firing.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.deploy.conftest import MonitoredPool
from tests.deploy.prometheus_rule import RULES_FILE
from tests.support.prometheus import PrometheusServer
from tests.support.requests import QUESTION
from tests.support.waiting import eventually

pytestmark = pytest.mark.integration

# The last sample of each series within a minute: a scrape that times out on a loaded machine
# (1 s scrapes, 1 s timeout) marks the series stale, and a plain selector then reads nothing.
DEADLINE_SKIPS = (
    'sum(last_over_time(aipool_requests_total{provider="ollama", outcome="deadline"}[1m]))'
)


@pytest.fixture(scope="module")
def prometheus(monitored_pool: MonitoredPool) -> Iterator[PrometheusServer]:
    server = PrometheusServer(monitored_pool.targets, [RULES_FILE])
    try:
        server.start()
        # Both workers scraped, the pool's state among what the maintenance worker served
        eventually(
            lambda: (
                server.value('count(up{job="aipool-workers"} == 1)') == 2
                and server.value('count(aipool_state_up{source="redis"} == 1)') == 1
            ),
            30,
            "both workers scraped",
            interval=0.2,
        )
        yield server
    finally:
        server.stop()


def _evaluated_after(server: PrometheusServer, moment: str) -> bool:
    return server.last_evaluation("ai-usage-alerts") > moment


def _settled(server: PrometheusServer) -> None:
    """Wait until the alert rules were evaluated on what Prometheus holds now."""
    moment = server.last_evaluation("ai-usage-alerts")
    eventually(lambda: _evaluated_after(server, moment), 10, "a rule evaluation", interval=0.1)
    moment = server.last_evaluation("ai-usage-alerts")
    eventually(lambda: _evaluated_after(server, moment), 10, "a rule evaluation", interval=0.1)


def _skip_at_deadline(pool: MonitoredPool, count: int) -> list[dict[str, Any]]:
    """``count`` requests whose deadline is spent, one after another: sent at once, the later ones
    would find the earlier waiting in Ollama's lane, and the router would pass Ollama over for its
    queue (``queue_wait``, as CI's run did once) instead of skipping it at the deadline."""
    late = {**QUESTION, "deadline_s": 0.001}
    return [pool.producer.send(late).get(timeout=30) for _ in range(count)]


def _skips_reach(server: PrometheusServer, count: float) -> None:
    """Wait until Prometheus counts ``count`` deadline skips at Ollama; fail naming what it saw."""
    seen: list[float | None] = [None]

    def check() -> bool:
        seen[0] = server.value(DEADLINE_SKIPS)
        return seen[0] == count

    try:
        eventually(check, 30, f"{count:g} deadline skips at Ollama")
    except TimeoutError:
        raise AssertionError(
            f"deadline skips at Ollama: {seen[0]} after 30 s, {count:g} expected"
        ) from None


def test_given_deadline_skips_at_ollama_when_evaluated_then_nothing_fires(
    monitored_pool: MonitoredPool, prometheus: PrometheusServer
) -> None:
    # Given: one deadline skip seen by Prometheus, then seven more (Ollama is never called)
    monitored_pool.simulator.reset()
    before = prometheus.value(DEADLINE_SKIPS) or 0
    answers = _skip_at_deadline(monitored_pool, 1)
    _skips_reach(prometheus, before + 1)
    answers += _skip_at_deadline(monitored_pool, 7)
    # (each answer says how its hops ended, so a count below eight names which went otherwise)
    trails = [[(t["provider"], t["outcome"]) for t in a["attempts"]] for a in answers]
    assert all(trail[0] == ("ollama", "deadline") for trail in trails), trails
    _skips_reach(prometheus, before + 8)
    # When: the rules are evaluated on them
    _settled(prometheus)
    # Then: every request got the static answer after `deadline` skips, without calling Ollama,
    # and no alert is pending or firing (a rule counting deadline outcomes as Ollama failures
    # would fire)
    assert {a["status"] for a in answers} == {"fallback"}
    assert monitored_pool.simulator.calls("ollama") == 0
    assert prometheus.alerts() == []


def test_given_an_ollama_outage_when_evaluated_then_ollama_down_is_pending_or_firing(
    monitored_pool: MonitoredPool, prometheus: PrometheusServer
) -> None:
    pool, sim = monitored_pool, monitored_pool.simulator
    try:
        # Given: Ollama's port closed; three requests meet it one after another and open its
        # breaker; a fourth comes later than the suite's 2-s recovery window, as one may on a
        # loaded machine (CI's then found the breaker half-open and called Ollama as a trial)
        sim.set_fault("ollama", "down")
        answers = [pool.producer.send(QUESTION).get(timeout=30) for _ in range(3)]
        time.sleep(2.5)
        answers.append(pool.producer.send(QUESTION).get(timeout=30))
        # When
        alerts = eventually(
            lambda: [
                a
                for a in prometheus.alerts()
                if a["labels"]["alertname"] == "OllamaConsecutiveFailures"
            ],
            20,
            "OllamaConsecutiveFailures in Prometheus's alerts",
            interval=0.2,
        )
    finally:
        sim.reset()
        # the next test of the package meets a closed breaker again
        client = pool.redis.client()
        for key in client.scan_iter("aipool:breaker:*"):
            client.delete(key)
    # Then: the fallback answered every request, and Prometheus has Ollama down
    assert {a["provider"] for a in answers} == {"gemini"}
    assert [a["attempts"][0]["outcome"] for a in answers[-1:]] == ["circuit_open"]
    (alert,) = alerts
    assert alert["state"] in ("pending", "firing")
    assert alert["labels"]["severity"] == "critical"
    assert alert["annotations"]["summary"] == "Ollama 服務可能已離線"
