"""A producer a network away: ``submit()`` against plain Celery's one hop, timed in a process
whose every Redis connection goes through the delay proxy (:mod:`bench.delay_proxy`).

The pool's producer keeps its Redis clients for the life of its process (``workers.runtime``
builds them once), so a producer a network away is a process of its own, started with the
proxy's URL in ``REDIS_URL``, ``CELERY_BROKER_URL`` and ``CELERY_RESULT_BACKEND``. It prints one
JSON line: the round trips of each kind, in ms, measured in blocks (:func:`bench.plain.in_blocks`).

Run by :func:`bench.network.network` beside the workers it measures:
``python -m bench.far_producer --n N --block B [--events]``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

from bench.latency import TIMEOUT_S


def measure(n: int, block: int, events: bool) -> dict[str, list[float]]:
    """``n`` round trips of ``submit()`` and of plain Celery's one hop, taking turns."""
    from bench.bare_app import app
    from bench.latency import SIMPLE
    from bench.plain import in_blocks, plain_request
    from bench.plain_app import app as plain
    from bench.plain_app import configure
    from tasks.client import submit

    configure(plain, events)
    app.conf.task_send_sent_event = events
    return in_blocks(
        {
            "submit": lambda: submit(SIMPLE, app=app).get(timeout=TIMEOUT_S),
            "plain_1hop": lambda: plain_request(1),
        },
        n,
        block,
    )


def run(env: dict[str, str], n: int, block: int, events: bool) -> dict[str, list[float]]:
    """:func:`measure` in a process of its own with environment ``env``; its samples."""
    done = subprocess.run(
        [sys.executable, "-m", "bench.far_producer", "--n", str(n), "--block", str(block)]
        + (["--events"] if events else []),
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=60 + 2 * n * TIMEOUT_S,
    )
    samples: dict[str, list[float]] = json.loads(done.stdout.strip().splitlines()[-1])
    return samples


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, required=True)
    parser.add_argument("--block", type=int, required=True)
    parser.add_argument("--events", action="store_true")
    args = parser.parse_args(argv)
    print(json.dumps(measure(args.n, args.block, args.events)), flush=True)


if __name__ == "__main__":
    main()
