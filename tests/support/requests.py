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
#: Correlating three services' alerts: complexity 4, the cloud tier, so Gemini first (the general
#: chain from there: gemini, claude, ollama).
CLOUD_TRIAGE = (
    "同時收到三個告警：HighErrorRate on checkout-service、PostgresReplicationLag on pg-replica-2、"
    "KafkaConsumerLag on order-events。幫我分析這些告警之間的關聯，找出根因，然後建議處理順序。"
)
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

#: A tool with two required arguments: a call missing one was cut short.
POD_LOGS_TOOL: dict[str, Any] = {
    "name": "get_pod_logs",
    "description": "Fetch the logs of a pod",
    "parameters": {
        "type": "object",
        "properties": {"pod": {"type": "string"}, "lines": {"type": "integer"}},
        "required": ["pod", "lines"],
    },
}
