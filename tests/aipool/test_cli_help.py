"""``aipool --help``, the first screen a newcomer reads: each command in a sentence that flows, in
plain words (no reStructuredText marks from the docstrings it comes from)."""

from __future__ import annotations

import pytest

from aipool.cli import run


def _help(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, *argv: str) -> str:
    monkeypatch.setenv("COLUMNS", "80")
    assert run([*argv, "--help"]) == 0
    return capsys.readouterr().out


def _rows(text: str, command: str) -> list[str]:
    """The text of the listing's rows that describe ``command`` (its row and the rows that
    continue it), without the box."""
    rows: list[str] = []
    for line in text.splitlines():
        cells = line.strip("│ ").split(None, 1)
        if rows and cells and line.startswith("│" + " " * 10):
            rows.append(line.strip("│ "))
        elif rows:
            break
        elif cells and cells[0] == command:
            rows.append(cells[1] if len(cells) > 1 else "")
    return rows


@pytest.mark.parametrize(
    ("argv", "command"),
    [((), "status"), ((), "demo"), ((), "worker"), (("route",), "train")],
)
def test_each_command_is_listed_in_rows_that_fill_the_width(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    argv: tuple[str, ...],
    command: str,
) -> None:
    text = _help(capsys, monkeypatch, *argv)
    rows = _rows(text, command)
    assert rows, text
    # Then no row but the last breaks early, where the docstring's line ended
    longest = max(len(r) for r in rows)
    assert all(len(r) > longest - 15 for r in rows[:-1]), rows


@pytest.mark.parametrize("argv", [(), ("status",), ("report",), ("route",)])
def test_help_shows_no_markup_of_the_docstrings(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, argv: tuple[str, ...]
) -> None:
    assert "``" not in _help(capsys, monkeypatch, *argv)
