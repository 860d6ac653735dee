"""Fault switching and counters, through the admin endpoint and in process."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import anthropic
import httpx
import openai
import pytest

from aipool.simulator import AdminClient, AdminError, InvalidFault, Simulator


@pytest.fixture
def admin(sim: Simulator) -> Iterator[AdminClient]:
    with AdminClient(sim.admin_url) as admin:
        yield admin


@pytest.fixture
def claude(sim: Simulator) -> Iterator[anthropic.Anthropic]:
    with anthropic.Anthropic(
        api_key="k", base_url=sim.base_urls["anthropic"], max_retries=0, timeout=5
    ) as client:
        yield client


def ask_claude(client: anthropic.Anthropic) -> anthropic.types.Message:
    return client.messages.create(
        model="claude-haiku-4-5", max_tokens=64, messages=[{"role": "user", "content": "hi"}]
    )


def test_a_fault_with_times_covers_only_that_many_calls(
    admin: AdminClient, claude: anthropic.Anthropic
) -> None:
    # Given two calls' worth of 500s set through the admin endpoint
    state = admin.set_fault("claude", "error_500", times=2)
    assert state["fault"] == {"kind": "error_500", "times": 2, "remaining": 2}
    # When Claude is called three times
    for _ in range(2):
        with pytest.raises(anthropic.InternalServerError):
            ask_claude(claude)
    answer = ask_claude(claude)
    # Then the third call is answered, every call was counted and the fault is gone
    assert answer.stop_reason == "end_turn"
    assert admin.calls("anthropic") == 3
    assert admin.state()["providers"]["anthropic"]["fault"] is None


def test_state_lists_every_provider_with_its_address(sim: Simulator, admin: AdminClient) -> None:
    state = admin.state()
    assert state["admin_url"] == sim.admin_url
    assert set(state["providers"]) == {"ollama", "gemini", "anthropic", "openai"}
    for kind, provider in state["providers"].items():
        assert provider["base_url"] == sim.base_urls[kind]
        assert provider["base_url"].startswith(f"http://127.0.0.1:{provider['port']}")
        assert provider["up"] is True
        assert provider["calls"] == 0
    assert state["providers"]["openai"]["provider"] == "nemotron"
    assert state["providers"]["openai"]["base_url"].endswith("/v1")


def test_last_requests_show_what_the_provider_received(sim: Simulator, admin: AdminClient) -> None:
    # When a request offering a tool reaches the OpenAI-compatible server
    with openai.OpenAI(api_key="k", base_url=sim.base_urls["openai"], max_retries=0) as client:
        client.chat.completions.create(
            model="m",
            messages=[{"role": "user", "content": "look up INC-42"}],
            tools=[{"type": "function", "function": {"name": "lookup", "parameters": {}}}],
        )
    # Then its body, tools included, is in the request log (both spellings of the name)
    [body] = admin.last_requests("nemotron")
    assert body["tools"][0]["function"]["name"] == "lookup"
    assert sim.last_requests("openai") == [body]


def test_down_receives_no_calls_and_comes_back_on_the_same_port(
    admin: AdminClient, claude: anthropic.Anthropic, sim: Simulator
) -> None:
    port = admin.state()["providers"]["anthropic"]["port"]
    admin.set_fault("anthropic", "down")
    assert admin.state()["providers"]["anthropic"]["up"] is False
    with pytest.raises(anthropic.APIConnectionError):
        ask_claude(claude)
    admin.heal("claude")
    assert ask_claude(claude).content
    assert admin.state()["providers"]["anthropic"]["port"] == port
    assert admin.calls("claude") == 1


def test_down_with_times_drops_that_many_requests_uncounted(
    sim: Simulator, claude: anthropic.Anthropic
) -> None:
    # Given the next request dropped as if the server died mid-call
    sim.set_fault("claude", "down", times=1)
    # Then that call fails to connect, the next is answered, and only the answered one counts
    with pytest.raises(anthropic.APIConnectionError):
        ask_claude(claude)
    assert ask_claude(claude).content
    assert sim.calls("claude") == 1


def test_reset_heals_everything_and_zeroes_counters(
    sim: Simulator, admin: AdminClient, claude: anthropic.Anthropic
) -> None:
    ask_claude(claude)
    admin.set_fault("gemini", "down")
    admin.set_fault("ollama", "rate_limit", retry_after=3)
    admin.reset()
    state = admin.state()["providers"]
    assert all(p["fault"] is None and p["calls"] == 0 and p["up"] for p in state.values())
    assert state["anthropic"]["last_requests"] == []
    assert httpx.get(sim.base_urls["ollama"] + "/api/version").status_code == 200


def test_bad_fault_requests_are_refused(sim: Simulator, admin: AdminClient) -> None:
    with pytest.raises(AdminError, match="unknown fault kind"):
        admin.set_fault("claude", "meteor")
    with pytest.raises(AdminError, match="unknown provider"):
        admin.set_fault("mistral", "down")
    with pytest.raises(AdminError, match="takes no option"):
        admin.set_fault("claude", "slow", seconds=3)
    with pytest.raises(InvalidFault, match="times"):
        sim.set_fault("claude", "error_500", times=0)


def test_a_hung_request_blocks_neither_other_requests_nor_shutdown() -> None:
    # Given a simulator of its own whose Ollama hangs the next request for 30 s
    sim = Simulator().start()
    sim.set_fault("ollama", "hang", times=1)
    url = sim.base_urls["ollama"] + "/api/chat"
    body = {"model": "m", "stream": False, "messages": [{"role": "user", "content": "hi"}]}
    outcome: list[object] = []

    def hung_call() -> None:
        try:
            outcome.append(httpx.post(url, json=body, timeout=60))
        except httpx.HTTPError as error:
            outcome.append(error)

    caller = threading.Thread(target=hung_call, daemon=True)
    caller.start()
    deadline = time.monotonic() + 2
    while sim.calls("ollama") == 0 and time.monotonic() < deadline:
        time.sleep(0.01)
    try:
        # When another request arrives meanwhile, Then it is answered at once
        answered = httpx.post(url, json=body, timeout=2)
        assert answered.status_code == 200
        assert caller.is_alive()
    finally:
        # And stopping does not wait for the hung request (held until healed, which nobody
        # does), which ends without an answer
        stopping = threading.Thread(target=sim.stop, daemon=True)
        stopping.start()
        stopping.join(timeout=60)
    assert not stopping.is_alive()
    caller.join(timeout=30)
    assert len(outcome) == 1 and isinstance(outcome[0], httpx.HTTPError)


def test_a_default_hang_holds_each_request_until_healed(sim: Simulator) -> None:
    # Given a hang with no duration (what `aipool simulate fault ollama hang` sets)
    state = sim.set_fault("ollama", "hang")
    assert state["fault"] == {"kind": "hang", "times": None, "seconds": None, "remaining": None}
    url = sim.base_urls["ollama"] + "/api/chat"
    body = {"model": "m", "stream": False, "messages": [{"role": "user", "content": "hi"}]}
    answers: list[int] = []
    caller = threading.Thread(
        target=lambda: answers.append(httpx.post(url, json=body, timeout=60).status_code),
        daemon=True,
    )
    started = time.monotonic()
    caller.start()
    # When 3 s pass, a request is still held (it used to be answered after 30 s, exactly
    # Ollama's timeout: a hang the pool saw as a slow answer); it outlasts every timeout
    caller.join(timeout=3)
    assert caller.is_alive() and answers == []
    # Then healing lets it go, answered
    sim.heal("ollama")
    caller.join(timeout=5)
    assert answers == [200]
    assert time.monotonic() - started >= 3
