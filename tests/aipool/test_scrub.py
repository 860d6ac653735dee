"""scrub_error: no credential survives into the ledger, and messages stay short."""

from __future__ import annotations

import pytest

from aipool.ledger.scrub import MAX_ERROR_LENGTH, scrub_error

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
]


@pytest.mark.parametrize(("message", "secret"), SECRETS)
def test_given_a_message_with_a_secret_when_scrubbed_then_the_secret_is_gone(
    message: str, secret: str
) -> None:
    assert secret not in (scrub_error(message) or "")


def test_given_a_plain_error_when_scrubbed_then_it_is_unchanged() -> None:
    message = "ConnectError: [Errno 111] Connection refused (after 2003 ms)"
    assert scrub_error(message) == message


def test_given_a_huge_message_when_scrubbed_then_it_is_capped() -> None:
    cleaned = scrub_error("error! " * 1000)
    assert cleaned is not None
    assert len(cleaned) == MAX_ERROR_LENGTH


def test_given_none_when_scrubbed_then_none() -> None:
    assert scrub_error(None) is None
