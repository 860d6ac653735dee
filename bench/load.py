"""Many requests at once: throughput, a provider dying under load, and quotas under concurrency."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from bench.environment import Pool, lanes_of
from bench.figures import Figure, Report, p50, p99
from bench.latency import SIMPLE, TIMEOUT_S

THROUGHPUT_RATIO = 0.6
#: ADR-006: Ollama's breaker opens after three consecutive failures.
OLLAMA_THRESHOLD = 3
#: A request the quota figures route to Gemini (alert triage across services, complexity 4+).
CORRELATE = (
    "同時收到三個告警：HighErrorRate on checkout-service、PostgresReplicationLag on pg-replica-2、"
    "KafkaConsumerLag on order-events。幫我分析這些告警之間的關聯，找出根因，然後建議處理順序。"
)


def rate(send: Callable[[], Any], n: int) -> float:
    """Requests per second: ``n`` sent as fast as the producer can, until the last is answered."""
    started = time.perf_counter()
    results = [send() for _ in range(n)]
    for result in results:
        result.get(timeout=120)
    return n / (time.perf_counter() - started)


def throughput(pool: Pool, report: Report, n: int, concurrency: int, rounds: int = 2) -> None:
    """Requests per second through the pool against bare tasks of the same number of hops, on the
    same worker (``concurrency`` pool processes)."""
    from tasks.client import submit

    app = pool.app
    paths: dict[str, Callable[[], Any]] = {
        "bare_1hop": lambda: app.send_task("bench.noop", queue="ollama", routing_key="ollama"),
        "submit": lambda: submit(SIMPLE, app=app),
        # The pool's hop calls a model and the no-op does not: a bare hop making the same SDK
        # call says how much of the gap is the call's.
        "bare_1hop_sdk": lambda: app.send_task(
            "bench.hop", kwargs={"queues": [], "call": True}, queue="ollama", routing_key="ollama"
        ),
        "bare_2hop": lambda: app.send_task(
            "bench.hop",
            kwargs={"queues": ["ollama"], "call": False},
            queue="router",
            routing_key="router",
        ),
        "by_name": lambda: app.send_task("ai.generate", kwargs={"request": SIMPLE}, queue="router"),
    }
    rates: dict[str, list[float]] = {name: [] for name in paths}
    pool.warm("ollama", copies=2 * concurrency)
    for send in paths.values():  # warm-up
        rate(send, 10)
    for _ in range(rounds):  # the paths take turns; the best round of each counts
        for name, send in paths.items():
            rates[name].append(rate(send, n))
    best = {name: max(values) for name, values in rates.items()}
    for pool_path, bare_path, label in (
        ("submit", "bare_1hop", "submit() → ollama vs bare no-op"),
        ("by_name", "bare_2hop", "by name → router → ollama vs bare 2-hop no-op"),
    ):
        ratio = best[pool_path] / best[bare_path]
        report.add(
            Figure(
                "throughput",
                f"{label}, {concurrency} process{'es' if concurrency > 1 else ''}",
                best[pool_path],
                "req/s",
                f"≥ {THROUGHPUT_RATIO}x bare",
                ratio >= THROUGHPUT_RATIO,
                best[bare_path],
                "bare",
                {
                    "ratio": ratio,
                    "n": n,
                    "rounds": rates[pool_path],
                    "bare_rounds": rates[bare_path],
                    **(
                        {
                            "bare_with_sdk_call_req_s": best["bare_1hop_sdk"],
                            "ratio_to_bare_with_sdk_call": best[pool_path] / best["bare_1hop_sdk"],
                        }
                        if pool_path == "submit"
                        else {}
                    ),
                },
            )
        )


class _Load:
    """``threads`` producers, each sending one request by name at a time, until stopped."""

    def __init__(self, pool: Pool, threads: int, request: dict[str, Any]) -> None:
        self.pool = pool
        self.request = request
        self.stop = threading.Event()
        self.done: list[tuple[float, float, dict[str, Any]]] = []  # (sent at, ms, answer)
        self.lock = threading.Lock()
        self.threads = [threading.Thread(target=self._run, daemon=True) for _ in range(threads)]

    def _run(self) -> None:
        while not self.stop.is_set():
            sent = time.monotonic()
            result = self.pool.app.send_task(
                "ai.generate", kwargs={"request": self.request}, queue="router"
            )
            answer = result.get(timeout=TIMEOUT_S)
            with self.lock:
                self.done.append((sent, (time.monotonic() - sent) * 1000, answer))

    def __enter__(self) -> _Load:
        for thread in self.threads:
            thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.stop.set()
        for thread in self.threads:
            thread.join(timeout=TIMEOUT_S)


def _reached(answer: dict[str, Any], provider: str) -> bool:
    """Whether the request made a call to ``provider`` (an error outcome is a call that failed)."""
    return any(
        a["provider"] == provider and a["outcome"] in ("ok", "error")
        for a in answer.get("attempts", [])
    )


def blast_radius(pool: Pool, report: Report, seconds: float, workers: int, threads: int) -> None:
    """Ollama dies while ``threads`` producers keep ``workers`` workers (2 processes each) busy."""
    pool.reset_guards("ollama", "gemini")
    pool.simulator.heal("ollama")
    with pool.workers(workers, concurrency=2):
        pool.warm("ollama", "gemini")
        with _Load(pool, threads, SIMPLE) as load:
            time.sleep(seconds)
            died = time.monotonic()
            pool.simulator.set_fault("ollama", "down")
            # Ollama's breaker stays open for 30 s: the outage ends well before a half-open probe.
            time.sleep(seconds)
            # Healthy again (breaker closed by hand): the load's latency after the outage joins
            # the latency before it as the baseline, so a drift of the machine's load during the
            # figure does not pass for the outage's cost.
            pool.simulator.heal("ollama")
            pool.reset_guards("ollama")
            healed = time.monotonic()
            time.sleep(seconds)
    before = [ms for sent, ms, _ in load.done if sent < died or sent >= healed + 0.5]
    during = [(ms, answer) for sent, ms, answer in load.done if died <= sent < healed]
    # Calls to a dead Ollama: requests sent after it died that still tried it, plus requests in
    # flight when it died whose call failed.
    dead_calls = sum(
        1
        for _sent, _ms, answer in load.done
        if any(
            a["provider"] == "ollama" and a["outcome"] == "error"
            for a in answer.get("attempts", [])
        )
    )
    failed = sum(1 for _ms, answer in during if answer.get("status") != "ok")
    pool.simulator.heal("ollama")
    pool.reset_guards("ollama")
    during_ms = [ms for ms, _ in during]
    report.add(
        Figure(
            "outage",
            f"calls reaching a dead Ollama before its breaker opens ({workers}x2 processes, "
            f"{threads} producers)",
            dead_calls,
            "calls",
            f"≤ {OLLAMA_THRESHOLD} (the threshold)",
            dead_calls <= OLLAMA_THRESHOLD,
            details={
                "requests_during_outage": len(during),
                "not_answered_by_a_model": failed,
            },
        )
    )
    report.add(
        Figure(
            "outage",
            "latency added to requests arriving during the outage (p50)",
            p50(during_ms) - p50(before),
            "ms",
            details={
                "healthy_p50_ms": p50(before),
                "outage_p50_ms": p50(during_ms),
                "healthy_p99_ms": p99(before),
                "outage_p99_ms": p99(during_ms),
                "added_p99_ms": p99(during_ms) - p99(before),
                "healthy_requests": len(before),
                "outage_requests": len(during),
            },
        )
    )
    report.add(
        Figure(
            "outage",
            "latency added to requests arriving during the outage (p99)",
            p99(during_ms) - p99(before),
            "ms",
        )
    )


def _burst(pool: Pool, threads: int, total: int, request: dict[str, Any]) -> list[dict[str, Any]]:
    """``total`` requests from ``threads`` producers at once; their answers."""
    answers: list[dict[str, Any]] = []
    lock = threading.Lock()
    left = iter(range(total))

    def run() -> None:
        while True:
            with lock:
                if next(left, None) is None:
                    return
            result = pool.app.send_task("ai.generate", kwargs={"request": request}, queue="router")
            try:
                answer = result.get(timeout=TIMEOUT_S)
            except Exception as exc:  # a figure counts what was not answered, never loses it
                answer = {"status": "unanswered", "error": type(exc).__name__}
            with lock:
                answers.append(answer)

    workers = [threading.Thread(target=run) for _ in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    return answers


def quota(pool: Pool, report: Report, workers: int, threads: int, quick: bool) -> None:
    """Gemini's daily tokens and Claude's requests per minute under concurrent load."""
    from aipool.contract.request import parse_request

    rpm = 5
    tokens_request = {"prompt": CORRELATE, "max_tokens": 64}
    reservation = parse_request(tokens_request).estimated_total_tokens()
    daily_tokens = reservation * 10
    limits = {
        "AIPOOL_CLAUDE_RPM": str(rpm),
        "AIPOOL_CLAUDE_DAILY_REQUESTS": "unlimited",
        "AIPOOL_CLAUDE_DAILY_TOKENS": "unlimited",
        "AIPOOL_CLAUDE_MONTHLY_TOKENS": "unlimited",
        "AIPOOL_GEMINI_RPM": "unlimited",
        "AIPOOL_GEMINI_DAILY_REQUESTS": "unlimited",
        "AIPOOL_GEMINI_DAILY_TOKENS": str(daily_tokens),
        "AIPOOL_GEMINI_MONTHLY_TOKENS": "unlimited",
    }
    pool.reset_guards("gemini", "claude", "ollama")
    with pool.workers(
        workers,
        concurrency=2,
        # critical requests and alert triage wait in the urgent lanes (aipool.lanes): the token
        # burst's correlation request is ALERT_TRIAGE, so its hops are gemini.urgent and after
        queues=("router", *lanes_of("ollama"), *lanes_of("gemini"), *lanes_of("claude")),
        env=limits,
    ):
        pool.warm("gemini", "claude")
        # Requests per minute: a burst far above the limit, all inside one minute, so every call
        # Claude receives falls in one 60 s window.
        calls_before = pool.simulator.calls("claude")
        started = time.monotonic()
        burst = _burst(
            pool,
            threads,
            rpm * (3 if quick else 6),
            {"prompt": "What is a pod?", "priority": "critical"},
        )
        window = time.monotonic() - started
        lost = sum(1 for a in burst if a.get("status") == "unanswered")
        calls = pool.simulator.calls("claude") - calls_before
        report.add(
            Figure(
                "quota",
                f"most Claude calls in one 60 s window (rpm {rpm}, {workers}x2 processes)",
                calls,
                "calls",
                f"≤ {rpm} (the rpm), every request answered",
                calls <= rpm and window < 60 and lost == 0,
                details={
                    "burst_seconds": window,
                    "requests": rpm * (3 if quick else 6),
                    "unanswered": lost,
                },
            )
        )
        # Daily tokens: ten reservations' worth of budget, three times that many requests.
        answers = _burst(pool, threads, 30 if quick else 60, tokens_request)
        used = sum(
            a["usage"]["input_tokens"] + a["usage"]["output_tokens"]
            for a in answers
            if a.get("provider") == "gemini" and a.get("status") == "ok"
        )
        answered = sum(1 for a in answers if a.get("provider") == "gemini")
        unanswered = sum(1 for a in answers if a.get("status") == "unanswered")
        overshoot = max(0, used - daily_tokens)
        report.add(
            Figure(
                "quota",
                f"Gemini daily-token overshoot (limit {daily_tokens:,})",
                overshoot,
                "tokens",
                f"≤ {reservation} (one reservation), every request answered",
                # Zero overshoot of zero calls proves nothing: Gemini must have answered until its
                # tokens ran out, and every request must have had an answer.
                overshoot <= reservation and answered > 0 and unanswered == 0,
                details={
                    "tokens_used": used,
                    "gemini_answers": answered,
                    "unanswered": unanswered,
                    "requests": len(answers),
                    "reservation_per_request": reservation,
                },
            )
        )
    pool.reset_guards("gemini", "claude")
