"""without_quotes: a provider's text keeps no run of the prompt it was sent."""

from __future__ import annotations

from aipool.quotes import QUOTED, without_quotes

PROMPT = "請幫我把 patient-王小明-A123456789 的紀錄刪除, and tell me why the job failed"


def test_given_an_error_quoting_the_prompt_when_cut_then_only_the_providers_words_remain() -> None:
    error = "server_error: ollama: cannot parse 'patient-王小明-A123456789 的紀錄' at offset 12"
    assert without_quotes(error, PROMPT) == (
        f"server_error: ollama: cannot parse '{QUOTED}' at offset 12"
    )


def test_given_an_id_alone_when_cut_then_it_is_gone() -> None:
    assert without_quotes("bad value A123456789", PROMPT) == f"bad value {QUOTED}"


def test_given_an_error_sharing_only_short_words_with_the_prompt_then_it_is_unchanged() -> None:
    error = "server_error: gemini HTTP 500: the job failed"  # "the job failed" is 14 characters...
    prompt = "why did my job fail"  # ...and shares no 10 of them with this prompt
    assert without_quotes(error, prompt) == error


def test_given_short_texts_then_they_are_unchanged() -> None:
    assert without_quotes("timeout", PROMPT) == "timeout"
    assert without_quotes("server_error: HTTP 500", "hi") == "server_error: HTTP 500"
