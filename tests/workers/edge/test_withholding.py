"""What an ``ai.generate`` message shows in task events once a worker received it."""

from __future__ import annotations

from tests.support.kombu_message import kombu_message
from workers.edge.withholding import DESCRIBED, WITHHELD, described, withhold_prompt

POOLS_OWN = "{'intent': 'CHAT', 'hop': 0, 'provider': 'ollama', 'model': 'qwen2.5:3b'}"


def _received(headers: dict[str, object]) -> dict[str, object]:
    message = kombu_message("[[], {}, {}]", {"task": "ai.generate", "id": "t-1", **headers})
    withhold_prompt(message)
    return dict(message.headers)


def test_a_message_the_pool_described_keeps_its_hop_description() -> None:
    headers = _received({"kwargsrepr": POOLS_OWN, "argsrepr": "()", **described()})
    assert headers["kwargsrepr"] == POOLS_OWN


def test_a_producer_mimicking_the_pools_description_without_its_header_is_withheld() -> None:
    # A repr that merely starts like the pool's own can carry the prompt after its first key.
    shown = "{'intent': 'CHAT', 'request': {'prompt': 'payroll of patient A123456789'}}"
    headers = _received({"kwargsrepr": shown, "argsrepr": "('the prompt',)"})
    assert (headers["kwargsrepr"], headers["argsrepr"]) == (WITHHELD, "()")


def test_the_header_without_a_text_description_is_withheld() -> None:
    assert _received({DESCRIBED: True})["kwargsrepr"] == WITHHELD
    assert _received({DESCRIBED: "yes", "kwargsrepr": POOLS_OWN})["kwargsrepr"] == WITHHELD


def test_messages_of_other_tasks_are_left_as_they_are() -> None:
    message = kombu_message(
        "[[], {}, {}]", {"task": "ai.tidy", "id": "t", "kwargsrepr": "{'x': 1}"}
    )
    withhold_prompt(message)
    assert message.headers["kwargsrepr"] == "{'x': 1}"
