"""A client for the admin endpoint, for tests that drive a simulator in another process."""

from __future__ import annotations

from types import TracebackType
from typing import Any

import httpx

from aipool.simulator.names import server_kind


class AdminError(RuntimeError):
    """The admin endpoint refused a request (unknown provider, bad fault option...)."""


class AdminClient:
    """Same fault and counter methods as :class:`~aipool.simulator.simulator.Simulator`, over HTTP.

    ``url`` is the admin root, e.g. the ``AIPOOL_SIMULATOR_ADMIN_URL`` that ``aipool simulate``
    prints.
    """

    def __init__(self, url: str, timeout: float = 5.0) -> None:
        self.url = url.rstrip("/")
        self._http = httpx.Client(base_url=self.url, timeout=timeout)

    def close(self) -> None:
        """Close the connection pool."""
        self._http.close()

    def __enter__(self) -> AdminClient:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def set_fault(self, provider: str, kind: str, **options: Any) -> dict[str, Any]:
        """Switch ``provider`` into fault ``kind``; returns the provider's state."""
        result: dict[str, Any] = self._post(
            "/admin/fault", {"provider": provider, "kind": kind, **options}
        )
        return result

    def heal(self, provider: str) -> dict[str, Any]:
        """Clear ``provider``'s fault; returns the provider's state."""
        result: dict[str, Any] = self._post("/admin/heal", {"provider": provider})
        return result

    def reset(self) -> None:
        """Every provider healthy, counters zero."""
        self._post("/admin/reset", {})

    def state(self) -> dict[str, Any]:
        """The whole simulator state, as :meth:`Simulator.state` returns it."""
        response = self._http.get("/admin/state")
        response.raise_for_status()
        result: dict[str, Any] = response.json()
        return result

    def provider_state(self, provider: str) -> dict[str, Any]:
        """One provider's state."""
        result: dict[str, Any] = self.state()["providers"][server_kind(provider)]
        return result

    def calls(self, provider: str) -> int:
        """Inference calls ``provider`` received."""
        return int(self.provider_state(provider)["calls"])

    def last_requests(self, provider: str) -> list[Any]:
        """The most recent inference request bodies ``provider`` received, oldest first."""
        return list(self.provider_state(provider)["last_requests"])

    def _post(self, path: str, body: dict[str, Any]) -> Any:
        response = self._http.post(path, json=body)
        if response.status_code == 400:
            raise AdminError(response.json().get("error", response.text))
        response.raise_for_status()
        return response.json()
