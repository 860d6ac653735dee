"""Requests the integration tests send, named by where the router starts them."""

from __future__ import annotations

from typing import Any

#: A simple query: the router starts it at Ollama (the general chain: ollama, gemini, claude).
QUESTION: dict[str, Any] = {"prompt": "What is a pod?", "user_id": "reliability"}
#: A critical request starts at Claude, a provider with a quota, so every call is accounted.
CRITICAL: dict[str, Any] = {
    "prompt": "Summarise the payment-api incident",
    "priority": "critical",
    "user_id": "reliability",
}
WEATHER_TOOL: dict[str, Any] = {
    "name": "get_weather",
    "description": "Current weather for a city",
    "parameters": {
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
    },
}
#: A request carrying a tool starts at Nemotron (the tool chain: nemotron, gemini, claude).
TOOL_QUESTION: dict[str, Any] = {
    "prompt": "What is the weather in Taipei?",
    "tools": [WEATHER_TOOL],
    "user_id": "reliability",
}
