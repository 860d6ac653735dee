"""Which lane a request waits in (issue #29): urgent work never shares a line with routine work."""

from __future__ import annotations

import pytest

from aipool import lanes
from aipool.contract.request import parse_request
from aipool.providers.catalog import PROVIDERS
from aipool.routing.router import decide, routed_priority
from celeryconfig import QUEUES


def _urgent(raw: dict[str, object]) -> bool:
    request = parse_request(raw)
    return lanes.is_urgent(request, decide(request).intent, routed_priority(request))


@pytest.mark.parametrize(
    "raw",
    [
        {"prompt": "checkout 5xx 從 1% 升到 30%，payment-service 同時逾時，請分析根因"},
        {"prompt": "What is a pod?", "priority": "critical"},
        {"prompt": "What is a pod?", "deadline_s": 10},
        {"prompt": "What is a pod?", "intent": "ALERT_TRIAGE"},
    ],
)
def test_alert_triage_critical_and_short_deadlines_are_urgent(raw: dict[str, object]) -> None:
    assert _urgent(raw)


@pytest.mark.parametrize(
    "raw",
    [
        {"prompt": "今天午餐吃什麼好？"},
        {"prompt": "What is a pod?", "priority": "high"},
        {"prompt": "What is a pod?", "deadline_s": 600},
    ],
)
def test_routine_work_stays_in_routine_lanes(raw: dict[str, object]) -> None:
    assert not _urgent(raw)


def test_every_queue_has_an_urgent_lane_and_celery_declares_them_all() -> None:
    for queue in ("router", *PROVIDERS):
        assert lanes.urgent_lane(queue) == f"{queue}.urgent"
        assert lanes.queue_of(lanes.urgent_lane(queue)) == queue
        assert lanes.lane(lanes.urgent_lane(queue), urgent=False) == queue
        assert {queue, lanes.urgent_lane(queue)} <= set(QUEUES)
    assert "maintenance" in QUEUES and "maintenance.urgent" not in QUEUES


def test_the_embedded_default_gives_every_lane_exactly_one_class_of_worker() -> None:
    served = [q for queues, _ in lanes.WORKER_CLASSES.values() for q in queues]
    assert sorted(served) == sorted(QUEUES)
    # and no class mixes urgent and routine lanes, nor the local model's with the cloud's
    for queues, processes in lanes.WORKER_CLASSES.values():
        assert len({lanes.is_urgent_lane(q) for q in queues}) == 1, queues
        providers = {lanes.queue_of(q) for q in queues} & set(PROVIDERS)
        assert not (providers & {"ollama", "nemotron"} and providers & {"gemini", "claude"})
        assert processes >= 1
