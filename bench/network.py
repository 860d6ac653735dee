"""Redis a network away: the pool against plain Celery with every Redis command held 0.5 ms by
:mod:`bench.delay_proxy`, in time added and in round trips (issue #44: ``submit()`` at most two
round trips more than plain Celery's one hop)."""

from __future__ import annotations

import statistics
from collections.abc import Callable
from typing import Any

from bench.environment import Pool
from bench.figures import Figure, Report, p50
from bench.latency import SIMPLE, TIMEOUT_S, by_name, timed
from bench.plain import both_sides, in_blocks, plain_request, side_by_side

#: Issue #44: with Redis a network away, submit() costs at most this many round trips more than
#: plain Celery's one hop.
ROUND_TRIPS_ADDED = 2


def network(
    pool: Pool, report: Report, n: int, block: int, delay_ms: float = 0.5, counted: int = 50
) -> None:
    """By name against plain Celery's two hops, and ``submit()`` against its one hop, with Redis a
    network away: every Redis command of the workers and the producers held ``delay_ms`` by
    :mod:`bench.delay_proxy`. By name is sent by a plain Celery producer (as by one that does not
    import the pool); ``submit()`` from a producer process of its own (:mod:`bench.far_producer`).

    The round trips the pool adds are counted twice: the time added at p50 divided by
    ``delay_ms`` (and by what one round trip through the proxy costs, a ``PING``), and the Redis
    commands sent per request, counted from Redis's ``MONITOR`` over ``counted`` requests of each
    kind on the same workers."""
    from urllib.parse import urlsplit, urlunsplit

    import redis
    from celery import Celery

    from bench import delay_proxy, far_producer
    from bench.environment import BENCH_REDIS_URL
    from bench.plain_app import FIRST, TASK_NAME, configure

    direct = urlsplit(BENCH_REDIS_URL)
    with delay_proxy.started(f"{direct.hostname}:{direct.port or 6379}", delay_ms) as port:
        url = urlunsplit(direct._replace(netloc=f"{direct.hostname}:{port}"))
        per_trip = _ping_ms(redis.Redis.from_url(url)) - _ping_ms(pool.redis)
        producer = Celery("network-producer", broker=url, backend=url)
        configure(producer, True)
        env = {"REDIS_URL": url, "CELERY_BROKER_URL": url, "CELERY_RESULT_BACKEND": url}

        def send(name: str, queue: str, **kwargs: Any) -> Any:
            return producer.send_task(
                name, kwargs={"request": SIMPLE, **kwargs}, queue=queue, routing_key=queue
            ).get(timeout=TIMEOUT_S)

        try:
            with side_by_side(pool, 1, True, env=env):
                samples = in_blocks(
                    {
                        "by_name": lambda: send("ai.generate", "router"),
                        "plain_2hop": lambda: send(TASK_NAME, FIRST),
                    },
                    n,
                    block,
                )
                samples.update(far_producer.run(pool.worker_env(**env), n, block, events=True))
                commands = commands_per_request(pool, counted)
        finally:
            producer.close()
    # Issue #44 holds submit()'s commands to its round-trip target; by name's are context.
    for mine, theirs, label in (
        ("by_name", "plain_2hop", "by name vs plain Celery 2 hops"),
        ("submit", "plain_1hop", "submit() vs plain Celery 1 hop"),
    ):
        for figure in far_figures(
            f"{label}, {delay_ms:g} ms added to every Redis command",
            samples[mine],
            samples[theirs],
            commands[mine],
            commands[theirs],
            delay_ms,
            per_trip,
            commands_target=mine == "submit",
        ):
            report.add(figure)


def commands_per_request(pool: Pool, n: int) -> dict[str, float]:
    """Redis commands sent per request of each kind (``MONITOR``; a ``MULTI``/``EXEC``
    transaction counts once, a plain pipeline's commands one each, commands run by scripts not
    at all), sent directly, ``n`` of each after 5 untimed."""
    from bench.profile import commands_sent, count_each
    from tasks.client import submit

    kinds: dict[str, Callable[[], Any]] = {
        "by_name": lambda: by_name(pool, SIMPLE),
        "plain_2hop": lambda: plain_request(2),
        "submit": lambda: submit(SIMPLE, app=pool.app).get(timeout=TIMEOUT_S),
        "plain_1hop": lambda: plain_request(1),
    }
    return {kind: commands_sent(counted) for kind, counted in count_each(pool, kinds, n).items()}


def far_figures(
    name: str,
    pool_ms: list[float],
    plain_ms: list[float],
    pool_commands: float,
    plain_commands: float,
    delay_ms: float,
    per_trip_ms: float,
    commands_target: bool = True,
) -> list[Figure]:
    """What the pool adds with Redis a network away: at p50, in ms and in round trips (the time
    added ÷ ``delay_ms``, the target's count); and in commands sent per request (held to the
    same count when ``commands_target``)."""
    at50 = p50(pool_ms) - p50(plain_ms)
    trips = at50 / delay_ms
    details = {
        **both_sides(pool_ms, plain_ms),
        "delay_ms": delay_ms,
        "round_trips_added": trips,
        "round_trip_through_proxy_ms": per_trip_ms,
        "round_trips_added_by_ping": at50 / per_trip_ms if per_trip_ms > 0 else None,
        "pool_commands_per_request": pool_commands,
        "plain_commands_per_request": plain_commands,
        "n": len(pool_ms),
    }
    more = pool_commands - plain_commands
    return [
        Figure(
            "network",
            f"{name}: added at p50",
            at50,
            "ms",
            f"≤ {ROUND_TRIPS_ADDED} round trips ({ROUND_TRIPS_ADDED * delay_ms:g} ms)",
            trips <= ROUND_TRIPS_ADDED,
            p50(plain_ms),
            "plain Celery p50",
            details,
        ),
        Figure(
            "network",
            f"{name}: Redis commands sent per request, more than plain Celery (MONITOR)",
            more,
            "commands",
            f"≤ {ROUND_TRIPS_ADDED}" if commands_target else "",
            more <= ROUND_TRIPS_ADDED if commands_target else None,
            plain_commands,
            "plain Celery",
            details,
        ),
    ]


def _ping_ms(client: Any, n: int = 300) -> float:
    """The median ``PING`` round trip of ``client``, in ms."""
    client.ping()
    return statistics.median(timed(client.ping) for _ in range(n))
