"""Fixtures for the simulator tests: one simulator for the session, reset before every test."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from aipool.simulator import Simulator

#: A tool schema with one property of each kind the argument builder fills.
WEATHER_TOOL = {
    "name": "get_weather",
    "description": "Get the current weather forecast for a city",
    "parameters": {
        "type": "object",
        "properties": {
            "city": {"type": "string", "description": "City name"},
            "days": {"type": "integer"},
            "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
            "alerts": {"type": "boolean"},
            "note": {"type": "string"},
        },
        "required": ["city", "days", "unit", "alerts"],
    },
}
SEARCH_TOOL = {
    "name": "search_tickets",
    "description": "Search the incident ticket tracker",
    "parameters": {
        "type": "object",
        "properties": {"query": {"type": "string"}},
        "required": ["query"],
    },
}


@dataclass(frozen=True)
class ToolCase:
    """Two tools in the pool's neutral form, a prompt that wants the second, and its arguments."""

    tools: tuple[dict[str, Any], ...]
    prompt: str
    expected_name: str
    expected_arguments: dict[str, Any]


@pytest.fixture(scope="session")
def tool_case() -> ToolCase:
    """A weather question offered a ticket-search tool and a weather tool (in that order)."""
    return ToolCase(
        tools=(SEARCH_TOOL, WEATHER_TOOL),
        prompt="What is the weather forecast in Paris for tomorrow?",
        expected_name="get_weather",
        expected_arguments={"city": "Paris", "days": 1, "unit": "celsius", "alerts": True},
    )


@pytest.fixture(scope="session")
def running_simulator() -> Iterator[Simulator]:
    """One simulator on free loopback ports for the whole session."""
    with Simulator() as simulator:
        yield simulator


@pytest.fixture
def sim(running_simulator: Simulator) -> Simulator:
    """The session's simulator, every provider healthy and every counter zero."""
    running_simulator.reset()
    return running_simulator
