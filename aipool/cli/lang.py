"""The ``--lang`` option of ``report`` and ``status``: zh-TW (ADR-006's language) or English."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

import typer


class LangChoice(StrEnum):
    zh_TW = "zh-TW"
    en = "en"


LangOption = Annotated[
    LangChoice | None,
    typer.Option("--lang", help="zh-TW or en (default: AIPOOL_ALERT_LANG, else zh-TW)."),
]


def chosen(lang: LangChoice | None) -> str:
    """The language to print in: ``--lang``, else ``AIPOOL_ALERT_LANG``, else zh-TW."""
    from aipool.budget.messages import alert_lang

    return alert_lang(str(lang) if lang else None)
