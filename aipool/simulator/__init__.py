"""Simulated AI providers: loopback HTTP servers speaking each real provider's wire protocol.

The real SDKs (ollama, google-genai, anthropic, openai) are pointed at them in tests, the demo and
benchmarks. Answers are deterministic; faults (``down``, ``error_500``, ``rate_limit``,
``overloaded``, ``hang``, ``slow``, ``malformed``) are switched at run time per provider, in process
through :class:`Simulator` or from another process through :class:`AdminClient`.

>>> with Simulator() as sim:                          # doctest: +SKIP
...     client = anthropic.Anthropic(api_key="k", base_url=sim.base_urls["anthropic"])
...     sim.set_fault("claude", "rate_limit", times=1, retry_after=2)
"""

from aipool.simulator.admin_client import AdminClient, AdminError
from aipool.simulator.faults import FAULT_KINDS, Fault, InvalidFault
from aipool.simulator.names import (
    ADMIN_URL_ENV,
    BASE_URL_ENV,
    DEFAULT_ADMIN_PORT,
    DEFAULT_PORTS,
    UnknownProvider,
    server_kind,
)
from aipool.simulator.serve import main, serve_forever
from aipool.simulator.simulator import Simulator

__all__ = [
    "ADMIN_URL_ENV",
    "BASE_URL_ENV",
    "DEFAULT_ADMIN_PORT",
    "DEFAULT_PORTS",
    "FAULT_KINDS",
    "AdminClient",
    "AdminError",
    "Fault",
    "InvalidFault",
    "Simulator",
    "UnknownProvider",
    "main",
    "serve_forever",
    "server_kind",
]
