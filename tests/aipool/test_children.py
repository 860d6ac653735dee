"""A command's Ctrl-C is not lost where Python swallows it (aipool.children)."""

from __future__ import annotations

import os
import signal

import pytest

from aipool.children import raise_if_interrupted, signals_end_the_command


def test_a_ctrl_c_swallowed_on_its_way_is_raised_at_the_next_step() -> None:
    with signals_end_the_command():
        # Given a Ctrl-C that arrives where its KeyboardInterrupt is dropped (as Python drops one
        # raised in an import's module-lock callback: the demo went on to its end once)
        try:
            os.kill(os.getpid(), signal.SIGINT)
            signal.sigtimedwait([], 0)  # let the handler run here
        except KeyboardInterrupt:
            pass
        # When the command takes its next step, then the Ctrl-C stops it there
        with pytest.raises(KeyboardInterrupt):
            raise_if_interrupted()


def test_without_a_ctrl_c_every_step_goes_on() -> None:
    with signals_end_the_command():
        raise_if_interrupted()
    # and a later command starts afresh
    with signals_end_the_command():
        raise_if_interrupted()


def test_the_previous_handlers_come_back() -> None:
    before = signal.getsignal(signal.SIGINT)
    with signals_end_the_command():
        assert signal.getsignal(signal.SIGINT) is not before
    assert signal.getsignal(signal.SIGINT) is before
