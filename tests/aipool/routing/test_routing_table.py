"""The route table as data: the packaged defaults, validation and the file override."""

from __future__ import annotations

from pathlib import Path

import pytest

from aipool.routing.table import (
    DEFAULT_ROUTES_FILE,
    RouteTableError,
    load_table,
    parse_table,
    routes_path,
)


def test_packaged_table_holds_the_adr_rules_in_order() -> None:
    # Given no override, When the table is loaded
    table = load_table(DEFAULT_ROUTES_FILE)
    # Then the rules are the ADR-006 ones, the special cases before the complexity bands
    assert [r.name for r in table.rules] == [
        "critical",
        "tools",
        "tool_call",
        "code_review",
        "complex_alert_triage",
        "simple_query",
        "complexity_high",
        "complexity_medium",
        "complexity_low",
    ]


def test_env_names_the_route_file(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # Given AIPOOL_ROUTES_FILE pointing at a file
    path = tmp_path / "routes.toml"
    path.write_text('[[rules]]\nname = "all_claude"\nprovider = "claude"\n', encoding="utf-8")
    monkeypatch.setenv("AIPOOL_ROUTES_FILE", str(path))
    # When the table is loaded without a path, Then that file is used
    assert routes_path() == path
    assert [r.name for r in load_table().rules] == ["all_claude"]


def test_edited_file_is_reloaded(tmp_path: Path) -> None:
    # Given a loaded table file that is then rewritten
    path = tmp_path / "routes.toml"
    path.write_text('[[rules]]\nname = "a"\nprovider = "claude"\n', encoding="utf-8")
    assert load_table(path).rules[0].name == "a"
    path.write_text('[[rules]]\nname = "bb"\nprovider = "gemini"\n', encoding="utf-8")
    # When it is loaded again, Then the new rules are in force
    assert load_table(path).rules[0].name == "bb"


@pytest.mark.parametrize(
    ("rules", "message"),
    [
        ([{"name": "x", "provider": "openai"}], "provider"),
        ([{"name": "x", "provider": "claude", "intnets": ["QUERY"]}], "unknown key"),
        ([{"name": "x", "provider": "claude", "intents": ["QUERRY"]}], "unknown intent"),
        ([{"name": "x", "provider": "claude", "min_complexity": 9}], "between 1 and 5"),
        ([{"name": "x", "provider": "claude", "chain": "fast"}], "chain"),
        ([{"provider": "claude"}], "name"),
        ([{"name": "x", "provider": "claude"}, {"name": "x", "provider": "gemini"}], "twice"),
        ([], "at least one"),
        # Requests say "critical": a rule for "Critical" would match none (issue #21)
        (
            [{"name": "x", "provider": "claude", "priorities": ["Critical"]}],
            r"rule 'x': unknown priority 'Critical' \(did you mean 'critical'\? priorities are "
            r"low, normal, high, critical\)",
        ),
        ([{"name": "x", "provider": "claude", "priorities": ["urgent"]}], "unknown priority"),
    ],
)
def test_malformed_tables_are_refused(rules: list[dict[str, object]], message: str) -> None:
    # Given a malformed table, When parsed, Then a RouteTableError names the problem
    with pytest.raises(RouteTableError, match=message):
        parse_table({"rules": rules})


def test_unparseable_file_is_refused(tmp_path: Path) -> None:
    # Given a file that is not TOML, When loaded, Then RouteTableError
    path = tmp_path / "routes.toml"
    path.write_text("[[rules]\n", encoding="utf-8")
    with pytest.raises(RouteTableError):
        load_table(path)


def test_missing_file_is_refused(tmp_path: Path) -> None:
    # Given a path with no file, When loaded, Then RouteTableError
    with pytest.raises(RouteTableError, match="cannot read"):
        load_table(tmp_path / "nope.toml")


@pytest.mark.parametrize(
    ("key", "value", "said"),
    [
        ("thinking", 1.5, "'thinking' must be the share of max_tokens"),
        ("thinking", -0.1, "'thinking' must be the share of max_tokens"),
        ("thinking", True, "'thinking' must be the share of max_tokens"),
        ("on_refusal", "maybe", "'on_refusal' must be one of end, next"),
    ],
)
def test_a_rules_thinking_share_and_refusal_are_checked(key: str, value: object, said: str) -> None:
    rule = {"name": "r", "provider": "gemini", key: value}
    with pytest.raises(RouteTableError, match=said):
        parse_table({"rules": [rule]})
