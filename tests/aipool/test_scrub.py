"""scrub: no credential survives into an error, a log line, an alert or the ledger."""

from __future__ import annotations

import io
import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

from aipool.notify import Notification, dispatch
from aipool.scrub import (
    MAX_ERROR_LENGTH,
    REDACTED,
    ScrubFilter,
    forget_configured_secrets,
    install_log_scrubbing,
    scrub,
)

SECRETS = [
    ("401: invalid x-api-key sk-ant-api03-AbCdEfGhIjKlMnOpQrStUv", "sk-ant-api03"),
    ("openai said: Incorrect API key provided: sk-proj-abcdefghijklmnop1234", "sk-proj"),
    ("GET https://g/v1beta/models?key=AIzaSyA1234567890abcdefghijklmnopqr", "AIzaSy"),
    ("bad key AIzaSyA1234567890abcdefghijklmnopqr here", "AIzaSy"),
    ("nvidia: nvapi-QWERTYUIOPasdfghjkl_12345 rejected", "nvapi-QWERTY"),
    ("headers={'Authorization': 'Bearer abcdefghijklmnopqrstuvwxyz'}", "abcdefghijklmnop"),
    ("x-api-key: plainsecretvalue", "plainsecretvalue"),
    ('{"api_key": "hunter2hunter2"}', "hunter2"),
    ("signature 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08", "9f86d08"),
    ("blob dGhpcyBpcyBhIHZlcnkgbG9uZyBzZWNyZXQgdmFsdWUgaW5kZWVk== end", "dGhpcyBp"),
    ("cannot reach postgresql://aipool:s3cr3t-pw@db:5432/aipool", "s3cr3t-pw"),
]
#: Looks like nothing a pattern knows: only the configured value can catch it.
PLANTED = "correct-horse-battery-staple-7f3a"


@pytest.fixture
def planted_key(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Given GEMINI_API_KEY is configured with a value of no known key shape."""
    monkeypatch.setenv("GEMINI_API_KEY", PLANTED)
    forget_configured_secrets()
    yield PLANTED
    forget_configured_secrets()


@pytest.mark.parametrize(("message", "secret"), SECRETS)
def test_given_a_message_with_a_secret_when_scrubbed_then_the_secret_is_gone(
    message: str, secret: str
) -> None:
    assert secret not in (scrub(message) or "")


def test_given_a_header_when_scrubbed_then_its_name_still_says_what_was_wrong() -> None:
    assert scrub("x-api-key: plainsecretvalue") == f"x-api-key: {REDACTED}"


def test_given_a_plain_error_when_scrubbed_then_it_is_unchanged() -> None:
    message = "ConnectError: [Errno 111] Connection refused (after 2003 ms)"
    assert scrub(message) == message


def test_given_a_traceback_path_when_scrubbed_then_it_stays_readable() -> None:
    line = 'File "/usr/lib/python3.11/site-packages/google/genai/_api_client_internals.py"'
    assert scrub(line, None) == line


def test_given_a_huge_message_when_scrubbed_then_it_is_capped() -> None:
    cleaned = scrub("error! " * 1000)
    assert cleaned is not None
    assert len(cleaned) == MAX_ERROR_LENGTH


def test_given_no_limit_when_scrubbed_then_nothing_is_cut() -> None:
    assert scrub("error! " * 1000, None) == "error! " * 1000


def test_given_none_when_scrubbed_then_none() -> None:
    assert scrub(None) is None


def test_given_a_configured_key_of_no_known_shape_when_echoed_then_it_is_gone(
    planted_key: str,
) -> None:
    cleaned = scrub(f"gemini HTTP 500: invalid credential {planted_key} for project")
    assert cleaned == f"gemini HTTP 500: invalid credential {REDACTED} for project"


def test_given_a_configured_key_when_echoed_url_encoded_then_it_is_gone(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "odd key/with+chars")
    forget_configured_secrets()
    try:
        assert "odd" not in (scrub("GET /models?k=odd%20key%2Fwith%2Bchars failed") or "")
    finally:
        forget_configured_secrets()


def test_given_a_key_from_a_file_variable_when_echoed_then_it_is_gone(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    key_file = tmp_path / "nvidia"
    key_file.write_text("filed-secret-value-1\n")
    monkeypatch.delenv("NVIDIA_API_KEY", raising=False)
    monkeypatch.setenv("NVIDIA_API_KEY_FILE", str(key_file))
    forget_configured_secrets()
    try:
        assert scrub("echo filed-secret-value-1") == f"echo {REDACTED}"
    finally:
        forget_configured_secrets()


def test_given_a_key_mounted_in_the_secrets_dir_when_echoed_then_it_is_gone(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    (tmp_path / "anthropic_api_key").write_text("mounted-secret-value-2")
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_API_KEY_FILE", raising=False)
    monkeypatch.setenv("AIPOOL_SECRETS_DIR", str(tmp_path))
    forget_configured_secrets()
    try:
        assert scrub("echo mounted-secret-value-2") == f"echo {REDACTED}"
    finally:
        forget_configured_secrets()


def test_given_a_short_placeholder_key_when_scrubbing_then_ordinary_words_survive(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("GEMINI_API_KEY", "dummy")
    forget_configured_secrets()
    try:
        assert scrub("a dummy answer") == "a dummy answer"
    finally:
        forget_configured_secrets()


def _logger_with_filter() -> tuple[logging.Logger, io.StringIO]:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logging.Formatter("%(name)s %(message)s"))
    parent = logging.getLogger("scrubtest")
    parent.handlers = [handler]
    parent.propagate = False
    parent.setLevel(logging.INFO)
    assert install_log_scrubbing(parent) == 1
    return logging.getLogger("scrubtest.hop"), stream


def test_given_the_filter_when_a_child_logger_logs_a_key_as_an_argument_then_the_line_is_clean(
    planted_key: str,
) -> None:
    log, stream = _logger_with_filter()
    log.info("hop request_id=%s error=%s", "r-1", f"server_error: invalid credential {planted_key}")
    assert (
        stream.getvalue()
        == f"scrubtest.hop hop request_id=r-1 error=server_error: invalid credential {REDACTED}\n"
    )


def test_given_the_filter_when_an_exception_carrying_a_key_is_logged_then_its_traceback_is_clean(
    planted_key: str,
) -> None:
    log, stream = _logger_with_filter()
    try:
        raise RuntimeError(f"provider said {planted_key}")
    except RuntimeError:
        log.exception("observer failed")
    assert planted_key not in stream.getvalue()
    assert f"RuntimeError: provider said {REDACTED}" in stream.getvalue()


def test_given_the_filter_installed_twice_then_each_handler_has_one() -> None:
    _logger_with_filter()
    parent = logging.getLogger("scrubtest")
    assert install_log_scrubbing(parent) == 0
    [handler] = parent.handlers
    assert sum(isinstance(f, ScrubFilter) for f in handler.filters) == 1


class _Recorder:
    name = "recorder"

    def __init__(self) -> None:
        self.sent: list[Notification] = []

    def send(self, notification: Notification) -> None:
        self.sent.append(notification)


def test_given_an_alert_quoting_a_key_when_dispatched_then_no_channel_receives_it(
    planted_key: str,
) -> None:
    # Given an alert whose text quotes a provider's error that echoed the key
    alert = Notification(
        summary="gemini breaker opened",
        description=f"last error: gemini HTTP 401: invalid credential {planted_key}",
        body=f"report\nkey={planted_key}",
        labels={"provider": "gemini", "error": planted_key},
    )
    channel = _Recorder()
    # When it is dispatched
    assert dispatch(alert, [channel]) == {"recorder": "ok"}
    # Then the channel got the alert without the key anywhere in it
    [sent] = channel.sent
    assert planted_key not in repr(sent)
    assert sent.description == f"last error: gemini HTTP 401: invalid credential {REDACTED}"
    assert sent.summary == alert.summary and sent.labels["provider"] == "gemini"
