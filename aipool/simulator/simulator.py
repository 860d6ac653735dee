"""The simulator: the four provider servers, their fault switches and the admin endpoint."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from types import TracebackType
from typing import Any

from aipool.simulator.admin_server import AdminServer
from aipool.simulator.faults import make_fault
from aipool.simulator.names import POOL_NAMES, SERVER_KINDS, server_kind
from aipool.simulator.provider_server import ProviderServer
from aipool.simulator.state import ProviderState
from aipool.simulator.wire import WIRES


class Simulator:
    """Loopback stand-ins for Ollama, Gemini, Anthropic and an OpenAI-compatible API.

    ``ports`` maps providers (either spelling) to ports; missing ones and 0 pick free ports.
    ``admin_port`` 0 picks a free port for the admin endpoint and ``None`` runs none. Providers
    may be named ``ollama``/``gemini``/``anthropic``/``openai`` or ``claude``/``nemotron``.
    """

    def __init__(
        self,
        host: str = "127.0.0.1",
        ports: Mapping[str, int] | None = None,
        admin_port: int | None = 0,
    ) -> None:
        wanted = {server_kind(name): port for name, port in (ports or {}).items()}
        self.host = host
        self.servers: dict[str, ProviderServer] = {
            kind: ProviderServer(WIRES[kind], ProviderState(), host, wanted.get(kind, 0))
            for kind in SERVER_KINDS
        }
        self._admin_port = admin_port
        self._admin: AdminServer | None = None
        self._started = False

    def start(self) -> Simulator:
        """Bind every server (and the admin endpoint); returns ``self``."""
        try:
            for server in self.servers.values():
                fault = server.state.fault
                # A provider switched ``down`` before start stays unbound until healed.
                if fault is None or fault.kind != "down" or fault.times is not None:
                    server.start()
            if self._admin_port is not None and self._admin is None:
                self._admin = AdminServer(self, self.host, self._admin_port)
                self._admin.start()
        except BaseException:
            self.stop()
            raise
        self._started = True
        return self

    def stop(self) -> None:
        """Close every port and let go of hung requests; safe to call twice."""
        # Each listener takes up to one poll interval to notice; stopping them side by side
        # keeps a test's teardown to one interval instead of five.
        stoppers = [threading.Thread(target=server.stop) for server in self.servers.values()]
        if self._admin is not None:
            stoppers.append(threading.Thread(target=self._admin.stop))
            self._admin = None
        for stopper in stoppers:
            stopper.start()
        for stopper in stoppers:
            stopper.join()
        self._started = False

    def __enter__(self) -> Simulator:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()

    @property
    def base_urls(self) -> dict[str, str]:
        """Server kind -> the base URL its SDK takes (OpenAI's includes ``/v1``)."""
        return {kind: server.base_url for kind, server in self.servers.items()}

    @property
    def admin_url(self) -> str:
        """The admin endpoint's root URL (empty when it is not running)."""
        return self._admin.url if self._admin is not None else ""

    def base_url(self, provider: str) -> str:
        """The base URL of one provider (either spelling)."""
        return self.servers[server_kind(provider)].base_url

    def set_fault(self, provider: str, kind: str, **options: Any) -> dict[str, Any]:
        """Switch ``provider`` into fault ``kind`` (see :mod:`aipool.simulator.faults`).

        Returns the provider's state. A ``healthy`` kind heals.
        """
        fault = make_fault(kind, **options)
        server = self.servers[server_kind(provider)]
        server.state.set_fault(fault)
        if fault is not None and fault.kind == "down" and fault.times is None:
            server.go_down()
        elif self._started:
            server.start()
        return self.provider_state(provider)

    def heal(self, provider: str) -> dict[str, Any]:
        """Clear ``provider``'s fault, re-binding its port if it was down."""
        return self.set_fault(provider, "healthy")

    def reset(self) -> None:
        """Every provider healthy, counters zero, request logs empty."""
        for server in self.servers.values():
            server.state.reset()
            if self._started:
                server.start()

    def calls(self, provider: str) -> int:
        """Inference calls ``provider`` received (faulted or not; none while down)."""
        return self.servers[server_kind(provider)].state.calls

    def last_requests(self, provider: str) -> list[Any]:
        """The most recent inference request bodies ``provider`` received, oldest first."""
        return self.servers[server_kind(provider)].state.last_requests()

    def provider_state(self, provider: str) -> dict[str, Any]:
        """One provider's state, as in :meth:`state`."""
        kind = server_kind(provider)
        server = self.servers[kind]
        return {
            "kind": kind,
            "provider": POOL_NAMES[kind],
            "port": server.port,
            "base_url": server.base_url,
            "up": server.is_up,
            **server.state.snapshot(),
        }

    def state(self) -> dict[str, Any]:
        """``{"admin_url", "providers": {kind: {port, base_url, up, fault, calls, ...}}}``."""
        return {
            "admin_url": self.admin_url,
            "providers": {kind: self.provider_state(kind) for kind in self.servers},
        }
