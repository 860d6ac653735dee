"""The ``--by`` option of ``report`` and ``status``: usage per provider (the default) or per
producing service (the services the route table declares, and ``other``)."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

import typer


class By(StrEnum):
    provider = "provider"
    service = "service"


ByOption = Annotated[
    By,
    typer.Option(
        "--by",
        help="provider (default): usage per provider; service: per producing service, with "
        "its budget and shares.",
    ),
]
