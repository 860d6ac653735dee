"""One request's Redis traffic in time: its marks found in the proxy's log, the phases between."""

from __future__ import annotations

import pytest

from bench.timeline import Event, anchors, owners, phases, writes

NAMES = {1: "producer", 2: "pool parent", 3: "pool child", 4: "producer"}


def _events() -> list[Event]:
    # One submit(): claim, subscribe, message out, taken, two task events, begin, finish, answer.
    return [
        Event(10.0000, 1, "hold", "136\tSET aipool:task-id:x"),
        Event(10.0008, 1, "back", "5\t+OK"),
        Event(10.0010, 4, "hold", "79\tSUBSCRIBE celery-task-meta-x"),
        Event(10.0015, 1, "hold", "2191\tLPUSH ollama"),
        Event(10.0025, 2, "back", "2180\t* ollama"),
        Event(10.0040, 2, "hold", "966\tPUBLISH /14.celeryev/task.multi"),
        Event(10.0090, 2, "hold", "646\tPUBLISH /14.celeryev/task.multi"),
        Event(10.0091, 3, "hold", "2770\tEVALSHA 9bbd2d3f aipool:attempt:j:ollama"),
        Event(10.0130, 3, "hold", "4663\tEVALSHA 9bbd2d3f aipool:attempt:j:ollama"),
        Event(10.0140, 4, "back", "1547\t> message"),
    ]


def test_a_requests_marks_are_its_message_taken_started_and_answered() -> None:
    # When the marks of a request sent at 10.0 and answered at 10.015 are read
    found = anchors(_events(), 10.0, 10.015, NAMES)
    # Then each is the event that passed it, and the phases are the ms between them
    assert found == {
        "start": 10.0,
        "sent": 10.0015,
        "delivered": 10.0025,
        "started": 10.0090,
        "answered": 10.0140,
        "end": 10.015,
    }
    assert list(phases(found)) == [
        "start → sent",
        "sent → delivered",
        "delivered → started",
        "started → answered",
        "answered → end",
    ]
    assert phases(found)["start → sent"] == pytest.approx(1.5)


def test_writes_are_counted_by_process_and_command_without_ids() -> None:
    counted = writes(_events(), 10.0, 10.015, NAMES)
    assert counted["producer: SET aipool:task-id:x"] == 1
    assert counted["pool parent: PUBLISH /14.celeryev/task.multi"] == 2
    assert sum(counted.values()) == 7


def test_each_client_end_of_a_connection_to_the_proxy_is_put_to_its_process() -> None:
    sockets = (
        'ESTAB 0 0 127.0.0.1:39054 127.0.0.1:40111 users:(("celery",pid=812,fd=9))\n'
        'ESTAB 0 0 127.0.0.1:40111 127.0.0.1:39054 users:(("python",pid=700,fd=5))\n'
        'ESTAB 0 0 127.0.0.1:39070 127.0.0.1:6379 users:(("python",pid=813,fd=7))\n'
    )
    assert owners(sockets, 40111) == {"127.0.0.1:39054": 812}
