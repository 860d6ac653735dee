"""The embedded Redis has one owner: it is announced while it runs, found by others, and gone
(process and announcement) when its owner stops it; nothing else ever starts one."""

from __future__ import annotations

import json
import os

import pytest

from aipool.children import pid_alive
from aipool.errors import NoRedis, SettingsError
from aipool.redis.embedded import EmbeddedRedis, announced_at, find_running, is_embedded
from aipool.redis.url import celery_url, redis_url


@pytest.fixture()
def runtime(tmp_path, monkeypatch):
    monkeypatch.setenv("AIPOOL_RUNTIME_DIR", str(tmp_path / "runtime"))
    return tmp_path / "runtime"


def test_a_running_embedded_redis_is_found_and_stops_with_its_owner(tmp_path, runtime):
    server = EmbeddedRedis(tmp_path / "data", owner="test")
    running = server.start()
    try:
        assert find_running() == running
        assert announced_at(running.redis_url.replace("unix://", "redis+socket://")) == running
        assert pid_alive(running.redis_pid)
    finally:
        server.stop()
    assert not pid_alive(running.redis_pid)
    assert find_running() is None
    assert not list(runtime.glob("redis-*.json"))


def test_an_announcement_whose_owner_died_is_removed(runtime):
    runtime.mkdir(parents=True, mode=0o700)
    stale = runtime / "redis-999999999.json"
    stale.write_text(
        json.dumps(
            {
                "redis_url": "unix:///nonexistent.sock",
                "database_url": "sqlite:///x.db",
                "owner": "gone",
                "owner_pid": 999_999_999,
                "redis_pid": 999_999_998,
                "data_dir": "/nonexistent",
                "started_at": 0.0,
            }
        )
    )
    assert find_running() is None
    assert not stale.exists()


def test_redis_url_never_starts_one_and_says_how_to_get_one(runtime, monkeypatch):
    monkeypatch.delenv("REDIS_URL")
    before = set(os.listdir("/proc"))
    with pytest.raises(NoRedis, match="REDIS_URL is not set and no embedded Redis is running"):
        redis_url()
    assert not runtime.exists()
    started = {p for p in set(os.listdir("/proc")) - before if p.isdigit()}
    assert not any("redis-server" in _cmdline(p) for p in started)


def test_redis_url_adopts_the_running_one_with_its_ledger(tmp_path, runtime, monkeypatch):
    monkeypatch.delenv("REDIS_URL")
    monkeypatch.delenv("DATABASE_URL")
    with EmbeddedRedis(tmp_path / "data", owner="test") as running:
        assert redis_url() == running.redis_url
        assert os.environ["DATABASE_URL"] == running.database_url
        assert celery_url().startswith("redis+socket://")


def test_socket_urls_are_embedded_tcp_urls_are_not():
    assert is_embedded("unix:///tmp/x/redis.sock")
    assert is_embedded("redis+socket:///tmp/x/redis.sock")
    assert not is_embedded("redis://127.0.0.1:6379/0")


def _cmdline(pid: str) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            return fh.read().decode(errors="replace")
    except OSError:
        return ""


def test_records_waiting_in_the_embedded_redis_survive_its_restart(tmp_path, runtime):
    # Given: two usage records and a queued request waiting in an embedded Redis
    import redis

    from aipool.redis.persistence import persistence

    server = EmbeddedRedis(tmp_path / "data", owner="test")
    running = server.start()
    try:
        client = redis.Redis.from_url(running.redis_url)
        client.lpush("aipool:ledger:pending", "record-1", "record-2")
        client.lpush("gemini", "request-1")
        assert persistence(client).aof is True
        client.close()
    finally:
        # When: it stops (as at a crash of its owner, or a reboot) and starts on the same folder
        server.stop()
    again = EmbeddedRedis(tmp_path / "data", owner="test")
    running = again.start()
    try:
        client = redis.Redis.from_url(running.redis_url)
        # Then: nothing that waited is lost
        assert client.lrange("aipool:ledger:pending", 0, -1) == [b"record-2", b"record-1"]
        assert client.lrange("gemini", 0, -1) == [b"request-1"]
        client.close()
    finally:
        again.stop()
    assert (tmp_path / "data" / "appendonly.aof").exists() or list(
        (tmp_path / "data").glob("appendonly*")
    )


def test_in_production_no_embedded_redis_starts_and_the_refusal_says_what_to_set(
    tmp_path, runtime, monkeypatch
):
    # Given a process that says it runs in production (the image sets AIPOOL_ENV=production)
    monkeypatch.setenv("AIPOOL_ENV", "production")
    server = EmbeddedRedis(tmp_path / "data", owner="test")
    # When it would start the embedded Redis
    with pytest.raises(SettingsError, match="AIPOOL_ENV=production") as refused:
        server.start()
    # Then it says what production uses instead, and started and announced nothing
    assert "set REDIS_URL" in str(refused.value)
    assert server.pid is None
    assert find_running() is None
    assert not (tmp_path / "data").exists()
