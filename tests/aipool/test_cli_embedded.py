"""``aipool redis``: an embedded Redis in the foreground, saying how each kind of client names it."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import redis
from kombu import Connection

from tests.support.cli import MARK, fresh_env, processes_marked


def test_aipool_redis_prints_the_url_of_redis_clients_and_of_celery_producers(
    tmp_path: Path,
) -> None:
    # Given a fresh directory and no REDIS_URL
    env = fresh_env(tmp_path / "runtime")
    process = subprocess.Popen(
        [sys.executable, "-c", "from aipool.cli import main; main()", "redis"],
        env=env,
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        # When it has started
        assert process.stdout is not None
        lines = [process.stdout.readline().strip() for _ in range(3)]
        # Then it prints the URL redis-py and aipool take, and the one Celery producers take
        assert lines[0].startswith("embedded Redis at unix://"), lines
        (redis_url,) = [x.split("REDIS_URL=", 1)[1] for x in lines if "REDIS_URL=" in x]
        (celery_line,) = [x for x in lines if x.startswith("Celery producers")]
        celery_url = celery_line.rsplit(" ", 1)[1]
        assert celery_url.startswith("redis+socket://")
        # and both reach the same server
        client = redis.Redis.from_url(redis_url)
        client.set("aipool-test-key", "seen")
        with Connection(celery_url) as connection:
            connection.ensure_connection(max_retries=1)
            assert connection.default_channel.client.get("aipool-test-key") == b"seen"
        client.close()
    finally:
        process.send_signal(signal.SIGINT)
        process.communicate(timeout=20)
    # and Ctrl-C leaves nothing running
    assert processes_marked(env[MARK]) == []


def test_the_readme_says_where_a_producer_finds_the_embedded_redis() -> None:
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    section = " ".join(readme.split("## Try it by hand", 1)[1].split("## Sending", 1)[0].split())
    assert "`aipool redis` prints the URLs of its Redis" in section
    assert "Celery producers (`redis+socket://…`" in section
    # and the producer example names the pool's Redis, not compose's host name
    sending = readme.split("## Sending requests", 1)[1].split("### Request", 1)[0]
    assert "redis://redis:" not in sending and "the pool's REDIS_URL" in sending


def test_aipool_redis_in_production_refuses_in_one_line(tmp_path: Path) -> None:
    # Given the image's environment (AIPOOL_ENV=production) and no REDIS_URL
    env = fresh_env(tmp_path / "runtime") | {"AIPOOL_ENV": "production"}
    # When an operator runs `aipool redis` there
    result = subprocess.run(
        [sys.executable, "-c", "from aipool.cli import main; main()", "redis"],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    # Then it refuses in one line naming the setting, and nothing is left running
    assert result.returncode != 0
    (line,) = result.stderr.strip().splitlines()
    assert "AIPOOL_ENV=production" in line and "set REDIS_URL" in line
    assert "embedded Redis at" not in result.stdout
    assert processes_marked(env[MARK]) == []
