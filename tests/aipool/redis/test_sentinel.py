"""A Redis behind Sentinel: its URL read as kombu and Celery read it, refused when they would
misread it, shown without passwords, and clients that follow the master across a failover with
their Lua scripts loaded again on the new master."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from aipool.errors import PoolUnavailable
from aipool.quota import quotas_for
from aipool.quota.storage import RESERVE
from aipool.redis.sentinel import Sentinels, parse, pool_place, shown
from aipool.redis.url import close, connect, ping
from aipool.settings import read_settings
from aipool.views.pool_location import describe_redis
from tests.support.services import SentinelSet, free_port
from tests.support.waiting import eventually

THREE = "sentinel://:s3cret@10.0.0.1:26379/2;sentinel://10.0.0.2:26380/2;sentinel://10.0.0.3"


def test_a_sentinel_url_names_every_sentinel_and_takes_database_and_password_from_the_first() -> (
    None
):
    # Given three sentinel addresses, the first with the database and the master's password
    # When read
    where = parse(THREE)
    # Then every sentinel is named (Sentinel's own port where none is given), the database and
    # password are the first address's, as kombu and Celery read them
    assert where == Sentinels(
        (("10.0.0.1", 26379), ("10.0.0.2", 26380), ("10.0.0.3", 26379)), db=2, password="s3cret"
    )


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        ("sentinel://a:26379/0;sentinel://b:26379/1", "another database or password"),
        ("sentinel://:x@a:26379/0;sentinel://:y@b:26379/0", "another database or password"),
        ("sentinel://a:26379/0;redis://b:6379/0", "'redis://b:6379/0' is not a sentinel address"),
        ("sentinel://a:26379/cache", "names database 'cache', not a number"),
        ("sentinel://:s3cret@a:2637x/0", "'sentinel://:**@a:2637x/0' is not a sentinel address"),
        ("sentinel://;", "'sentinel://' is not a sentinel address"),
    ],
)
def test_a_sentinel_url_kombu_or_celery_would_misread_is_refused_in_one_line(
    url: str, problem: str
) -> None:
    # Given REDIS_URL written so that kombu and Celery would read another database or password
    # than redis-py, or not at all
    problems = read_settings({"REDIS_URL": url, "AIPOOL_REDIS_SENTINEL_MASTER": "aipool"}).problems
    # Then the settings are refused, naming the variable and what is wrong, in one line
    assert len(problems) == 1 and problems[0].startswith("REDIS_URL="), problems
    assert problem in problems[0] and "\n" not in problems[0]
    assert "s3cret" not in problems[0]


def test_sentinels_without_the_masters_name_are_refused_naming_the_setting() -> None:
    # Given REDIS_URL naming sentinels and no master name
    problems = read_settings({"REDIS_URL": THREE}).problems
    # Then the setting that is missing is named, with what to write in it
    assert problems == [
        "AIPOOL_REDIS_SENTINEL_MASTER: must be set when REDIS_URL names Redis Sentinels "
        "(sentinel://): the name they monitor the master by (their `sentinel monitor <name> ...`)"
    ]
    # And with it, the settings are taken
    reading = read_settings({"REDIS_URL": THREE, "AIPOOL_REDIS_SENTINEL_MASTER": "aipool"})
    assert reading.problems == []
    assert reading.checked().redis_url == THREE


def test_a_sentinel_url_is_shown_with_no_password_of_any_address() -> None:
    # Given a password on two of the addresses (kombu's sanitizer hides only the first)
    url = "sentinel://:one@a:26379/0;sentinel://user:two@b:26379/0"
    # When the URL is shown, as every command and the worker's first line show it
    said = describe_redis(url)
    # Then neither password appears
    assert said == "sentinel://:**@a:26379/0;sentinel://user:**@b:26379/0"
    assert shown(THREE) == THREE.replace("s3cret", "**")


def test_two_clients_on_the_master_of_one_set_of_sentinels_are_on_the_same_redis(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The result backend carries the hop's usage records in the result's write only when it is
    # the Redis the ledger's spool is in: with Sentinel, the same master of the same sentinels.
    monkeypatch.setenv("AIPOOL_REDIS_SENTINEL_MASTER", "aipool")
    url = "sentinel://10.0.0.1:26379/2;sentinel://10.0.0.2:26380/2"
    same = [connect(url), connect(";".join(reversed(url.split(";"))))]
    other_db = connect(url.replace("/2", "/3"))
    monkeypatch.setenv("AIPOOL_REDIS_SENTINEL_MASTER", "other")
    other_master = connect(url)
    places = [pool_place(c.connection_pool) for c in (*same, other_db, other_master)]
    assert places[0] == places[1]
    assert places[0] not in places[2:]


def test_given_no_sentinel_answers_when_a_command_checks_redis_then_it_says_so_in_one_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Given sentinels that are not there
    monkeypatch.setenv("AIPOOL_REDIS_SENTINEL_MASTER", "aipool")
    url = f"sentinel://127.0.0.1:{free_port()}/0;sentinel://127.0.0.1:{free_port()}/0"
    # When a command checks its Redis
    with pytest.raises(PoolUnavailable) as raised:
        ping(url)
    # Then one line says which Redis and that no master was found
    said = str(raised.value)
    assert said.startswith(f"cannot reach Redis at {url}: No master found for 'aipool'")
    assert "\n" not in said


@pytest.mark.integration
def test_given_a_failover_when_the_pool_writes_again_then_it_reaches_the_new_master_and_loads_its_scripts_there(
    sentinel_set: Callable[..., SentinelSet], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given the pool's client on a master with a replica and three sentinels, and a quota
    # reservation made through its Lua script
    redis = sentinel_set()
    monkeypatch.setenv("AIPOOL_REDIS_SENTINEL_MASTER", redis.master)
    client = connect(redis.url)
    try:
        quota = quotas_for(client)["claude"]
        quota.reserve("before", 0, 100)
        sha = client.register_script(RESERVE).sha
        old = redis.master_port()
        assert redis.server(old).client().script_exists(sha) == [True]
        # When the master dies and the sentinels promote the replica
        redis.kill_master()
        eventually(lambda: redis.promoted(old), 30, "the replica promoted")
        new = redis.server(redis.master_port())
        # Then the new master holds the reservation (replicated) but not the script (Redis 7
        # replicates a script's effects, never the script)
        assert new.client().script_exists(sha) == [False]
        # And the same client, never rebuilt, reserves again: it finds the new master through
        # the sentinels, and redis-py loads the script there when NOSCRIPT says it is missing
        quota.reserve("after", 0, 100)
        assert quota.usage()["daily_requests"]["used"] == 2
        assert new.client().script_exists(sha) == [True]
        assert client.connection_pool.get_master_address() == ("127.0.0.1", new.port)
        ping(redis.url)
    finally:
        close(client)
