"""A Redis that keeps nothing on disk is named, once, with what its restart loses; a Redis that
keeps an AOF or RDB snapshots, or refuses to say, is not."""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import redis

from aipool.redis.persistence import Persistence, persistence, persistence_warning

Server = Callable[..., redis.Redis]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture
def redis_server(tmp_path: Path) -> Iterator[Server]:
    """Start real redis-server processes on loopback with the options given."""
    started: list[tuple[subprocess.Popen[bytes], redis.Redis]] = []

    def start(*options: str) -> redis.Redis:
        port = _free_port()
        directory = tmp_path / str(port)
        directory.mkdir()
        binary = shutil.which("redis-server") or "redis-server"
        process = subprocess.Popen(
            [binary, "--port", str(port), "--bind", "127.0.0.1", "--dir", str(directory), *options],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        client = redis.Redis(port=port, socket_connect_timeout=1)
        deadline = time.monotonic() + 10
        while True:
            try:
                client.ping()
                break
            except redis.ConnectionError:
                if time.monotonic() > deadline:
                    process.kill()
                    raise
                time.sleep(0.05)
        started.append((process, client))
        return client

    yield start
    for process, client in started:
        client.close()
        process.terminate()
        process.wait(timeout=10)


def test_given_a_redis_without_aof_or_rdb_then_the_warning_names_what_a_restart_loses(
    redis_server: Server,
) -> None:
    # Given: the shape of the test machine's and compose's default Redis
    client = redis_server("--save", "", "--appendonly", "no")
    # When
    warning = persistence_warning(client, "redis://127.0.0.1/0")
    # Then: one line, naming the server, what is lost and how to keep it
    assert warning is not None and "\n" not in warning
    assert warning.startswith("Redis at redis://127.0.0.1/0 keeps nothing on disk")
    assert "requests waiting in its queues" in warning
    assert "usage records not yet drained" in warning
    assert "appendonly yes" in warning


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        (
            ("--save", "", "--appendonly", "yes", "--appendfsync", "everysec"),
            Persistence(True, False),
        ),
        (("--save", "900 1", "--appendonly", "no"), Persistence(False, True)),
    ],
)
def test_given_a_redis_that_persists_then_nothing_is_said(
    redis_server: Server, options: tuple[str, ...], expected: Persistence
) -> None:
    client = redis_server(*options)
    assert persistence(client) == expected
    assert persistence_warning(client, "redis://127.0.0.1/0") is None


def test_given_a_redis_that_refuses_config_then_info_is_read_and_nothing_raises(
    redis_server: Server,
) -> None:
    # Given: CONFIG renamed away, as managed services do, with AOF on
    client = redis_server("--rename-command", "CONFIG", "", "--appendonly", "yes", "--save", "")
    with pytest.raises(redis.ResponseError):
        client.config_get("appendonly")
    # When / Then: INFO tells that AOF is on
    assert persistence(client).aof is True
    assert persistence_warning(client, "redis://127.0.0.1/0") is None


def test_given_a_redis_that_refuses_config_and_has_no_aof_then_it_is_not_accused(
    redis_server: Server,
) -> None:
    # RDB snapshots may be configured and not yet taken: without CONFIG that cannot be told
    client = redis_server("--rename-command", "CONFIG", "", "--appendonly", "no", "--save", "")
    assert persistence(client) == Persistence(False, None)
    assert persistence_warning(client, "redis://127.0.0.1/0") is None
