"""RabbitMQ as the pool's broker in tests: virtual hosts of the test's own, producers on them.

Every run works in virtual hosts of its own, so runs that share the machine's RabbitMQ never share
a queue. A virtual host is made the way ``docs/operations.md`` tells an operator to make one: with
quorum as its default queue type, so a producer that declares ``router`` with Celery's defaults
(no queue type) is accepted by the quorum queue the workers declared.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from urllib.parse import urlsplit, urlunsplit

from celery import Celery

import celeryconfig

#: The broker of the session's RabbitMQ workers; its virtual host follows the test Redis database,
#: so two runs on different Redis databases never share queues either.
AMQP_SERVER = os.environ.get("AIPOOL_TEST_AMQP_SERVER", "amqp://guest:guest@127.0.0.1:5672")


def vhost_name(redis_url: str, suffix: str = "") -> str:
    """``aipool_test_<redis port>_<redis db><suffix>``: the virtual host of the run using
    ``redis_url`` (runs on other Redis servers or databases get other virtual hosts)."""
    parts = urlsplit(redis_url)
    database = parts.path.lstrip("/") or "0"
    return f"aipool_test_{parts.port or 6379}_{database}{suffix}"


def vhost_url(name: str) -> str:
    """The broker URL of virtual host ``name`` on the test RabbitMQ."""
    parts = urlsplit(AMQP_SERVER)
    return urlunsplit((parts.scheme, parts.netloc, f"/{name}", "", ""))


def _rabbitmqctl(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    program = shutil.which("rabbitmqctl") or "/usr/sbin/rabbitmqctl"
    result = subprocess.run(
        [program, "--quiet", *args], capture_output=True, text=True, timeout=60, check=False
    )
    if check and result.returncode != 0:
        raise RuntimeError(f"rabbitmqctl {' '.join(args)}: {result.stdout}{result.stderr}")
    return result


def fresh_vhost(name: str) -> str:
    """Create virtual host ``name`` anew (whatever a previous run left is dropped), with quorum
    as its default queue type and every permission for the test user; returns its URL."""
    _rabbitmqctl("delete_vhost", name, check=False)
    _rabbitmqctl("add_vhost", name, "--default-queue-type", "quorum")
    user = urlsplit(AMQP_SERVER).username or "guest"
    _rabbitmqctl("set_permissions", "-p", name, user, ".*", ".*", ".*")
    return vhost_url(name)


def drop_vhost(name: str) -> None:
    """Delete virtual host ``name`` and everything in it."""
    _rabbitmqctl("delete_vhost", name, check=False)


def queue_types(name: str) -> dict[str, str]:
    """Queue name -> queue type (``quorum``, ``classic``...) in virtual host ``name``."""
    listing = _rabbitmqctl("list_queues", "-p", name, "--no-table-headers", "name", "type").stdout
    return dict(line.split("\t", 1) for line in listing.splitlines() if "\t" in line)


def amqp_producer(broker_url: str, result_backend: str) -> Celery:
    """A Celery app with the pool's settings on RabbitMQ at ``broker_url``, reading results from
    the Redis at ``result_backend`` (what a Python producer of a RabbitMQ deployment runs)."""
    app = Celery("aipool-amqp-producer", set_as_current=False)
    app.config_from_object("celeryconfig")
    app.conf.update(
        broker_url=broker_url,
        broker_transport_options=celeryconfig.transport_options(broker_url),
        result_backend=result_backend,
    )
    return app


@dataclass(frozen=True)
class BrokerUnderTest:
    """The broker an end-to-end test runs on: its name, its URL and a producer app on it (whose
    results come from the test Redis, whichever the broker)."""

    name: str
    url: str
    app: Celery
