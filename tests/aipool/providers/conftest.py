"""Fixtures of the adapters' wire tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.canned import CannedProvider


@pytest.fixture
def canned() -> Iterator[list[CannedProvider]]:
    """Recorded-response servers a test starts with :func:`tests.support.canned.serve`, closed
    after it."""
    servers: list[CannedProvider] = []
    yield servers
    for server in servers:
        server.close()
