"""The pool's servers ask for a login unless anonymity is asked for, and say where they serve."""

from __future__ import annotations

import pytest

from aipool.errors import NoLogin
from aipool.views.serving import announcement, require_login


def test_given_no_login_when_anonymity_is_not_asked_for_then_the_server_is_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("AIPOOL_ALLOW_ANONYMOUS", raising=False)
    with pytest.raises(NoLogin) as refused:
        require_login("Flower", False, "set FLOWER_BASIC_AUTH=user:password")
    # the refusal says both ways out
    assert "set FLOWER_BASIC_AUTH=user:password" in str(refused.value)
    assert "AIPOOL_ALLOW_ANONYMOUS=1" in str(refused.value)
    assert "\n" not in str(refused.value)


@pytest.mark.parametrize("value", ["0", "false", ""])
def test_given_anonymity_not_said_explicitly_when_checked_then_still_refused(
    value: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AIPOOL_ALLOW_ANONYMOUS", value)
    with pytest.raises(NoLogin):
        require_login("the usage report", False, "set AIPOOL_HEALTH_TOKEN")


def test_given_anonymity_asked_for_when_checked_then_served_without_a_login_and_said_so(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("AIPOOL_ALLOW_ANONYMOUS", "1")
    assert require_login("Flower", False, "-") is False
    assert "WITHOUT a login" in announcement("Flower", "http://127.0.0.1:5555/", False)


def test_given_a_login_when_checked_then_it_is_required_whatever_anonymity_says(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("AIPOOL_ALLOW_ANONYMOUS", "1")
    assert require_login("Flower", True, "-") is True
    line = announcement("Flower", "http://127.0.0.1:5555/", True)
    assert line == "aipool: Flower serving on http://127.0.0.1:5555/ (login required)"
