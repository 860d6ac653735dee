"""Context windows: a prompt that does not fit a hop's model skips it before any call."""

from __future__ import annotations

import pytest

from aipool.contract.request import Message, Request
from aipool.contract.route import Hop
from aipool.routing.table import RouteTableError, parse_table
from aipool.routing.windows import CONTEXT_TOO_LONG, fits, skip_reason, window

RULES = [{"name": "all", "provider": "ollama"}]
TABLE = parse_table(
    {
        "rules": RULES,
        "context_windows": {"ollama": 8192, "ollama:qwen2.5:7b": 32768, "gemini": 1_000_000},
    }
)


def _request(chars: int, max_tokens: int = 1024) -> Request:
    return Request(messages=(Message(role="user", content="x" * chars),), max_tokens=max_tokens)


def test_a_model_listed_by_name_beats_its_provider_default() -> None:
    assert window(Hop("ollama", "qwen2.5:7b"), TABLE) == 32768
    assert window(Hop("ollama", "llama3.2:3b"), TABLE) == 8192
    assert window(Hop("claude", "claude-x"), TABLE) is None
    assert window(Hop("static", "static"), TABLE) is None


def test_a_long_prompt_skips_the_small_model_and_fits_the_bigger_ones() -> None:
    # Given a prompt of about 10,000 tokens (40,000 ASCII characters) and 1,024 output tokens
    request = _request(40_000)
    # Then it does not fit the 8K model, fits the 32K one and a model with no known window
    assert not fits(request, Hop("ollama", "llama3.2:3b"), TABLE)
    assert fits(request, Hop("ollama", "qwen2.5:7b"), TABLE)
    assert fits(request, Hop("claude", "claude-x"), TABLE)
    # And the skip says why in numbers, without the prompt
    reason = skip_reason(request, Hop("ollama", "llama3.2:3b"), TABLE)
    assert reason is not None and reason.startswith(CONTEXT_TOO_LONG)
    assert "8192-token context window" in reason and "1024 output" in reason
    assert "xxxx" not in reason
    assert skip_reason(request, Hop("ollama", "qwen2.5:7b"), TABLE) is None


def test_the_output_allowance_counts() -> None:
    # Given a prompt that fits 8K only with a small output allowance
    assert fits(_request(28_000, max_tokens=512), Hop("ollama", "m"), TABLE)
    assert not fits(_request(28_000, max_tokens=2048), Hop("ollama", "m"), TABLE)


def test_the_shipped_table_has_a_window_for_every_provider() -> None:
    from aipool.routing.table import DEFAULT_ROUTES_FILE, load_table

    windows = load_table(DEFAULT_ROUTES_FILE).context_windows
    assert {"ollama", "nemotron", "gemini", "claude"} <= set(windows)


@pytest.mark.parametrize(
    ("windows", "says"),
    [
        ({"olama": 8192}, "must start with one of"),
        ({"ollama": 0}, "positive integer"),
        ({"ollama": True}, "positive integer"),
        ([1], "must be a table"),
    ],
)
def test_a_bad_window_is_refused(windows: object, says: str) -> None:
    with pytest.raises(RouteTableError, match=says):
        parse_table({"rules": RULES, "context_windows": windows})
