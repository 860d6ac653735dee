"""What one ``begin`` and one ``finish`` cost in the worker's own process, split in two parts.

Run: ``.venv/bin/python -m bench.bench_attempt_args`` (``REDIS_URL`` or
redis://127.0.0.1:6379/14, emptied first; ``BENCH_ROUNDS`` attempts). For each op, the median
over the rounds of: the whole call (``AttemptBook.begin``/``finish``), the part inside redis-py
(the EVALSHA sent, run and answered), and the rest (building the keys and arguments, reading the
reply): what issue #44's item 2 (scripts that carry little) is meant to shrink. Also the number of
keys and arguments each op sends, and Redis's own time per EVALSHA (``INFO commandstats``).
"""

from __future__ import annotations

import json
import os
import statistics
import time
import uuid
from typing import Any

import redis

from aipool.attempt.layout import Call, Header
from aipool.attempt.lifecycle import AttemptBook
from aipool.attempt.result_write import ResultWrite
from aipool.breaker import breakers_for
from aipool.contract.route import Hop
from aipool.ledger.usage_log import PENDING_KEY
from aipool.quota import quotas_for
from aipool.redis.lua import LuaScripts

ROUNDS = int(os.environ.get("BENCH_ROUNDS", "400"))
URL = os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/14")
#: A paid chain of four hops (three candidates after the first): the shape of a general route.
CHAIN = (
    Hop("gemini", "gemini-2.5-flash"),
    Hop("claude", "claude-sonnet-4-5"),
    Hop("ollama", "llama3.2:3b"),
    Hop("static", "static"),
)


class Metered(AttemptBook):
    """The book, timing the EVALSHA it sends and counting what it carries."""

    spent: list[float]
    sizes: list[tuple[int, int]]

    def _eval(
        self, keys: list[str], args: list[Any], provider: str | None, acked: str | None
    ) -> Any:
        start = time.perf_counter()
        try:
            return super()._eval(keys, args, provider, acked)
        finally:
            self.spent.append(time.perf_counter() - start)
            self.sizes.append((len(keys), len(args)))


def _evalsha_usec(client: Any) -> float:
    stats = client.info("commandstats").get("cmdstat_evalsha", {})
    return float(stats.get("usec", 0.0))


def _flush(client: Any, book: AttemptBook) -> None:
    """Empty the bench's database, and give the stored hop configuration back (where the book
    has one: before #44 the script carried it)."""
    client.flushdb()
    configs: Any = book.configs
    if hasattr(configs, "current"):
        configs.load(client, configs.current(book.table()))


def main() -> None:
    client = redis.Redis.from_url(URL)
    book = Metered(client, breakers_for(client), quotas_for(client))
    _flush(client, book)
    figures: dict[str, dict[str, list[float]]] = {
        op: {"total": [], "redis-py": [], "in Redis": []}
        for op in ("begin", "finish", "finish+result")
    }
    store = LuaScripts("aipool.attempt", "store_result").for_client(client)["store_result"]
    stored: list[float] = []
    meta = json.dumps({"status": "SUCCESS", "result": {"content": "x" * 1000}, "task_id": "t"})
    sizes: dict[str, tuple[int, int]] = {}
    for round_ in range(ROUNDS):  # (the flush is outside the figures)
        if round_ % 5 == 0:
            _flush(client, book)  # no quota (Gemini's 10 a minute) refuses a round
        h = Header(uuid.uuid4().hex, uuid.uuid4().hex, CHAIN, None, 300, costs=(3000, 3000, 0, 0))
        owner = uuid.uuid4().hex
        book.spent, book.sizes = [], []
        client.config_resetstat()
        start = time.perf_counter()
        call = book.begin(h, 0, owner=owner, bound_s=30.0, abandoned_row=lambda _: "{}")
        figures["begin"]["total"].append(time.perf_counter() - start)
        figures["begin"]["redis-py"].append(sum(book.spent))
        figures["begin"]["in Redis"].append(_evalsha_usec(client) / 1e6)
        sizes["begin"] = book.sizes[-1]
        assert isinstance(call, Call), call
        # Every other round, the finish writes the answer's result too.
        op = "finish+result" if round_ % 2 else "finish"
        result = ResultWrite(h.request_id, f"celery-task-meta-{h.request_id}", meta, 3600)
        book.spent, book.sizes = [], []
        client.config_resetstat()
        start = time.perf_counter()
        book.finish(
            h,
            0,
            call,
            owner=owner,
            answered=True,
            verdict="success",
            booked=250,
            answer=json.dumps({"text": "an answer"}),
            ledger_row="{}",
            cost=2500,
            result=result if op == "finish+result" else None,
        )
        figures[op]["total"].append(time.perf_counter() - start)
        figures[op]["redis-py"].append(sum(book.spent))
        figures[op]["in Redis"].append(_evalsha_usec(client) / 1e6)
        sizes[op] = book.sizes[-1]
        if op == "finish":
            start = time.perf_counter()
            store(keys=[result.key, PENDING_KEY], args=[meta, 3600])
            stored.append(time.perf_counter() - start)
    client.flushdb()
    for op, parts in figures.items():
        total = statistics.median(parts["total"]) * 1e6
        inside = statistics.median(parts["redis-py"]) * 1e6
        in_redis = statistics.median(parts["in Redis"]) * 1e6
        keys, args = sizes[op]
        print(
            f"{op:13s} total {total:7.1f} µs  redis-py {inside:7.1f} µs  "
            f"building and reading {total - inside:6.1f} µs  in Redis {in_redis:6.1f} µs  "
            f"({keys} keys, {args} args)"
        )
    print(f"store_result on its own (as before #44): {statistics.median(stored) * 1e6:7.1f} µs")


if __name__ == "__main__":
    main()
