"""``aipool config`` shows the effective settings and their sources; every ``aipool`` command
refuses settings it cannot trust, naming the offending variable."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from aipool.cli import app, run
from tests.support.cli import fresh_env, run_aipool


def _rows(out: str) -> dict[str, dict[str, str]]:
    return {row["name"]: row for row in json.loads(out)["settings"]}


def test_config_shows_geminis_rpm_as_10_by_default_and_where_each_value_came_from(
    tmp_path: Path,
) -> None:
    # Given a fresh shell with a key and one limit set, and Claude's limits in a file
    limits = tmp_path / "limits.toml"
    limits.write_text("[claude]\nrpm = 3\n")
    env = fresh_env(
        tmp_path / "runtime",
        GEMINI_API_KEY="planted-secret-value",
        AIPOOL_CLAUDE_DAILY_TOKENS="unlimited",
        AIPOOL_LIMITS_FILE=str(limits),
    )
    # When `aipool config --json` runs
    done = run_aipool(["config", "--json"], env, tmp_path)
    # Then Gemini's rpm is ADR-006's 10 from the defaults, and each other value names its source
    assert done.returncode == 0, done.stderr
    rows = _rows(done.stdout)
    assert rows["AIPOOL_GEMINI_RPM"] == {
        "name": "AIPOOL_GEMINI_RPM",
        "value": "10",
        "source": "default",
    }
    assert rows["AIPOOL_CLAUDE_DAILY_TOKENS"]["value"] == "unlimited"
    assert rows["AIPOOL_CLAUDE_DAILY_TOKENS"]["source"] == "environment AIPOOL_CLAUDE_DAILY_TOKENS"
    assert rows["AIPOOL_CLAUDE_RPM"]["source"] == f"file {limits} [claude] rpm"
    # and the limit below ADR-006's is noted; the key is masked, shown nowhere
    assert json.loads(done.stdout)["notes"][0].startswith(
        "AIPOOL_CLAUDE_RPM=3 is below ADR-006's 5"
    )
    assert rows["GEMINI_API_KEY"]["value"] == "********"
    assert "planted-secret-value" not in done.stdout + done.stderr


def test_config_as_a_table_names_the_source(tmp_path: Path) -> None:
    env = fresh_env(tmp_path / "runtime", AIPOOL_GEMINI_RPM="20", COLUMNS="400")
    done = run_aipool(["config"], env, tmp_path)
    assert done.returncode == 0, done.stderr
    line = next(x for x in done.stdout.splitlines() if "AIPOOL_GEMINI_RPM " in x)
    assert "20" in line and "environment AIPOOL_GEMINI_RPM" in line


def test_config_in_an_80_column_terminal_names_every_variable_whole(tmp_path: Path) -> None:
    env = fresh_env(tmp_path / "runtime", AIPOOL_GEMINI_RPM="20", COLUMNS="80")
    shown = run_aipool(["config"], env, tmp_path)
    listed = run_aipool(["config", "--json"], env, tmp_path)
    assert shown.returncode == 0 and listed.returncode == 0, shown.stderr + listed.stderr
    # Then each variable is on a line of its own, uncut (AIPOOL_REDIS_SENTINEL_MASTER read
    # 'AIPOOL_REDIS_SENTINEL_…' in a table cut to fit), and no line is wider than the terminal
    lines = shown.stdout.splitlines()
    assert "…" not in shown.stdout and all(len(line) <= 80 for line in lines)
    assert set(_rows(listed.stdout)) <= {line.strip() for line in lines}
    at = lines.index("AIPOOL_GEMINI_RPM")
    assert lines[at + 1].split() == ["value", "20"]


@pytest.mark.parametrize("args", [["config"], ["route", "what is a pod?"]])
def test_a_misspelled_variable_stops_a_command_in_one_line_naming_it(
    tmp_path: Path, args: list[str]
) -> None:
    # Given AIPOOL_GEMINI_RPN=5 (meant: AIPOOL_GEMINI_RPM)
    env = fresh_env(tmp_path / "runtime", AIPOOL_GEMINI_RPN="5")
    # When a command runs
    done = run_aipool(args, env, tmp_path)
    # Then it does nothing but say which variable is wrong and what was probably meant
    assert done.returncode == 1
    assert done.stdout == ""
    assert done.stderr.strip() == (
        "aipool: settings refused: AIPOOL_GEMINI_RPN is not a setting "
        "(did you mean AIPOOL_GEMINI_RPM?)"
    )


def test_every_command_refuses_the_misspelled_variable_before_it_starts(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given the typo in this process's environment
    monkeypatch.setenv("AIPOOL_GEMINI_RPN", "5")
    commands = sorted(c.name or c.callback.__name__ for c in app.registered_commands)  # type: ignore[union-attr]
    assert {"config", "schema", "demo", "submit", "status", "redis"} <= set(commands)
    for command in commands:
        # When each command is run (before its own arguments are even looked at)
        code = run([command])
        # Then each stops with exit code 1 and names the variable
        err = capsys.readouterr().err
        assert code == 1, command
        assert "AIPOOL_GEMINI_RPN is not a setting" in err, command


def test_an_unknown_route_table_key_stops_a_command_with_a_suggestion(tmp_path: Path) -> None:
    routes = tmp_path / "routes.toml"
    routes.write_text('[[rules]]\nname = "all"\nprovidr = "gemini"\n')
    env = fresh_env(tmp_path / "runtime", AIPOOL_ROUTES_FILE=str(routes))
    done = run_aipool(["route", "hi"], env, tmp_path)
    assert done.returncode == 1
    assert "unknown key 'providr' (did you mean 'provider'?)" in done.stderr


def test_config_shows_the_redis_and_ledger_in_force_when_their_variables_are_unset(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from aipool.redis.embedded import EmbeddedRedis

    # Given a fresh shell: no REDIS_URL, no DATABASE_URL, no embedded Redis
    runtime = tmp_path / "runtime"
    env = fresh_env(runtime)
    # When config runs
    rows = _rows(run_aipool(["config", "--json"], env, tmp_path).stdout)
    # Then it shows the ledger the commands would use, and why, rather than "(unset)"
    assert rows["DATABASE_URL"]["value"] == "sqlite:///var/aipool.db"
    assert (
        rows["DATABASE_URL"]["source"] == "default: DATABASE_URL unset, a SQLite file under ./var"
    )
    assert rows["REDIS_URL"]["value"] == "(none)"
    assert "`aipool redis`" in rows["REDIS_URL"]["source"]
    assert rows["CELERY_BROKER_URL"]["value"] == "(REDIS_URL)"
    # Given an embedded Redis running (as `aipool redis` runs one), with its ledger
    ledger = f"sqlite:///{tmp_path / 'embedded.db'}"
    monkeypatch.setenv("AIPOOL_RUNTIME_DIR", str(runtime))
    with EmbeddedRedis(tmp_path / "redis", owner="aipool redis", database_url=ledger) as running:
        rows = _rows(run_aipool(["config", "--json"], env, tmp_path).stdout)
    # Then config shows that server and its ledger as the ones in force
    assert rows["REDIS_URL"]["value"] == running.redis_url
    assert rows["REDIS_URL"]["source"].startswith(
        "REDIS_URL unset: the embedded Redis of `aipool redis`"
    )
    assert rows["DATABASE_URL"]["value"] == ledger
    assert rows["DATABASE_URL"]["source"].startswith("DATABASE_URL unset: the ledger of")
