"""The Redis transport's copy of kombu's private ``Channel._brpop_read`` stays the method it copies."""

from __future__ import annotations

import inspect
from importlib.metadata import version
from pathlib import Path

from kombu.transport import redis as kombu_redis
from packaging.version import Version

from workers.edge.transport import COPIED_FROM

KEPT_SOURCE = Path(__file__).with_name("kombu_brpop_read.txt")


def test_the_installed_kombu_is_the_minor_release_the_method_was_copied_from() -> None:
    installed, copied = Version(version("kombu")), Version(COPIED_FROM)
    assert (installed.major, installed.minor) == (copied.major, copied.minor)


def test_kombus_brpop_read_is_still_the_source_the_pool_copied() -> None:
    # A difference means kombu changed the method workers/edge/transport.py overrides: port the
    # change into RedisChannel._brpop_read, then keep the new source here.
    assert inspect.getsource(kombu_redis.Channel._brpop_read) == KEPT_SOURCE.read_text()
