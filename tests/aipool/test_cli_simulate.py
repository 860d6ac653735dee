"""``aipool simulate``: the servers, and ``fault``/``heal``/``state`` to drive an outage by hand
through the admin endpoint, every mistake in one line."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from aipool.cli import run
from aipool.simulator import Simulator

README = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")


@pytest.fixture
def sim() -> Iterator[Simulator]:
    with Simulator() as simulator:
        yield simulator


def _flat(text: str) -> str:
    return " ".join(re.sub(r"[│╭╮╰╯─]", " ", text).split())


def test_the_help_documents_the_fault_admin_and_its_commands(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # When a newcomer asks how to simulate an outage
    assert run(["simulate", "--help"]) == 0
    text = _flat(capsys.readouterr().out)
    # Then the help names the subcommands and the admin endpoint any HTTP client can call
    for said in (
        "aipool simulate fault ollama down",
        "aipool simulate heal ollama",
        "POST /admin/fault",
        "POST /admin/heal",
        "GET /admin/state",
        "AIPOOL_SIMULATOR_ADMIN_URL",
        "A `hang` holds each request until healed",
    ):
        assert said in text, said
    for command in ("fault", "heal", "state"):
        assert re.search(rf"\b{command}\b", text)


def test_the_readme_shows_an_outage_started_watched_and_ended_by_hand() -> None:
    section = README.split("## Try it by hand", 1)[1].split("## Sending requests", 1)[0]
    assert "aipool simulate fault ollama down" in section
    assert "aipool simulate heal ollama" in section
    assert "POST /admin/fault" in section and "GET /admin/state" in section


def test_fault_then_heal_switch_the_simulated_provider(
    sim: Simulator, capsys: pytest.CaptureFixture[str]
) -> None:
    url = sim.admin_url
    # When Ollama is switched down through the command
    assert run(["simulate", "fault", "ollama", "down", "--admin-url", url]) == 0
    # Then the simulator's Ollama refuses connections, and the command said so in one line
    assert capsys.readouterr().out == "ollama: down until `aipool simulate heal ollama`\n"
    with pytest.raises(httpx.ConnectError):
        httpx.get(sim.base_urls["ollama"] + "/api/tags", timeout=2)
    # When Claude (named either way) gets three 429s with a Retry-After
    rate_limit = ["fault", "anthropic", "rate_limit", "--times", "3", "--retry-after", "2"]
    assert run(["simulate", *rate_limit, "--admin-url", url]) == 0
    assert capsys.readouterr().out == "claude: rate_limit (retry_after=2) for the next 3 call(s)\n"
    # When every provider is healed
    assert run(["simulate", "heal", "--admin-url", url]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "ollama: healthy",
        "gemini: healthy",
        "claude: healthy",
        "nemotron: healthy",
    ]
    # Then Ollama answers again
    assert httpx.get(sim.base_urls["ollama"] + "/api/tags", timeout=2).status_code == 200


def test_state_shows_each_provider_without_the_requests_it_received(
    sim: Simulator, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a request that reached Gemini, and Ollama hanging; the admin URL from the environment
    body = {"model": "m", "stream": False, "messages": [{"role": "user", "content": "ZEBRA-1234"}]}
    httpx.post(sim.base_urls["ollama"] + "/api/chat", json=body, timeout=5)
    sim.set_fault("ollama", "hang")
    monkeypatch.setenv("AIPOOL_SIMULATOR_ADMIN_URL", sim.admin_url)
    # When the state is asked for
    assert run(["simulate", "state"]) == 0
    out = capsys.readouterr().out
    # Then each provider has a line: its fault, whether it is up, its calls; no prompt text
    lines = out.splitlines()
    assert lines[0].startswith("ollama: hang (each request held) until `aipool simulate heal")
    assert "[up, 1 call(s), http://127.0.0.1:" in lines[0]
    assert [line.split(":")[0] for line in lines] == ["ollama", "gemini", "claude", "nemotron"]
    assert "ZEBRA-1234" not in out
    assert run(["simulate", "state", "--json"]) == 0
    assert "ZEBRA-1234" not in capsys.readouterr().out


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["fault", "mistral", "down"], "'mistral' is not a provider; one of ollama, gemini"),
        (["fault", "ollama", "meteor"], "unknown fault kind 'meteor'; known: down"),
        (["fault", "ollama", "slow", "--seconds", "3"], "fault 'slow' takes no option(s) seconds"),
        (["fault", "ollama", "down", "--times", "0"], "--times"),
        (["heal", "mistral"], "'mistral' is not a provider"),
    ],
)
def test_a_mistake_in_what_was_typed_is_one_line_and_exit_2(
    args: list[str], says: str, sim: Simulator, capsys: pytest.CaptureFixture[str]
) -> None:
    code = run(["simulate", *args, "--admin-url", sim.admin_url])
    err = capsys.readouterr().err
    assert code == 2
    assert len(err.strip().splitlines()) == 1 and says in err
    # and nothing was switched
    assert all(p["fault"] is None for p in sim.state()["providers"].values())


def test_no_simulator_is_one_line_saying_how_to_start_one(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from tests.support.services import free_port

    url = f"http://127.0.0.1:{free_port()}"
    assert run(["simulate", "fault", "ollama", "down", "--admin-url", url]) == 1
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith(f"aipool: no simulator answers at {url} (ConnectError): start one")
    assert "`aipool simulate`" in line
