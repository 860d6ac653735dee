"""Provider timeouts must fit under the hop's soft time limit (issue #42, Deliver 4)."""

from __future__ import annotations

import pytest

from aipool.errors import SettingsError
from aipool.settings import read_settings
from aipool.settings.startup import check_at_start
from aipool.settings.time_limits import MARGIN_S, time_limit_problems


def test_the_defaults_fit() -> None:
    # 30 s (nemotron 60 s) under a soft limit of 90 s
    assert time_limit_problems(read_settings({}).checked()) == []


def test_a_timeout_that_leaves_no_margin_under_the_soft_limit_is_refused_in_one_line() -> None:
    current = read_settings(
        {"AIPOOL_TASK_SOFT_TIME_LIMIT": "20", "AIPOOL_TASK_TIME_LIMIT": "30"}
    ).checked()
    problems = time_limit_problems(current)
    # Every provider at its default 30 s (nemotron 60 s) is named, once, with both values
    assert len(problems) == len(current.providers)
    gemini = next(p for p in problems if p.startswith("AIPOOL_TIMEOUT_GEMINI="))
    assert gemini.startswith("AIPOOL_TIMEOUT_GEMINI=30: does not fit under ")
    assert "AIPOOL_TASK_SOFT_TIME_LIMIT=20" in gemini
    assert f"at most {20 - MARGIN_S:g} s" in gemini
    assert "\n" not in gemini


def test_a_timeout_within_the_margin_is_accepted_and_one_beyond_it_refused() -> None:
    fits = {f"AIPOOL_TIMEOUT_{p}": "18" for p in ("OLLAMA", "GEMINI", "CLAUDE", "NEMOTRON")}
    base = {"AIPOOL_TASK_SOFT_TIME_LIMIT": "20", "AIPOOL_TASK_TIME_LIMIT": "30", **fits}
    assert time_limit_problems(read_settings(base).checked()) == []
    over = read_settings({**base, "AIPOOL_TIMEOUT_CLAUDE": "18.5"}).checked()
    assert [p.split(":")[0] for p in time_limit_problems(over)] == ["AIPOOL_TIMEOUT_CLAUDE=18.5"]


def test_without_a_soft_limit_nothing_is_checked() -> None:
    current = read_settings(
        {"AIPOOL_TASK_SOFT_TIME_LIMIT": "unlimited", "AIPOOL_TASK_TIME_LIMIT": "3"}
    ).checked()
    assert time_limit_problems(current) == []


def test_a_worker_start_refuses_them(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AIPOOL_TIMEOUT_OLLAMA", "30")
    monkeypatch.setenv("AIPOOL_TASK_SOFT_TIME_LIMIT", "10")
    monkeypatch.setenv("AIPOOL_TASK_TIME_LIMIT", "15")
    with pytest.raises(SettingsError, match="AIPOOL_TIMEOUT_OLLAMA=30: does not fit under"):
        check_at_start()
