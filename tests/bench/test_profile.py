"""Counting Redis commands per request: what a client sent, not what its scripts ran."""

from __future__ import annotations

from bench.profile import commands_sent


def test_commands_sent_leave_out_what_scripts_ran_and_what_a_transaction_holds() -> None:
    counted = {"EVALSHA attempt begin": 1.0, "lua: HSET": 5.0, "EXEC": 1.0, "in MULTI: SET": 2.0}
    assert commands_sent(counted) == 2.0
