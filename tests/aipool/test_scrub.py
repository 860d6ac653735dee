"""scrub: no credential survives into an error, a log line, an alert or the ledger."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from aipool.notify import Notification, dispatch
from aipool.scrub import (
    MAX_ERROR_LENGTH,
    REDACTED,
    forget_configured_secrets,
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
    # A key of no known shape in a query string: only the query pattern knows it.
    ("GET https://h/search?q=1&key=plainsecretvalue", "plainsecretvalue"),
    ("GET https://h/search?KEY=plainsecretvalue", "plainsecretvalue"),
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


#: A Google key (``AIza`` + 35) and an NVIDIA key (``nvapi-`` + 64), as the vendors shape them.
GOOGLE_KEY = "AIzaSyA1b2C3d4E5f6G7h8I9j0KlMnOpQrStUvW"
NVIDIA_KEY = "nvapi-" + "Qw3rTy7uIoP1aSdF" * 4


@pytest.mark.parametrize(
    ("key", "at", "gap"),
    [
        (GOOGLE_KEY, 20, "\n"),
        (GOOGLE_KEY, 20, " "),
        (GOOGLE_KEY, 6, "\r\n  "),
        (GOOGLE_KEY, 30, "\\n"),  # a repr or a JSON string of a wrapped message
        (NVIDIA_KEY, 38, "\n"),
        (NVIDIA_KEY, 40, " "),
    ],
)
def test_given_a_vendor_key_split_by_a_break_when_scrubbed_then_no_piece_of_it_survives(
    key: str, at: int, gap: str
) -> None:
    # Given a provider's message holding a key split in two (wrapped, or pasted with a break)
    message = f"rejected credential {key[:at]}{gap}{key[at:]} for project 7"
    # When it is scrubbed
    cleaned = scrub(message) or ""
    # Then neither piece is left, and the words around the key are
    assert cleaned == f"rejected credential {REDACTED} for project 7"


def test_given_a_key_split_in_three_when_scrubbed_then_it_is_gone() -> None:
    message = f"k={NVIDIA_KEY[:20]}\n{NVIDIA_KEY[20:45]}\n{NVIDIA_KEY[45:]}"
    assert scrub(message) == f"k={REDACTED}"


def test_given_a_key_prefix_followed_by_prose_when_scrubbed_then_the_prose_stays() -> None:
    message = "Google keys start with AIza and are followed by 35 more characters of the key"
    assert scrub(message) == message


def test_given_a_configured_key_split_by_a_break_when_echoed_then_it_is_gone(
    planted_key: str,
) -> None:
    # Given a configured key of no known shape, echoed wrapped at a space and at a newline
    message = f"bad credential {planted_key[:9]} {planted_key[9:20]}\n{planted_key[20:]}."
    # Then it is removed whole
    assert scrub(message) == f"bad credential {REDACTED}."


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
