"""Every CLI mistake ends in one line and an exit code: 2 for what was typed, 1 for a failure;
the traceback only with --debug."""

from __future__ import annotations

from pathlib import Path

import pytest

from aipool.cli import run
from aipool.lanes import QUEUES
from tests.support.cli import fresh_env, run_aipool
from tests.support.services import RedisServer


def _one_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert "Traceback" not in err
    return lines[0]


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["submit", ""], "invalid request (invalid_prompt): 'prompt' must be a non-empty string"),
        (["submit", "hi", "--priority", "urgent"], "'urgent' is not one of 'low', 'normal'"),
        (["submit", "hi", "--intent", "BOGUS"], "invalid request (invalid_intent)"),
        (["submit", "hi", "--timeout", "0"], "--timeout"),
        (["submit", "hi", "--tools-file", "/nonexistent.json"], "cannot read /nonexistent.json"),
        (["report", "--day", "2026-13-01"], "'2026-13-01' is not a calendar day"),
        (["report", "--day", "9999-12-31"], "'9999-12-31' is outside the days a report can read"),
        (["report", "--day", "0001-01-01"], "'0001-01-01' is outside the days a report can read"),
        (["report", "--day", "9999-11-30"], "'9999-11-30' has not begun: it is 20"),
        (["submit", "hi", "--timeout", "nan"], "must be more than 0 seconds, not nan"),
        (["submit", "hi", "--timeout", "inf"], "must be at most 86400 seconds (a day), not inf"),
        (["submit", "hi", "--timeout", "1e308"], "must be at most 86400 seconds"),
        (["report", "--lang", "fr"], "'fr' is not one of 'zh-TW', 'en'"),
        (["route", ""], "the text is empty"),
        (["status", "--port", "0"], "--port"),
        (["no-such-command"], "No such command"),
        (["demo", "--out", "/proc/aipool-demo"], "cannot make the folder /proc/aipool-demo"),
        (["submit", "hi", "--timeout", "abc"], "Invalid value for '--timeout'"),
        (["cost-estimate", "extra"], "unexpected extra argument"),
    ],
)
def test_a_user_mistake_is_one_line_and_exit_code_2(args, says, capsys):
    # Given a command line with a mistake in what was typed
    # When it runs
    code = run(args)
    # Then it exits 2 with one line naming the mistake, and prints nothing else
    out, err = capsys.readouterr()
    assert code == 2
    assert says in _one_line(err)
    assert out == ""


@pytest.mark.parametrize(
    ("args", "says"),
    [
        # a near miss names what was meant
        (
            ["submit", "hi", "--timout", "3"],
            "No such option: --timout (Possible options: --timeout)",
        ),
        (["statsu"], "No such command 'statsu'. Did you mean 'status'?"),
        # a word like no option names none (click's own matching offered --host for --bogus)
        (["status", "--bogus"], "aipool status: No such option: --bogus (see"),
        (["report", "--dya", "2026-01-01"], "No such option: --dya (Possible options: --day)"),
    ],
)
def test_an_unknown_option_or_command_suggests_only_a_near_miss(args, says, capsys):
    assert run(args) == 2
    assert says in _one_line(capsys.readouterr().err)


@pytest.mark.parametrize(
    ("stdin", "says"),
    [
        (b"", "invalid request (invalid_prompt): 'prompt' must be a non-empty string"),
        (b"caf\xe9 latte?", "standard input is not UTF-8 text (byte 3 of 11)"),
    ],
)
def test_a_prompt_on_standard_input_that_is_no_prompt_is_a_user_mistake(stdin, says, tmp_path):
    # Given `aipool submit -` fed nothing, or bytes that are not UTF-8 (Latin-1 here)
    # When it runs (no Redis named: the prompt is checked before any is looked for)
    done = run_aipool(["submit", "-"], fresh_env(tmp_path), tmp_path, input=stdin)
    # Then it exits 2 with one line naming the mistake
    assert done.returncode == 2
    assert says in _one_line(done.stderr)
    assert done.stdout == ""


def test_a_tools_file_that_is_not_json_is_a_user_mistake(tmp_path, capsys):
    tools = tmp_path / "tools.json"
    tools.write_text("[{not json")
    assert run(["submit", "hi", "--tools-file", str(tools)]) == 2
    assert "is not JSON" in _one_line(capsys.readouterr().err)


def test_status_and_submit_without_any_redis_say_how_to_get_one(tmp_path):
    # Given a fresh directory, no REDIS_URL and no embedded Redis running
    env = fresh_env(tmp_path / "runtime")
    for args in (["status"], ["submit", "hello"]):
        # When the command needs the pool's Redis
        done = run_aipool(args, env, tmp_path)
        # Then it fails in one line that says what to do
        assert done.returncode == 1, done.stderr
        line = _one_line(done.stderr)
        assert "REDIS_URL is not set and no embedded Redis is running" in line
        assert "aipool redis" in line


def test_report_says_when_redis_could_not_count_the_records_waiting_to_be_drained(tmp_path):
    # Given a ledger, and a REDIS_URL where no Redis listens (records may wait there undrained)
    ledger = f"sqlite:///{tmp_path / 'ledger.db'}"
    env = fresh_env(
        tmp_path / "runtime", DATABASE_URL=ledger, REDIS_URL=f"redis://127.0.0.1:{_closed_port()}/0"
    )
    assert run_aipool(["migrate"], env, tmp_path).returncode == 0
    # When the report runs
    done = run_aipool(["report", "--lang", "en"], env, tmp_path)
    # Then it shows the ledger, and says the figures may miss what Redis holds (it said nothing,
    # as if none waited)
    assert done.returncode == 0, done.stderr
    assert "Redis did not answer" in " ".join(done.stdout.split())


def test_report_without_a_ledger_says_so_instead_of_printing_zeros(tmp_path):
    done = run_aipool(["report"], fresh_env(tmp_path / "runtime"), tmp_path)
    assert done.returncode == 1
    assert "no ledger at sqlite:///var/aipool.db" in _one_line(done.stderr)
    assert not (tmp_path / "var" / "aipool.db").exists()


def test_submit_with_no_worker_on_the_queue_fails_at_once_and_says_how_to_start_one(tmp_path):
    # Given a Redis no worker listens on
    server = RedisServer().start()
    try:
        env = fresh_env(tmp_path / "runtime", REDIS_URL=server.url)
        # When a request is submitted
        done = run_aipool(["submit", "What is a pod?", "--timeout", "30"], env, tmp_path)
        # Then it fails within the inspect window, without sending, saying how to start a worker
        assert done.returncode == 1, done.stderr
        line = _one_line(done.stderr)
        assert "no worker consumes queue 'ollama'" in line
        # naming the command that serves every lane, or the whole queue list (a worker on
        # `-Q ollama` alone would leave ollama.urgent unserved)
        assert "`aipool worker`" in line
        assert f"celery -A workers.app worker -Q {','.join(QUEUES)}" in line
        assert server.client().llen("ollama") == 0
    finally:
        server.stop()


def test_debug_shows_the_traceback(tmp_path):
    env = fresh_env(tmp_path / "runtime")
    done = run_aipool(["--debug", "status"], env, tmp_path)
    assert done.returncode == 1
    assert "Traceback (most recent call last)" in done.stderr
    assert done.stderr.strip().splitlines()[-1].startswith("aipool: REDIS_URL is not set")


def test_no_arguments_prints_the_help(capsys):
    assert run([]) == 0
    assert "demo" in capsys.readouterr().out


def test_the_console_script_is_the_cli_entry_point():
    import tomllib

    scripts = tomllib.loads((Path(__file__).parents[2] / "pyproject.toml").read_text())["project"]
    assert scripts["scripts"]["aipool"] == "aipool.cli:main"


def _closed_port() -> int:
    from tests.support.services import free_port

    return free_port()  # nothing listens there once the probe socket is closed


@pytest.mark.parametrize("args", [["submit", "hi"], ["status"], ["status", "--json"]])
def test_an_unreachable_redis_is_one_line(args, tmp_path):
    # Given a REDIS_URL where no Redis listens
    url = f"redis://127.0.0.1:{_closed_port()}/0"
    env = fresh_env(tmp_path / "runtime", REDIS_URL=url)
    # When a command that needs it runs
    done = run_aipool(args, env, tmp_path)
    # Then it says in one line which Redis it could not reach and why (it printed three
    # tracebacks once)
    assert done.returncode == 1
    line = _one_line(done.stderr)
    assert line.startswith(f"aipool: cannot reach Redis at {url}: ")
    assert "Connection refused" in line


class _HangUp:
    """A TCP server that accepts each connection and closes it at once, counting them."""

    def __init__(self) -> None:
        import socket
        import threading

        self.accepted = 0
        self.server = socket.create_server(("127.0.0.1", 0))
        self.port = self.server.getsockname()[1]
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.server.accept()
            except OSError:
                return
            self.accepted += 1
            conn.close()

    def close(self) -> None:
        self.server.close()


@pytest.mark.parametrize("args", [["submit", "hi"], ["status"]])
def test_a_redis_that_hangs_up_is_tried_once_not_retried(args, tmp_path):
    # Given a REDIS_URL whose server hangs up on every connection
    server = _HangUp()
    try:
        url = f"redis://127.0.0.1:{server.port}/0"
        env = fresh_env(tmp_path / "runtime", REDIS_URL=url)
        # When a command that needs it runs
        done = run_aipool(args, env, tmp_path)
    finally:
        server.close()
    # Then it connected once and gave up, saying so in one line (it once retried for seconds,
    # with redis-py's own retries, before saying anything)
    assert done.returncode == 1
    assert _one_line(done.stderr).startswith(f"aipool: cannot reach Redis at {url}: ")
    assert server.accepted == 1


@pytest.mark.parametrize(
    ("variable", "value", "says"),
    [
        ("REDIS_URL", "redis//127.0.0.1:6379/0", "is not a Redis URL (no redis://, rediss://"),
        ("REDIS_URL", "redis://127.0.0.1:63a9/0", "is not a Redis URL (Port could not be cast"),
        ("REDIS_URL", "redis://127.0.0.1:6379/zero", "names database 'zero', not a number"),
        ("REDIS_URL", "redis+socket:///tmp/redis.sock", "redis+socket:// is how Celery"),
        ("DATABASE_URL", "postgres//db", "is not a database URL"),
    ],
)
@pytest.mark.parametrize("args", [["submit", "hi"], ["status"], ["report"]])
def test_a_malformed_url_is_one_line_naming_the_variable(args, variable, value, says, tmp_path):
    env = fresh_env(tmp_path / "runtime", **{variable: value})
    done = run_aipool(args, env, tmp_path)
    assert done.returncode == 1
    line = _one_line(done.stderr)
    assert f"{variable}={value}: {says}" in line
    assert "internal error" not in line


def test_a_malformed_url_never_shows_its_password(tmp_path):
    env = fresh_env(tmp_path / "runtime", REDIS_URL="redis://:s3cr3t-pw@127.0.0.1:99999/0")
    done = run_aipool(["status"], env, tmp_path)
    line = _one_line(done.stderr)
    assert "s3cr3t-pw" not in line and "redis://:***@127.0.0.1:99999/0" in line


def test_what_the_package_logs_during_a_command_is_one_line_each(monkeypatch, capsys):
    import logging

    from aipool.cli import effective_settings

    # Given a part of the package that logs a failure with its exception while a command runs
    # (as the ledger observer did when a hop's outcome was refused)
    def logs_a_failure() -> None:
        try:
            raise ValueError("unknown outcome 'x'\nsecond line")
        except ValueError:
            logging.getLogger("aipool.hop").exception("observer failed for request_id=r1")

    monkeypatch.setattr(effective_settings, "refuse_invalid_settings", logs_a_failure)
    # When the command runs
    code = run(["route", "What is a pod?"])
    # Then the log record is one line, with the exception's type and message but no traceback
    err = capsys.readouterr().err
    assert code == 0
    assert err.splitlines() == [
        "aipool: observer failed for request_id=r1 (ValueError: unknown outcome 'x' second line)"
    ]


def test_a_server_whose_port_is_taken_says_which_address_in_one_line(tmp_path, monkeypatch):
    import socket

    # Given the port the usage report would listen on, taken
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        env = fresh_env(
            tmp_path / "runtime", AIPOOL_HEALTH_TOKEN="t", REDIS_URL="redis://127.0.0.1:1/0"
        )
        # When it starts
        done = run_aipool(["status", "--serve", "--port", str(port)], env, tmp_path)
    # Then it says which address it could not take
    assert done.returncode == 1
    assert (
        _one_line(done.stderr)
        == f"aipool: cannot listen on 127.0.0.1:{port}: Address already in use"
    )


@pytest.mark.parametrize(
    "url", ["postgresql+psycopg2://u:s3cr3t@127.0.0.1/aipool", "mysql://u:s3cr3t@127.0.0.1/aipool"]
)
def test_a_database_driver_the_pool_does_not_install_is_a_refused_setting(url, tmp_path):
    # Given a DATABASE_URL naming a driver that is not installed (psycopg2, MySQLdb)
    env = fresh_env(tmp_path / "runtime", DATABASE_URL=url)
    # When the ledger is read
    done = run_aipool(["report"], env, tmp_path)
    # Then one line names the setting and the driver, never the password (it was an internal
    # error: ModuleNotFoundError)
    line = _one_line(done.stderr)
    assert done.returncode == 1
    assert line.startswith("aipool: settings refused: DATABASE_URL=") and "not installed" in line
    assert "s3cr3t" not in line and "internal error" not in line


@pytest.mark.parametrize(
    ("password", "says"),
    [("", "requires a password"), (":wrong-pw@", "refused the password in the URL")],
)
def test_a_redis_that_wants_a_password_says_so_in_one_line(password, says, tmp_path):
    # Given a Redis that requires a password, and a URL without it or with a wrong one
    server = RedisServer().start()
    try:
        server.client().config_set("requirepass", "right-pw")
        url = f"redis://{password}127.0.0.1:{server.port}/0"
        done = run_aipool(["status"], fresh_env(tmp_path / "runtime", REDIS_URL=url), tmp_path)
    finally:
        server.client(password="right-pw").config_set("requirepass", "")
        server.stop()
    # Then one line says what Redis wants, not HELLO's protocol detail (it said "cannot reach
    # Redis at ...: HELLO must be called with the client already authenticated")
    assert done.returncode == 1
    line = _one_line(done.stderr)
    assert says in line and "HELLO" not in line and "wrong-pw" not in line
