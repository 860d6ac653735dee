"""The response cache's key: what decides an answer, hashed with a secret; never the text."""

from __future__ import annotations

from aipool.cache.key import cache_key
from aipool.contract.request import parse_request
from aipool.routing.router import decide

SECRET = b"k"


def _key(request: dict, *, secret: bytes = SECRET, scope: str = "faq", version: str = "v1") -> str:
    parsed = parse_request(request)
    return cache_key(secret, parsed, decide(parsed), version, scope)


def test_the_same_question_is_the_same_key_and_one_character_more_is_another() -> None:
    # Given a question asked twice, and once with one character changed
    same = _key({"prompt": "What is a pod?"})
    # Then the first two share a key, the third does not
    assert _key({"prompt": "What is a pod?"}) == same
    assert _key({"prompt": "What is a pod!"}) != same
    assert _key({"prompt": "What is a pods?"}) != same


def test_whitespace_around_a_message_and_unicode_forms_do_not_make_another_key() -> None:
    assert _key({"prompt": "  What is a café?\n"}) == _key({"prompt": "What is a cafe\u0301?"})


def test_sampling_fields_the_secret_the_scope_and_the_table_change_the_key() -> None:
    base = _key({"prompt": "What is a pod?"})
    assert _key({"prompt": "What is a pod?", "max_tokens": 10}) != base
    assert _key({"prompt": "What is a pod?", "temperature": 0.1}) != base
    assert _key({"prompt": "What is a pod?", "system": "Be brief."}) != base
    assert _key({"prompt": "What is a pod?"}, secret=b"other") != base
    assert _key({"prompt": "What is a pod?"}, scope="billing") != base
    assert _key({"prompt": "What is a pod?"}, version="v2") != base


def test_who_asks_and_what_they_attach_as_metadata_do_not_change_the_key() -> None:
    # The answer depends on the question, not on who asks it or the producer's own data.
    base = _key({"prompt": "What is a pod?"})
    assert _key({"prompt": "What is a pod?", "user_id": "u-1", "metadata": {"a": 1}}) == base


def test_the_key_holds_no_text_of_the_prompt() -> None:
    key = _key({"prompt": "What is a pod?"})
    assert len(key) == 64 and set(key) <= set("0123456789abcdef")
