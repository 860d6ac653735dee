"""The settings model: every variable read in one place, typos refused by name, unlimited said
explicitly, and where each value came from."""

from __future__ import annotations

from pathlib import Path

import pytest

from aipool.errors import SettingsError
from aipool.settings import read_settings, settings
from aipool.settings.startup import below_adr_notes

GEMINI_RPM = ("providers", "gemini", "quota", "rpm")


def test_a_misspelled_limit_is_refused_naming_it_and_the_setting_it_resembles() -> None:
    # Given AIPOOL_GEMINI_RPN, a typo of AIPOOL_GEMINI_RPM
    reading = read_settings({"AIPOOL_GEMINI_RPN": "5"})
    # Then the reading is refused, naming the variable and suggesting the real one
    assert reading.problems == [
        "AIPOOL_GEMINI_RPN is not a setting (did you mean AIPOOL_GEMINI_RPM?)"
    ]
    with pytest.raises(SettingsError, match="AIPOOL_GEMINI_RPN"):
        reading.checked()


def test_variables_of_the_test_harness_and_other_programs_are_not_refused() -> None:
    reading = read_settings(
        {"AIPOOL_TEST_REDIS_URL": "redis://x", "AIPOOL_SOAK_SECONDS": "20", "HOME": "/root"}
    )
    assert reading.problems == []


def test_defaults_are_adr_006s_and_say_so() -> None:
    reading = read_settings({})
    current = reading.checked()
    assert current.providers["gemini"].quota.rpm == 10
    assert current.providers["claude"].quota.daily_tokens == 50_000
    assert current.providers["ollama"].quota.unlimited
    assert current.providers["ollama"].breaker.failure_threshold == 3
    assert reading.origin(GEMINI_RPM) == "default"
    assert current.timezone == "Asia/Taipei"
    assert current.effective_visibility_timeout_s == 180


def test_unlimited_is_written_unlimited_and_zero_is_refused_saying_how_to_write_it() -> None:
    # Given a limit written "unlimited": it has no limit
    reading = read_settings({"AIPOOL_CLAUDE_DAILY_TOKENS": "unlimited"})
    assert reading.checked().providers["claude"].quota.daily_tokens is None
    # Given the old spelling 0: refused, and the message says what to write
    refused = read_settings({"AIPOOL_GEMINI_RPM": "0"})
    assert refused.problems == [
        "AIPOOL_GEMINI_RPM=0: 0 no longer means no limit: write 'unlimited' for no limit"
    ]
    none = read_settings({"AIPOOL_GEMINI_RPM": "None"}).checked()  # an explicit word too
    assert none.providers["gemini"].quota.rpm is None
    assert "positive whole number" in read_settings({"AIPOOL_GEMINI_RPM": "-3"}).problems[0]


def test_the_metrics_address_is_every_interface_unless_an_address_is_given() -> None:
    # Prometheus scrapes a worker from outside its container, so every interface by default;
    # an operator may keep it to one address (loopback, or the pod's own)
    assert read_settings({}).checked().metrics_host == "0.0.0.0"
    assert read_settings({"AIPOOL_METRICS_HOST": "127.0.0.1"}).checked().metrics_host == (
        "127.0.0.1"
    )
    assert read_settings({"AIPOOL_METRICS_HOST": "::"}).checked().metrics_host == "::"
    for wrong in ("localhost:9808", "http://0.0.0.0", "256.1.1.1", "every"):
        (problem,) = read_settings({"AIPOOL_METRICS_HOST": wrong}).problems
        assert problem.startswith(f"AIPOOL_METRICS_HOST={wrong}: is not an IP address")
        assert "0.0.0.0" in problem and "\n" not in problem


def test_a_value_that_does_not_fit_names_its_variable_and_value() -> None:
    reading = read_settings(
        {
            "AIPOOL_TIMEZONE": "Mars/Olympus",
            "AIPOOL_ALERTS": "pagerduty",
            "AIPOOL_TASK_TIME_LIMIT": "2m",
        }
    )
    assert len(reading.problems) == 3
    assert any(
        p.startswith("AIPOOL_TIMEZONE=Mars/Olympus: is not a time zone") for p in reading.problems
    )
    assert any(p.startswith("AIPOOL_ALERTS=pagerduty:") for p in reading.problems)
    assert any(p.startswith("AIPOOL_TASK_TIME_LIMIT=2m:") for p in reading.problems)


def test_the_limits_file_sets_limits_the_environment_overrides_it(tmp_path: Path) -> None:
    # Given a limits file and one variable for the same provider
    limits = tmp_path / "limits.toml"
    limits.write_text('[gemini]\nrpm = 20\ndaily_tokens = "unlimited"\nfailure_threshold = 3\n')
    reading = read_settings(
        {"AIPOOL_LIMITS_FILE": str(limits), "AIPOOL_GEMINI_DAILY_REQUESTS": "100"}
    )
    gemini = reading.checked().providers["gemini"]
    # Then the file's values apply, the variable wins where it is set, and each says its source
    assert (gemini.quota.rpm, gemini.quota.daily_tokens, gemini.quota.daily_requests) == (
        20,
        None,
        100,
    )
    assert gemini.breaker.failure_threshold == 3
    assert reading.origin(GEMINI_RPM) == f"file {limits} [gemini] rpm"
    assert reading.origin(("providers", "gemini", "quota", "daily_requests")) == (
        "environment AIPOOL_GEMINI_DAILY_REQUESTS"
    )


def test_unknown_keys_and_sections_of_the_limits_file_are_refused_with_a_suggestion(
    tmp_path: Path,
) -> None:
    limits = tmp_path / "limits.toml"
    limits.write_text("[gemni]\nrpm = 5\n[claude]\nrpn = 5\nrpm = 0\n")
    problems = read_settings({"AIPOOL_LIMITS_FILE": str(limits)}).problems
    assert f"{limits}: [gemni] is not a setting (did you mean gemini?)" in problems
    assert f"{limits}: [claude] rpn is not a setting (did you mean rpm?)" in problems
    assert (
        f"{limits} [claude] rpm = 0: 0 no longer means no limit: write 'unlimited' for no limit"
        in problems
    )


def test_secrets_come_from_the_variable_its_file_or_the_secrets_directory_and_never_show(
    tmp_path: Path,
) -> None:
    (tmp_path / "gemini.key").write_text("from-file\n")
    (tmp_path / "anthropic_api_key").write_text("mounted\n")
    reading = read_settings(
        {
            "GEMINI_API_KEY_FILE": str(tmp_path / "gemini.key"),
            "AIPOOL_SECRETS_DIR": str(tmp_path),
            "NVIDIA_API_KEY": "from-env",
        }
    )
    current = reading.checked()
    assert current.secret("GEMINI_API_KEY") == "from-file"
    assert current.secret("ANTHROPIC_API_KEY") == "mounted"
    assert current.secret("NVIDIA_API_KEY") == "from-env"
    assert current.secret("OLLAMA_API_KEY") is None
    assert reading.origin(("providers", "claude", "api_key")) == (
        f"secret file {tmp_path / 'anthropic_api_key'}"
    )
    assert "from-env" not in repr(current) and "mounted" not in repr(current)
    # A file the operator named but that cannot be read is a problem, not a silent absence
    missing = read_settings({"GEMINI_API_KEY_FILE": str(tmp_path / "nope")}).problems
    assert missing == [
        f"GEMINI_API_KEY_FILE={tmp_path / 'nope'}: cannot read it (No such file or directory)"
    ]


def test_an_empty_variable_is_an_unset_one() -> None:
    reading = read_settings({"AIPOOL_GEMINI_RPM": "", "DATABASE_URL": "  "})
    current = reading.checked()
    assert current.providers["gemini"].quota.rpm == 10
    assert current.database_url is None


def test_limits_below_adr_006s_are_accepted_and_noted() -> None:
    current = read_settings({"AIPOOL_GEMINI_RPM": "5", "AIPOOL_CLAUDE_RPM": "50"}).checked()
    assert current.providers["gemini"].quota.rpm == 5
    assert below_adr_notes(current) == [
        "AIPOOL_GEMINI_RPM=5 is below ADR-006's 10 for gemini: accepted; gemini runs out "
        "sooner than the ADR plans for"
    ]


def test_the_process_settings_follow_its_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    # Given the settings read once
    monkeypatch.delenv("AIPOOL_MODEL_GEMINI", raising=False)
    first = settings()
    assert settings() is first  # kept while the environment is unchanged
    # When a variable changes (as adopting an embedded Redis does), the next call sees it
    monkeypatch.setenv("AIPOOL_MODEL_GEMINI", "gemini-test")
    assert settings().providers["gemini"].model == "gemini-test"
    # And an unknown variable makes every later call refuse
    monkeypatch.setenv("AIPOOL_GEMINI_RPN", "5")
    with pytest.raises(SettingsError, match="AIPOOL_GEMINI_RPN"):
        settings()


def test_no_soft_time_limit_is_said_explicitly() -> None:
    assert (
        read_settings({"AIPOOL_TASK_SOFT_TIME_LIMIT": "unlimited"}).checked().task_soft_time_limit_s
        is None
    )
    assert (
        read_settings({"AIPOOL_TASK_SOFT_TIME_LIMIT": "none"}).checked().task_soft_time_limit_s
        is None
    )
    assert read_settings({}).checked().task_soft_time_limit_s == 90
    assert read_settings({"AIPOOL_TASK_SOFT_TIME_LIMIT": "0"}).problems == [
        "AIPOOL_TASK_SOFT_TIME_LIMIT=0: 0 no longer means no soft limit: write 'unlimited'"
    ]


def test_time_limits_keep_the_soft_limit_within_the_hard_one() -> None:
    # A soft limit above the hard one would make Celery refuse every re-dispatch: refused at start
    refused = read_settings({"AIPOOL_TASK_SOFT_TIME_LIMIT": "200"}).problems
    assert refused == [
        "AIPOOL_TASK_SOFT_TIME_LIMIT=200: must not exceed the hard limit AIPOOL_TASK_TIME_LIMIT (120 s)"
    ]
    # A shorter hard limit alone brings the default soft limit down with it (a quarter before)
    short = read_settings({"AIPOOL_TASK_TIME_LIMIT": "60"}).checked()
    assert (short.task_time_limit_s, short.task_soft_time_limit_s) == (60, 45)
    # and no soft limit at all is said in words, never by 0
    none = read_settings({"AIPOOL_TASK_SOFT_TIME_LIMIT": "none"}).checked()
    assert none.task_soft_time_limit_s is None
    assert read_settings({"AIPOOL_TASK_SOFT_TIME_LIMIT": "0"}).problems


@pytest.mark.parametrize(
    ("name", "refusal"),
    [
        (
            "aipool_gemini_rpm",
            "aipool_gemini_rpm is not a setting: names are upper case "
            "(did you mean AIPOOL_GEMINI_RPM?)",
        ),
        ("AIPOL_GEMINI_RPM", "AIPOL_GEMINI_RPM is not a setting (did you mean AIPOOL_GEMINI_RPM?)"),
        ("AIPOOOL_GEMINI_RPM", "AIPOOOL_GEMINI_RPM is not a setting (did you mean AIPOOL_GEMINI_RPM?)"),
        ("Aipool_Claude_Rpm", "Aipool_Claude_Rpm is not a setting: names are upper case "
            "(did you mean AIPOOL_CLAUDE_RPM?)"),
        ("gemini_api_key", "gemini_api_key is not a setting: names are upper case "
            "(did you mean GEMINI_API_KEY?)"),
    ],
)  # fmt: skip
def test_a_near_miss_of_a_setting_name_is_refused_naming_the_setting(
    name: str, refusal: str
) -> None:
    # Given a limit set under a near miss of its name (its case, a typo of the prefix)
    reading = read_settings({name: "5"})
    # Then the reading is refused in one line naming the setting it resembles
    assert reading.problems == [refusal]


def test_names_of_other_programs_are_not_taken_for_near_misses() -> None:
    environ = {
        "AIRFLOW_HOME": "/a",
        "API_KEY": "x",
        "APOLLO_URL": "y",
        "AI_MODEL": "z",
        "PATH": "/",
    }
    assert read_settings(environ).problems == []


def test_a_retired_setting_is_refused_saying_why() -> None:
    # Given AIPOOL_LOG_PROMPTS, which once put the last user message in every hop's log line
    problems = read_settings({"AIPOOL_LOG_PROMPTS": "1"}).problems
    # Then it is refused: prompts never go to the logs, whatever is set
    assert problems == [
        "AIPOOL_LOG_PROMPTS is no longer a setting: the pool never writes prompt text to its "
        "logs, at any level (docs/operations.md, What the pool stores, and where)"
    ]


@pytest.mark.parametrize(
    "name",
    [
        "AIPOOL_TIMEOUT_GEMINI",
        "AIPOOL_TIMEOUT_OLLAMA",
        "AIPOOL_CLAUDE_RECOVERY_TIMEOUT",
        "AIPOOL_REDIS_SOCKET_TIMEOUT",
        "AIPOOL_REDIS_CONNECT_TIMEOUT",
    ],
)
@pytest.mark.parametrize("value", ["inf", "Infinity", "nan"])
def test_an_infinite_or_undefined_time_is_refused(name: str, value: str) -> None:
    # Given a timeout or a breaker's recovery time of inf (a call nothing ends, a breaker that
    # never probes again) or nan (never greater or smaller than anything)
    problems = read_settings({name: value}).problems
    # Then it is refused, naming the variable, the value and why
    assert problems == [f"{name}={value}: Input should be a finite number"]


def test_a_visibility_timeout_within_the_hard_limit_is_refused_naming_both() -> None:
    # Given a visibility timeout below the hard time limit, then one equal to it
    for visibility in ("100", "120"):
        problems = read_settings(
            {"AIPOOL_VISIBILITY_TIMEOUT": visibility, "AIPOOL_TASK_TIME_LIMIT": "120"}
        ).problems
        # Then it is refused, naming both values and the promise it breaks
        assert problems == [
            f"AIPOOL_VISIBILITY_TIMEOUT={visibility}: must exceed the hard limit "
            f"AIPOOL_TASK_TIME_LIMIT=120: a hop still running after {visibility} s would be "
            "given to a second worker and run twice (unset, it is the hard limit + 60 s)"
        ]
    # And one above it is accepted
    assert read_settings({"AIPOOL_VISIBILITY_TIMEOUT": "121"}).problems == []


def test_an_empty_key_file_is_refused_rather_than_served_without_the_key(tmp_path: Path) -> None:
    # Given a key file left empty (printf %s "$GEMINI_API_KEY" > file, the variable unset), and an
    # empty secret mounted where Docker and Kubernetes put them
    (tmp_path / "gemini.key").write_text("\n")
    (tmp_path / "anthropic_api_key").write_text("")
    reading = read_settings(
        {"GEMINI_API_KEY_FILE": str(tmp_path / "gemini.key"), "AIPOOL_SECRETS_DIR": str(tmp_path)}
    )
    # Then both are refused, naming the file and what to do
    assert reading.problems == [
        f"GEMINI_API_KEY_FILE={tmp_path / 'gemini.key'}: the file is empty; put GEMINI_API_KEY "
        "in it, or unset GEMINI_API_KEY_FILE",
        f"secret file {tmp_path / 'anthropic_api_key'} is empty; put ANTHROPIC_API_KEY in it, "
        "or remove it",
    ]
