"""Redis a network away: the round trips the pool adds, counted by time and by commands."""

from __future__ import annotations

import pytest

from bench.network import far_figures


def test_round_trips_added_are_the_time_added_over_the_delay_and_the_commands_counted() -> None:
    # Given submit() 0.8 ms slower at p50 than plain Celery's hop with 0.5 ms per command, and
    # 14 commands sent per request against plain Celery's 11
    plain = [10.0, 10.0, 10.0]
    pool = [10.8, 10.8, 10.8]
    by_time, by_commands = far_figures("submit()", pool, plain, 14.0, 11.0, 0.5, 0.6)
    # Then the time counts 1.6 round trips (target: at most 2), 1.33 by a 0.6 ms PING
    assert by_time.value == pytest.approx(0.8)
    assert by_time.details["round_trips_added"] == pytest.approx(1.6)
    assert by_time.details["round_trips_added_by_ping"] == pytest.approx(0.8 / 0.6)
    assert by_time.met is True
    # And the commands count 3 more, above the target of 2
    assert (by_commands.value, by_commands.met) == (3.0, False)
    # And a side that adds 1.1 ms misses the time target; commands without a target are context
    late, context = far_figures("by name", [11.1], [10.0], 12.0, 11.0, 0.5, 0.6, False)
    assert late.met is False and context.met is None and context.target == ""
