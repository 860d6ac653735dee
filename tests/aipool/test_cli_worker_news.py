"""What ``aipool worker`` relays from its workers' logs to the terminal (``LogNews``), read from
the lines Celery 5.7 writes (copied from a worker's log on this machine)."""

from __future__ import annotations

from pathlib import Path

from aipool.cli.worker_news import LogNews

CANNOT = (
    "[2026-12-06 03:54:55,461: ERROR/MainProcess] consumer: Cannot connect to "
    "workers.edge.transport:RedisTransport://:[REDACTED]@127.0.0.1:6999/0: Error 111 connecting "
    "to 127.0.0.1:6999. Connection refused..\nTrying again in 2.00 seconds... (1/100)\n"
)
LOST = (
    "[2026-12-06 03:57:16,102: WARNING/MainProcess] consumer: Connection to broker lost. "
    "Trying to re-establish the connection...\n"
)
CONNECTED = (
    "[2026-12-06 03:57:30,139: INFO/MainProcess] Connected to "
    "workers.edge.transport:RedisTransport://:[REDACTED]@127.0.0.1:6998/0\n"
)
ORDINARY = "[2026-12-06 03:57:31,160: INFO/MainProcess] mingle: all alone\n"


def _log(tmp_path: Path) -> tuple[LogNews, Path]:
    path = tmp_path / "routing.log"
    path.write_text("")
    return LogNews("routing", path), path


def _append(path: Path, text: str) -> None:
    with path.open("a") as log:
        log.write(text)


def test_an_unreachable_broker_is_said_once_per_outage_with_its_url(tmp_path) -> None:
    news, path = _log(tmp_path)
    # Given a worker retrying its broker three times
    _append(path, ORDINARY + CANNOT * 3)
    # Then the terminal hears once where and why, in the pool's spelling of the URL
    assert news.read() == [
        "routing: cannot reach the broker at redis://:[REDACTED]@127.0.0.1:6999/0: Error 111 "
        "connecting to 127.0.0.1:6999. Connection refused; retrying"
    ]
    # And when it connects, that it is back; a later outage is said again
    _append(path, CONNECTED + ORDINARY)
    assert news.read() == ["routing: connected again to redis://:[REDACTED]@127.0.0.1:6998/0"]
    _append(path, LOST + CANNOT)
    assert news.read() == ["routing: lost the broker's connection; reconnecting"]


def test_the_first_connection_and_ordinary_lines_stay_in_the_log(tmp_path) -> None:
    news, path = _log(tmp_path)
    _append(path, CONNECTED + ORDINARY * 5)
    assert news.read() == []


def test_a_line_being_written_is_read_whole_on_the_next_look(tmp_path) -> None:
    news, path = _log(tmp_path)
    _append(path, CANNOT[:40])
    assert news.read() == []
    _append(path, CANNOT[40:])
    assert len(news.read()) == 1


def test_a_refused_start_is_relayed_and_is_why_the_worker_stopped(tmp_path) -> None:
    news, path = _log(tmp_path)
    _append(path, "aipool: settings refused: AIPOOL_TIMEOUT_GEMINI=-1: must be positive\n")
    assert news.read() == [
        "routing: aipool: settings refused: AIPOOL_TIMEOUT_GEMINI=-1: must be positive"
    ]
    assert (
        news.why_stopped() == "aipool: settings refused: AIPOOL_TIMEOUT_GEMINI=-1: must be positive"
    )


def test_a_worker_that_logged_nothing_wrong_points_at_its_log(tmp_path) -> None:
    news, path = _log(tmp_path)
    _append(path, ORDINARY)
    assert news.why_stopped() == f"no error logged; see {path}"


def test_a_log_kept_from_an_earlier_run_is_not_relayed_again(tmp_path) -> None:
    news, path = _log(tmp_path)
    _append(path, CANNOT)
    news.skip_existing()
    assert news.read() == []


def test_a_sentinel_broker_is_said_in_the_pools_spelling(tmp_path) -> None:
    # Given a worker on sentinels whose master is gone (lines as a failover test's worker wrote)
    news, path = _log(tmp_path)
    _append(
        path,
        "[2026-12-06 04:42:51,091: ERROR/MainProcess] consumer: Cannot connect to "
        "workers.edge.transport:SentinelTransport://:[REDACTED]@127.0.0.1:54617/0: Error 111 "
        "connecting to 127.0.0.1:40869. Connection refused..\nWill retry using next failover.\n"
        "[2026-12-06 04:42:53,151: ERROR/MainProcess] consumer: Cannot connect to "
        "sentinel://:[REDACTED]@127.0.0.1:54617/0: No master found for 'aipool'.\n"
        "[2026-12-06 04:42:54,198: INFO/MainProcess] Connected to "
        "sentinel://:[REDACTED]@127.0.0.1:54617/0\n",
    )
    # Then the terminal hears the sentinel it tried, as REDIS_URL spells it, and when it is back
    assert news.read() == [
        "routing: cannot reach the broker at sentinel://:[REDACTED]@127.0.0.1:54617/0: Error 111 "
        "connecting to 127.0.0.1:40869. Connection refused; retrying",
        "routing: connected again to sentinel://:[REDACTED]@127.0.0.1:54617/0",
    ]


def test_a_broker_url_without_a_password_is_said_without_a_mask(tmp_path) -> None:
    # Given the broker's URL carries no password (kombu still logs ":**@", scrubbed to
    # "[REDACTED]", which read as if one were set)
    news, path = _log(tmp_path)
    news.password = False
    _append(path, ORDINARY + CANNOT)
    assert news.read() == [
        "routing: cannot reach the broker at redis://127.0.0.1:6999/0: Error 111 "
        "connecting to 127.0.0.1:6999. Connection refused; retrying"
    ]
    _append(path, CONNECTED)
    assert news.read() == ["routing: connected again to redis://127.0.0.1:6998/0"]
