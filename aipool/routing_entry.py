"""Placeholder route: the ADR chain by whether the request carries tools."""

from __future__ import annotations

from aipool.chains import build_chain
from aipool.contract import Request
from aipool.journey import Route


def decide(request: Request) -> Route:
    tools = request.wants_tools
    return Route(
        intent="TOOL_CALL" if tools else "CHAT",
        complexity=1,
        chain=build_chain(None, tools=tools),
        reason="default ADR chain",
    )
