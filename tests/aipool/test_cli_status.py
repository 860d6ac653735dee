"""``aipool status`` reads, never starts: it names the Redis and ledger it read, shows today's
usage in the words ``aipool report`` uses, and leaves no process behind."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from decimal import Decimal

import pytest

from aipool.cli import run
from aipool.ledger.db import make_engine, migrate
from aipool.ledger.record import UsageRecord
from aipool.ledger.usage_log import store_now
from aipool.redis.embedded import EmbeddedRedis
from tests.support.cli import MARK, fresh_env, processes_marked, run_aipool


def test_status_without_redis_starts_nothing_and_leaves_no_process(tmp_path):
    # Given no REDIS_URL and no embedded Redis
    env = fresh_env(tmp_path / "runtime")
    # When status runs
    done = run_aipool(["status"], env, tmp_path)
    # Then it says there is none, and no process it started is alive
    assert done.returncode == 1
    assert processes_marked(env[MARK]) == []
    assert not (tmp_path / "runtime").exists()


def test_status_finds_the_running_embedded_redis_and_says_which_it_read(tmp_path, monkeypatch):
    # Given an embedded Redis announced by its owner (as `aipool demo` or `aipool redis` does)
    runtime = tmp_path / "runtime"
    monkeypatch.setenv("AIPOOL_RUNTIME_DIR", str(runtime))
    ledger = f"sqlite:///{tmp_path / 'ledger.db'}"
    migrate(ledger)
    with EmbeddedRedis(tmp_path / "redis", owner="the test", database_url=ledger) as running:
        env = fresh_env(runtime, COLUMNS="200")
        # When status runs without REDIS_URL
        done = run_aipool(["status", "--lang", "en"], env, tmp_path)
        # Then it read that Redis and its ledger, and says so
        assert done.returncode == 0, done.stderr
        assert f"Redis   {running.redis_url} (embedded Redis of `the test`" in done.stdout
        assert f"Ledger  {ledger}" in done.stdout
        assert "router" in done.stdout and "celery" in done.stdout
        # And it left nothing running
        assert processes_marked(env[MARK]) == []


def _record(provider: str, outcome: str, attempt: int, **fields: object) -> UsageRecord:
    return UsageRecord(
        request_id=f"r-{provider}-{attempt}",
        attempt=attempt,
        provider=provider,
        model="m",
        outcome=outcome,
        success=outcome == "ok",
        created_at=datetime.now(UTC),
        **fields,  # type: ignore[arg-type]
    )


@pytest.fixture()
def claude_day(tmp_path, monkeypatch):
    """A ledger where Claude made 5 calls (1 failed) and was skipped 4 times by its breaker."""
    url = f"sqlite:///{tmp_path / 'ledger.db'}"
    migrate(url)
    engine = make_engine(url)
    for i in range(4):
        store_now(
            engine,
            _record(
                "claude",
                "ok",
                i,
                input_tokens=10,
                output_tokens=5,
                latency_ms=100 + i,
                cost_usd=Decimal("0.001"),
            ),
        )
    store_now(
        engine, _record("claude", "error", 4, error_message="timeout: no answer", latency_ms=900)
    )
    for i in range(5, 9):
        store_now(engine, _record("claude", "circuit_open", i, error_message="claude circuit open"))
    engine.dispose()
    monkeypatch.setenv("DATABASE_URL", url)
    monkeypatch.setenv("COLUMNS", "200")
    return url


def _claude_usage_row(out: str) -> list[str]:
    """Claude's row of the usage table (status prints a breaker and quota table too)."""
    for line in out.splitlines():
        if re.match(r"^[│┃|]\s*claude\s", line):
            cells = [cell.strip() for cell in re.split(r"[│┃|]", line)[1:-1]]
            if len(cells) == 10:
                return cells
    raise AssertionError(f"no usage row for claude in:\n{out}")


def test_report_and_status_count_calls_apart_from_skipped_hops_in_the_same_words(
    claude_day, capsys, redis_client
):
    # Given a day where Claude was called 5 times and skipped 4 times by its open breaker
    # When report and status print it
    assert run(["report", "--lang", "en"]) == 0
    report = capsys.readouterr().out
    assert run(["status", "--lang", "en"]) == 0
    status = capsys.readouterr().out
    # Then both say 5 calls, 1 failed (timeout), 4 skipped by the breaker, 4 answered, none
    # from the response cache
    for out in (report, status):
        assert "Calls" in out and "Skipped (breaker/quota/deadline)" in out
        row = _claude_usage_row(out)
        assert row[1:6] == ["5", "1 (timeout 1)", "breaker 4", "4", "0"], row
    assert f"Ledger  {claude_day}" in report


def _serve(tmp_path, *options: str, **env: str):  # type: ignore[no-untyped-def]
    from tests.support.status_server import serve_status

    return serve_status(tmp_path, *options, **env)


def test_status_serve_without_a_token_refuses_to_start_in_one_line(tmp_path):
    # Given no AIPOOL_HEALTH_TOKEN and no AIPOOL_ALLOW_ANONYMOUS
    process, _ = _serve(tmp_path)
    # When the usage report is served
    _, err = process.communicate(timeout=30)
    # Then it does not start, and says how to give it a login or serve it to anyone on purpose
    assert process.returncode == 1
    assert err.splitlines() == [
        "aipool: the usage report has no login and would serve the pool to anyone who reaches "
        "it: set AIPOOL_HEALTH_TOKEN (or AIPOOL_HEALTH_TOKEN_FILE) to the bearer token it asks "
        "for, or set AIPOOL_ALLOW_ANONYMOUS=1 to serve it without one"
    ]


@pytest.mark.parametrize(
    ("env", "said"),
    [
        ({"AIPOOL_HEALTH_TOKEN": "t0ken"}, "(login required)"),
        ({"AIPOOL_ALLOW_ANONYMOUS": "1"}, "WITHOUT a login (AIPOOL_ALLOW_ANONYMOUS=1)"),
    ],
)
def test_status_serve_listens_on_loopback_and_says_where(tmp_path, env, said):
    import httpx

    from tests.support.listening import listening_addresses
    from tests.support.waiting import eventually

    process, port = _serve(tmp_path, **env)
    try:
        # When it has started: its first line says where the report and the probe are
        assert process.stderr is not None
        line = process.stderr.readline().strip()
        base = f"http://127.0.0.1:{port}"
        assert line == (
            f"aipool: the usage report serving on {base}/api/v1/health/ai-usage "
            f"(probes: {base}/healthz) {said}"
        )
        # Then it listens on loopback only, and asks for the token when one is set
        assert listening_addresses(port) == {"127.0.0.1"}
        answer = eventually(
            lambda: httpx.get(f"{base}/api/v1/health/ai-usage", timeout=5), 10, "an answer"
        )
        assert answer.status_code == (401 if "AIPOOL_HEALTH_TOKEN" in env else 200)
    finally:
        process.terminate()
        process.communicate(timeout=10)


def test_status_serve_on_an_ipv6_address_says_it_as_a_url_writes_it(tmp_path):
    import httpx

    from tests.support.waiting import eventually

    # Given the usage report served on IPv6 loopback
    process, port = _serve(tmp_path, "--host", "::1", AIPOOL_ALLOW_ANONYMOUS="1")
    try:
        # When it has started: its first line says where, the address in brackets
        assert process.stderr is not None
        line = process.stderr.readline().strip()
        base = f"http://[::1]:{port}"
        assert line.startswith(f"aipool: the usage report serving on {base}/api/v1/health/")
        # Then the probe answers there
        answer = eventually(lambda: httpx.get(f"{base}/healthz", timeout=5), 10, "an answer")
        assert answer.status_code == 200
    finally:
        process.terminate()
        process.communicate(timeout=10)


def _status_env(tmp_path, **extra: str):  # type: ignore[no-untyped-def]
    from tests.conftest import TEST_REDIS_URL

    ledger = f"sqlite:///{tmp_path / 'ledger.db'}"
    migrate(ledger)
    env = fresh_env(tmp_path / "runtime", REDIS_URL=TEST_REDIS_URL, DATABASE_URL=ledger, **extra)
    env.pop("COLUMNS", None)
    return env


_CJK = re.compile(r"[\u3000-\u9fff\uff00-\uffef]")


def test_status_speaks_english_by_default_and_zh_tw_when_asked_never_both(tmp_path):
    # Given the alerts' language set to zh-TW (the commands do not follow it)
    env = _status_env(tmp_path, AIPOOL_ALERT_LANG="zh-TW")
    # When status runs without --lang
    english = run_aipool(["status"], env, tmp_path)
    # Then every heading is English
    assert english.returncode == 0, english.stderr
    assert not _CJK.search(english.stdout), english.stdout
    for heading in ("Breakers and quotas", "Provider", "Calls", "Queue", "Waiting", "Budget"):
        assert heading in english.stdout
    # When it runs with --lang zh-TW
    chinese = run_aipool(["status", "--lang", "zh-TW"], env, tmp_path)
    # Then no English heading is left
    assert chinese.returncode == 0, chinese.stderr
    for heading in (
        "Breakers",
        "quota",
        "Provider",
        "Calls",
        "Queue",
        "Waiting",
        "Ledger",
        "today",
    ):
        assert heading not in chinese.stdout, heading
    assert "斷路器與配額" in chinese.stdout and "預算" in chinese.stdout


def test_status_tables_do_not_wrap_when_printed_to_a_pipe(tmp_path):
    # Given status printed to a pipe (no terminal, no COLUMNS: Rich would assume 80 columns)
    done = run_aipool(["status"], _status_env(tmp_path), tmp_path)
    assert done.returncode == 0, done.stderr
    # Then each provider's row of the breakers table is one line holding all six cells
    rows = [line for line in done.stdout.splitlines() if line.startswith("│ gemini ")]
    assert rows and all(line.count("│") == 7 for line in rows[:1]), done.stdout
    assert "0 / 2,000,000" in rows[0]
    # and no line is a heading cut in two
    assert "┃ quota: monthly tokens ┃" in done.stdout


def test_the_usage_endpoint_serves_what_status_json_prints(tmp_path):
    import json

    import httpx

    env = _status_env(tmp_path, AIPOOL_HEALTH_TOKEN="t0ken")
    # Given the usage report served beside status --json, on the same pool
    process, port = _serve(tmp_path, **{k: env[k] for k in ("DATABASE_URL", "AIPOOL_HEALTH_TOKEN")})
    try:
        assert process.stderr is not None
        process.stderr.readline()  # serving
        served = httpx.get(
            f"http://127.0.0.1:{port}/api/v1/health/ai-usage",
            headers={"Authorization": "Bearer t0ken"},
            timeout=10,
        )
    finally:
        process.terminate()
        process.communicate(timeout=10)
    printed = run_aipool(["status", "--json"], env, tmp_path)
    assert printed.returncode == 0, printed.stderr
    body, status_json = served.json(), json.loads(printed.stdout)
    # Then the endpoint has everything status --json has: cost, budget, queues, records waiting
    assert set(body) == set(status_json) >= {"providers", "queues", "today", "budget"}
    assert set(body) >= {"pending_records", "redis", "ledger"}
    assert body["budget"] == status_json["budget"]
    assert body["budget"]["budget_usd"] == "10"
    assert body["queues"].keys() == status_json["queues"].keys()
    assert body["today"]["day"] == status_json["today"]["day"]
    assert body["providers"].keys() == status_json["providers"].keys()


def test_status_serve_starts_while_redis_is_down_and_its_probe_says_so(tmp_path):
    import httpx

    from tests.support.services import free_port
    from tests.support.waiting import eventually

    # Given a Redis that does not answer
    down = f"redis://127.0.0.1:{free_port()}/0"
    process, port = _serve(tmp_path, REDIS_URL=down, AIPOOL_HEALTH_TOKEN="t0ken")
    try:
        # When the server starts, then it serves (a restart would not bring Redis back), and
        # says at once that Redis does not answer and what its probe says meanwhile
        assert process.stderr is not None
        assert "serving on" in process.stderr.readline()
        assert process.stderr.readline().strip() == (
            f"aipool: cannot reach Redis at {down}: Error 111 connecting to "
            f"127.0.0.1:{down.split(':')[2].split('/')[0]}. Connection refused; /healthz answers "
            "503 until it does"
        )
        probe = eventually(
            lambda: httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=10), 10, ""
        )
        # and its probe says Redis is not there
        assert probe.status_code == 503
    finally:
        process.terminate()
        process.communicate(timeout=10)


def test_status_names_lanes_where_messages_wait_and_no_worker_consumes(tmp_path):
    import json

    from tests.support.services import RedisServer

    # Given a pool whose urgent Gemini lane holds two messages and has no worker
    server = RedisServer().start()
    try:
        client = server.client()
        client.lpush("gemini.urgent", "m1", "m2")
        env = fresh_env(
            tmp_path / "runtime",
            REDIS_URL=server.url,
            DATABASE_URL=f"sqlite:///{tmp_path / 'none.db'}",
            COLUMNS="200",
        )
        # When status runs, as text and as JSON
        text = run_aipool(["status", "--lang", "en"], env, tmp_path)
        as_json = run_aipool(["status", "--json"], env, tmp_path)
    finally:
        server.stop()
    # Then the lane shows 0 workers beside its 2 messages, and is named below the table
    assert text.returncode == 0, text.stderr
    row = next(line for line in text.stdout.splitlines() if "gemini.urgent" in line)
    assert [c.strip() for c in re.split(r"[│┃|]", row)[1:-1]][-1] == "0"
    assert "No running worker consumes gemini.urgent, where messages wait" in text.stdout
    assert "`aipool worker`" in text.stdout
    consumers = json.loads(as_json.stdout)["queue_consumers"]
    assert consumers["gemini.urgent"] == 0 and set(consumers) >= {"router", "router.urgent"}


def test_status_counts_the_workers_of_every_lane(pool, capsys, monkeypatch, tmp_path):  # type: ignore[no-untyped-def]
    import json

    monkeypatch.setenv("DATABASE_URL", f"sqlite:///{tmp_path / 'none.db'}")
    # Given the session's worker, which consumes every queue and lane
    assert run(["status", "--json"]) == 0
    consumers = json.loads(capsys.readouterr().out)["queue_consumers"]
    # Then status counts at least that worker on each
    from aipool.lanes import QUEUES

    assert all(consumers[queue] >= 1 for queue in QUEUES), consumers


@pytest.mark.integration
def test_status_on_sentinel_names_the_current_master_and_each_replicas_lag(tmp_path):
    import json

    from tests.support.services import SentinelSet

    # Given a pool on Sentinel: a master, its replica, three sentinels
    sentinels = SentinelSet().start()
    try:
        env = _status_env(tmp_path)
        env.update(sentinels.env)
        master = sentinels.master_port()
        (replica,) = [s.port for s in sentinels.servers if s.port != master]
        # When status prints its JSON
        printed = run_aipool(["status", "--json"], env, tmp_path)
        assert printed.returncode == 0, printed.stderr
        # Then it names the master the sentinels name now, and the replica with its lag
        replication = json.loads(printed.stdout)["replication"]
        assert replication["master"] == f"127.0.0.1:{master}"
        assert replication["sentinel_master"] == "aipool"
        (one,) = replication["replicas"]
        assert (one["address"], one["state"]) == (f"127.0.0.1:{replica}", "online")
        assert one["lag_s"] >= 0 and one["behind_bytes"] >= 0
        # And the tables say the same, in each language
        english = run_aipool(["status", "--lang", "en"], env, tmp_path)
        assert english.returncode == 0, english.stderr
        assert f"master 127.0.0.1:{master} (Sentinel, aipool)" in english.stdout
        assert f"replica 127.0.0.1:{replica} online, acknowledged" in english.stdout
        chinese = run_aipool(["status", "--lang", "zh-TW"], env, tmp_path)
        assert chinese.returncode == 0, chinese.stderr
        assert f"主節點 127.0.0.1:{master}" in chinese.stdout
        assert f"副本 127.0.0.1:{replica}" in chinese.stdout
    finally:
        sentinels.stop()


def test_status_on_one_redis_without_replicas_says_nothing_of_replication(tmp_path):
    import json

    env = _status_env(tmp_path)
    printed = run_aipool(["status", "--json"], env, tmp_path)
    assert printed.returncode == 0, printed.stderr
    assert json.loads(printed.stdout)["replication"] is None


def test_status_with_its_ledger_down_still_shows_what_redis_holds(tmp_path):
    import json

    # Given a pool whose ledger's database does not answer (nothing listens on its port)
    env = _status_env(tmp_path)
    env["DATABASE_URL"] = "postgresql+psycopg://postgres:s3cr3t@127.0.0.1:1/none"
    # When status runs
    done = run_aipool(["status", "--lang", "en"], env, tmp_path)
    # Then the breakers, quotas and queues Redis holds are shown, the day's usage and budget are
    # said to be unknown rather than zero, and it exits 1 with one line on stderr naming the
    # ledger (it printed only that line, so on-call lost the breakers in a database outage)
    assert done.returncode == 1
    assert "Breakers and quotas" in done.stdout and "│ gemini " in done.stdout
    assert "Queue" in done.stdout
    assert "are unknown (not zero)" in " ".join(done.stdout.split())
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("aipool: cannot read the ledger at postgresql+psycopg://postgres")
    assert "s3cr3t" not in done.stdout + done.stderr and "Traceback" not in done.stderr
    # And status --json says so in a field of its own, with no day and no budget
    printed = run_aipool(["status", "--json"], env, tmp_path)
    body = json.loads(printed.stdout)
    assert printed.returncode == 1
    assert body["ledger_error"] and body["today"] is None and body["budget"] is None
    assert set(body["providers"]) >= {"ollama", "gemini", "claude", "nemotron"}
