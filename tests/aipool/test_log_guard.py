"""log_guard: every record is scrubbed as it is made, before any handler of any logger sees it."""

from __future__ import annotations

import io
import logging
from collections.abc import Iterator

import pytest

from aipool import log_guard
from aipool.scrub import REDACTED, forget_configured_secrets

PLANTED = "correct-horse-battery-staple-7f3a"


@pytest.fixture
def planted_key(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Given GEMINI_API_KEY is configured with a value of no known key shape, and the guard on."""
    monkeypatch.setenv("GEMINI_API_KEY", PLANTED)
    forget_configured_secrets()
    before = logging.getLogRecordFactory()
    log_guard.install()
    yield PLANTED
    logging.setLogRecordFactory(before)
    forget_configured_secrets()


def _own_logger(name: str) -> tuple[logging.Logger, io.StringIO]:
    """A logger that does not propagate, with a handler of its own (a library's, added late)."""
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logging.Formatter("%(name)s %(message)s"))
    logger = logging.getLogger(name)
    logger.handlers = [handler]
    logger.propagate = False
    logger.setLevel(logging.DEBUG)
    return logger, stream


def test_given_a_handler_added_after_the_guard_on_a_logger_of_its_own_then_it_sees_no_key(
    planted_key: str,
) -> None:
    # Given the guard installed, then a handler on a library's logger that does not propagate
    log, stream = _own_logger("someonelses.client")
    # When that logger logs the key as an argument, at DEBUG
    log.debug("retrying with key=%s", f"Bearer {planted_key}")
    # Then the handler writes the line without it
    assert planted_key not in stream.getvalue()
    assert REDACTED in stream.getvalue()


def test_given_the_guard_when_a_filter_reads_the_record_then_it_is_already_scrubbed(
    planted_key: str,
) -> None:
    # Given a filter of a logger's own, which runs before any handler
    seen: list[str] = []

    class Spy(logging.Filter):
        def filter(self, record: logging.LogRecord) -> bool:
            seen.append(record.getMessage())
            return True

    log, _ = _own_logger("someonelses.spied")
    log.addFilter(Spy())
    # When the key is logged
    log.warning("echo %s", planted_key)
    # Then the filter saw it scrubbed
    assert seen == [f"echo {REDACTED}"]


def test_given_the_guard_when_an_exception_carrying_a_key_is_logged_then_its_traceback_is_clean(
    planted_key: str,
) -> None:
    log, stream = _own_logger("scrubtest.hop")
    try:
        raise RuntimeError(f"provider said {planted_key}")
    except RuntimeError:
        log.exception("observer failed")
    assert planted_key not in stream.getvalue()
    assert f"RuntimeError: provider said {REDACTED}" in stream.getvalue()


def test_given_a_broken_format_string_when_logged_then_the_record_is_kept(
    planted_key: str,
) -> None:
    log, stream = _own_logger("scrubtest.broken")
    log.error("%d apples and %s", "not a number", planted_key)
    assert "apples" in stream.getvalue() and planted_key not in stream.getvalue()


def test_given_the_guard_installed_twice_then_records_are_scrubbed_once(planted_key: str) -> None:
    factory = logging.getLogRecordFactory()
    log_guard.install()
    assert logging.getLogRecordFactory() is factory
    assert log_guard.installed()


def test_given_celerys_pool_apply_line_at_debug_then_the_message_body_is_withheld(
    planted_key: str,
) -> None:
    # Given the line Celery's pool logs at DEBUG for every task it runs, whose arguments are the
    # raw message (a producer with short headers leaves the body within its 1 KB)
    log, stream = _own_logger("celery.pool.test")
    body = b'[[], {"request": {"prompt": "patient-A123456789 zqvcanary"}}, {}]'
    # When it is logged
    log.debug(
        "TaskPool: Apply %s (args:%s kwargs:%s)",
        "<function fast_trace_task>",
        repr(("ai.generate", "id-1", {"task": "ai.generate"}, body)),
        "{}",
    )
    # Then the line stays, without the message
    line = stream.getvalue()
    assert line == (
        "celery.pool.test TaskPool: Apply <function fast_trace_task> (args:<withheld> "
        "kwargs:<withheld>)\n"
    )
    assert "zqvcanary" not in line


def test_given_an_sdk_logging_the_request_it_sends_at_debug_then_the_request_is_withheld(
    planted_key: str,
) -> None:
    # Given the line the anthropic SDK logs at DEBUG before each call
    log, stream = _own_logger("anthropic._base_client")
    log.debug("Request options: %s", {"json_data": {"messages": [{"content": "zqvcanary"}]}})
    # Then the line stays, without the request
    assert stream.getvalue() == "anthropic._base_client Request options: <withheld>\n"
