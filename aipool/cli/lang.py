"""The ``--lang`` option of ``report`` and ``status``: English unless zh-TW (ADR-006's language)
is asked for. One language per output: every heading and title of a command follows it.
``AIPOOL_ALERT_LANG`` is the alerts' and the daily report's language, not the commands'."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

import typer


class LangChoice(StrEnum):
    zh_TW = "zh-TW"
    en = "en"


LangOption = Annotated[
    LangChoice | None,
    typer.Option("--lang", help="en (default) or zh-TW: the language of every heading."),
]


def chosen(lang: LangChoice | None) -> str:
    """The language to print in: ``--lang``, else English."""
    return str(lang) if lang else "en"
