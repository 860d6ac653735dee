"""No prompt text leaves the request except as its answer (issue #21, item 3).

The canary test: a real worker serving every queue at DEBUG, with its metrics endpoint, and Flower
watching its events, answer four requests whose prompts hold a canary word and a national-id-shaped
string: the issue's ``請幫我把 patient-王小明-A123456789 的紀錄刪除``, critical, so answered by
Claude; a conversation whose tool result the model's answer quotes, answered by Nemotron; and two
answered by Ollama and by Gemini. Then everything the pool keeps is searched: every Redis key and
value, every ledger row, every line of the worker's and Flower's logs, Flower's task API and its
task views, and ``/metrics``. The canary may be found only in the answer that quotes it: its
result, and the same answer kept for a redelivery of its message.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
import redis
from sqlalchemy import Engine, text

from aipool.attempt.lifecycle import answer_keep_s
from aipool.simulator import Simulator
from tests.support.accounting import drain_everything
from tests.support.flower import flower_process, serving
from tests.support.metrics import metrics_env, scrape
from tests.support.pool import Worker
from tests.support.producer import Producer
from tests.support.services import RedisServer, free_port
from tests.support.waiting import eventually

pytestmark = pytest.mark.integration

FLOWER_LOGIN = ("ops", "canary-test-pw")
RESULT_KEY = "celery-task-meta-{}"


def _national_id() -> str:
    """A string shaped like a Taiwanese national id (a letter, then nine digits), new per run."""
    return "A1" + "".join(random.choices("0123456789", k=8))


@contextmanager
def _flower(redis_url: str, log: Path, **env: str) -> Iterator[str]:
    """Flower on ``redis_url`` at DEBUG, with a login, on loopback; yields its base URL."""
    port = free_port()
    with flower_process(
        log,
        f"--port={port}",
        "--address=127.0.0.1",
        "--logging=debug",
        REDIS_URL=redis_url,
        FLOWER_BASIC_AUTH=":".join(FLOWER_LOGIN),
        **env,
    ) as process:
        eventually(lambda: serving(process, log, port), 40, "flower serving", interval=0.2)
        yield f"http://127.0.0.1:{port}"


def _redis_dump(client: redis.Redis) -> dict[str, str]:
    """Every key of ``client``'s database and its whole value, as text."""
    dump: dict[str, str] = {}
    for raw in client.scan_iter(count=1000):
        key = raw.decode(errors="replace")
        kind = client.type(raw).decode()
        value: Any
        if kind == "string":
            value = client.get(raw)
        elif kind == "list":
            value = client.lrange(raw, 0, -1)
        elif kind == "hash":
            value = client.hgetall(raw)
        elif kind == "set":
            value = client.smembers(raw)
        elif kind == "zset":
            value = client.zrange(raw, 0, -1, withscores=True)
        elif kind == "stream":
            value = client.xrange(raw)
        else:
            value = kind
        dump[key] = _text(value)
    return dump


def _text(value: Any) -> str:
    """``value`` as text, bytes decoded wherever they are (a repr would escape CJK as bytes)."""
    if isinstance(value, bytes):
        return value.decode(errors="replace")
    if isinstance(value, dict):
        return " ".join(f"{_text(k)}={_text(v)}" for k, v in value.items())
    if isinstance(value, list | tuple | set):
        return " ".join(_text(v) for v in value)
    return str(value)


def _ledger_dump(engine: Engine) -> list[str]:
    """Every row of every table of the ledger, as JSON text."""
    with engine.connect() as connection:
        tables = connection.execute(
            text("select tablename from pg_tables where schemaname = 'public'")
        ).scalars()
        return [
            row
            for table in list(tables)
            for row in connection.execute(text(f'select row_to_json(t)::text from "{table}" t'))
            .scalars()
            .all()
        ]


def _where(needles: tuple[str, ...], places: dict[str, str]) -> dict[str, list[str]]:
    """For each place whose text holds any needle, as written or escaped the way JSON and reprs
    escape it (``\\u738b``), the needles it holds."""
    found: dict[str, list[str]] = {}
    for place, body in places.items():
        held = [n for n in needles if any(form in body for form in _forms(n))]
        if held:
            found[place] = held
    return found


def _forms(needle: str) -> set[str]:
    return {needle, json.dumps(needle)[1:-1], needle.encode("unicode_escape").decode()}


def test_given_a_canary_in_prompts_when_the_pool_answers_at_debug_with_flower_then_only_the_answer_holds_it(
    providers: Simulator,
    redis_server: Callable[..., RedisServer],
    spawn_worker: Callable[..., Worker],
    ledger: Engine,
    tmp_path: Path,
) -> None:
    # Given a worker serving every queue at DEBUG, with its metrics endpoint, and Flower
    server = redis_server()
    metrics_port = free_port()
    worker = spawn_worker(
        server.url,
        loglevel="DEBUG",
        **metrics_env(tmp_path / "metrics", metrics_port),
    )
    flower_log = tmp_path / "flower.log"
    # (with the result backend named in its environment, which Celery reads over any setting)
    with (
        _flower(server.url, flower_log, CELERY_RESULT_BACKEND=server.url) as flower,
        Producer(server.url) as producer,
    ):
        auth = httpx.BasicAuth(*FLOWER_LOGIN)
        eventually(
            lambda: worker.name in httpx.get(f"{flower}/api/workers", auth=auth, timeout=5).text,
            30,
            "Flower seeing the worker",
            interval=0.5,
        )
        canary, national_id = f"zqvcanary{random.randrange(10**8):08d}", _national_id()
        patient = f"patient-王小明-{national_id}"
        needles = (canary, national_id, patient)
        # When a producer sends the request, a canary word in it, and a conversation whose
        # tool result (holding the canary) the model's answer quotes
        # (critical: it starts at Claude, whose SDK logs the request it sends at DEBUG)
        routed = producer.send(
            {"prompt": f"請幫我把 {patient} 的紀錄刪除 {canary}", "priority": "critical"}
        )
        quoted = producer.send(
            {
                "messages": [
                    {"role": "user", "content": f"Summarize the record of {patient} ({canary})"},
                    {
                        "role": "assistant",
                        "content": "",
                        "tool_calls": [{"name": "get_record", "arguments": {"id": national_id}}],
                    },
                    {"role": "tool", "name": "get_record", "content": f"{canary} {patient} ok"},
                ],
                "tools": [
                    {
                        "name": "get_record",
                        "description": "Read a record",
                        "parameters": {"type": "object", "properties": {"id": {"type": "string"}}},
                    }
                ],
            }
        )
        # and two that start at Ollama and at Gemini, so every provider's SDK has sent one
        local = producer.send({"prompt": f"Summarize the notes on {patient} {canary}"})
        cloud = producer.send(
            {
                "prompt": f"Compare the trade-offs of two designs for {patient} records, "
                "correlate payment-api, ledger-db and redis incidents, then recommend one and "
                f"write a post-mortem for the team {canary}"
            }
        )
        first, second = routed.get(timeout=60), quoted.get(timeout=60)
        assert [r.get(timeout=60)["provider"] for r in (local, cloud)] == ["ollama", "gemini"]
        assert (first["status"], first["provider"]) == ("ok", "claude"), first
        assert (second["status"], second["provider"]) == ("ok", "nemotron"), second
        # The answer is the one place the canary belongs: the model quoted the tool's result
        assert canary in second["content"]
        eventually(
            lambda: all(
                '"state": "SUCCESS"' in httpx.get(
                    f"{flower}/api/task/info/{r.id}", auth=auth, timeout=5
                ).text
                for r in (routed, quoted, local, cloud)
            ),
            30,
            "Flower seeing every task succeed",
            interval=0.5,
        )  # fmt: skip
        # Flower reads no answer from Redis either
        for sent in (routed, quoted, local, cloud):
            answer = httpx.get(f"{flower}/api/task/result/{sent.id}", auth=auth, timeout=5)
            assert answer.status_code == 503
        flower_views = {
            "Flower /api/tasks": httpx.get(f"{flower}/api/tasks", auth=auth, timeout=5).text,
            **{
                f"Flower {path}": httpx.get(f"{flower}{path}", auth=auth, timeout=5).text
                for r in (routed, quoted, local, cloud)
                for path in (f"/api/task/info/{r.id}", f"/task/{r.id}", f"/api/task/result/{r.id}")
            },
            "Flower /tasks/datatable": httpx.get(
                f"{flower}/tasks/datatable?draw=1&start=0&length=50", auth=auth, timeout=5
            ).text,
            "Flower /metrics": httpx.get(f"{flower}/metrics", timeout=5).text,
        }
        metrics = scrape(metrics_port)
        # Then Redis holds the canary in the quoted answer's own result and nowhere else
        client = server.client()
        in_redis = _where(needles, _redis_dump(client))
        kept = [key for key in in_redis if key.startswith("aipool:attempt:")]
        assert in_redis == {
            RESULT_KEY.format(quoted.id): list(needles),
            # the same answer, kept for a redelivery of its message (docs/attempts.md), and
            # forgotten with the result
            **{key: list(needles) for key in kept},
        }
        assert len(kept) == 1 and kept[0].endswith(":answer"), in_redis
        assert 0 < client.ttl(kept[0]) <= answer_keep_s()
        assert 0 < client.ttl(RESULT_KEY.format(quoted.id)) <= 3600
        # nor does any ledger row, once the spool is drained, any log line, Flower or /metrics
        drain_everything(client, ledger)
        ledger_rows = _ledger_dump(ledger)
        assert _where(needles, {f"ledger row {i}": row for i, row in enumerate(ledger_rows)}) == {}
        worker_log = worker.log_path.read_text(errors="replace")
        assert "DEBUG" in worker_log  # the log searched is the DEBUG one
        elsewhere = {
            "worker log": worker_log,
            "Flower log": flower_log.read_text(errors="replace"),
            "worker /metrics": metrics,
            **flower_views,
        }
        found = _where(needles, elsewhere)
        assert not found, f"prompt text found in: {sorted(found)}"
