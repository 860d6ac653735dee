"""Which library loggers a worker quiets at its log level (workers/signals.py)."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest

from workers.signals import PER_CALL_LOGGERS, _quiet_per_call_logs


@pytest.fixture
def per_call_levels() -> Iterator[None]:
    before = {name: logging.getLogger(name).level for name in PER_CALL_LOGGERS}
    yield
    for name, level in before.items():
        logging.getLogger(name).setLevel(level)


@pytest.mark.parametrize(
    ("loglevel", "expected"),
    [("INFO", logging.WARNING), (logging.INFO, logging.WARNING), ("ERROR", logging.ERROR)],
)
def test_given_a_worker_above_debug_then_per_call_lines_are_not_logged(
    per_call_levels: None, loglevel: str | int, expected: int
) -> None:
    _quiet_per_call_logs(loglevel=loglevel)
    for name in PER_CALL_LOGGERS:
        logger = logging.getLogger(name)
        assert logger.getEffectiveLevel() == expected
        assert not logger.isEnabledFor(logging.INFO)
        assert logger.isEnabledFor(logging.ERROR)


def test_given_a_worker_at_debug_then_every_library_line_still_shows(
    per_call_levels: None,
) -> None:
    for name in PER_CALL_LOGGERS:
        logging.getLogger(name).setLevel(logging.NOTSET)
    _quiet_per_call_logs(loglevel=logging.DEBUG)
    for name in PER_CALL_LOGGERS:
        assert logging.getLogger(name).level == logging.NOTSET
