"""Context windows: whether a request's prompt fits a hop's model, decided before any call.

The windows live in the route table (``[context_windows]`` in ``routes.toml``), keyed by
``"provider:model"`` or by provider alone (the provider's default for models not listed)::

    [context_windows]
    ollama = 8192                      # the num_ctx the Ollama server runs with
    "ollama:qwen2.5:7b-instruct" = 32768
    gemini = 1048576

A request fits a hop when its estimated input tokens plus the output it allows (``max_tokens``)
fit the window. A hop whose model has no window in the table always fits: no number, no skip.

How the hop runner uses it (before breaker, quota or call)::

    reason = skip_reason(request, hop)
    if reason is not None:
        # attempts trail: {"provider": hop.provider, "model": hop.model, "outcome": "skipped",
        #                  "error": reason}; then the next hop of the chain, no call, no quota
        ...

``skip_reason`` names numbers only (tokens and the window), never prompt text.
"""

from __future__ import annotations

from aipool.contract.request import Request
from aipool.contract.route import Hop
from aipool.routing.table import RouteTable, load_table

#: The ``error`` code an attempts-trail entry carries when a hop is skipped for its window.
CONTEXT_TOO_LONG = "context_too_long"


def window(hop: Hop, table: RouteTable | None = None) -> int | None:
    """The context window (tokens) of ``hop``'s model, or None when the table names none."""
    if hop.terminal:
        return None
    windows = (table if table is not None else load_table()).context_windows
    return windows.get(f"{hop.provider}:{hop.model}", windows.get(hop.provider))


def needed_tokens(request: Request) -> int:
    """Tokens a call for ``request`` needs room for: the prompt estimate plus ``max_tokens``."""
    return request.estimated_input_tokens() + request.max_tokens


def fits(request: Request, hop: Hop, table: RouteTable | None = None) -> bool:
    """Whether ``request`` fits the context window of ``hop``'s model (unknown window: it fits)."""
    limit = window(hop, table)
    return limit is None or needed_tokens(request) <= limit


def skip_reason(request: Request, hop: Hop, table: RouteTable | None = None) -> str | None:
    """None when ``request`` fits ``hop``; else the attempts-trail ``error`` text saying why."""
    limit = window(hop, table)
    if limit is None or needed_tokens(request) <= limit:
        return None
    return (
        f"{CONTEXT_TOO_LONG}: ~{request.estimated_input_tokens()} prompt + "
        f"{request.max_tokens} output tokens exceed {hop}'s {limit}-token context window"
    )
