"""A rider is offered to the publishes inside its block only, and to none once it is sent."""

from __future__ import annotations

from aipool.redis.riding import Rider, current, riding


def _rider() -> Rider:
    return Rider(("127.0.0.1", 6379, 0, None), lambda pipe: pipe.ping())


def test_a_rider_is_offered_inside_its_block_until_it_is_sent() -> None:
    # Given no rider outside any block
    assert current() is None
    with riding(_rider()) as rider:
        # When a publish looks inside the block, it finds the rider
        assert current() is rider
        # Then once a publish sent it, the next one in the same block does not send it again
        rider.answered(True)
        assert current() is None
        assert (rider.sent, rider.reply) == (True, True)
    # And after the block nothing rides
    assert current() is None


def test_a_rider_in_an_inner_block_gives_way_to_the_outer_one_after() -> None:
    # Given a block inside another (a publish inside a publish's preparation)
    with riding(_rider()) as outer:
        with riding(_rider()) as inner:
            assert current() is inner
        # Then leaving the inner block offers the outer rider again
        assert current() is outer
