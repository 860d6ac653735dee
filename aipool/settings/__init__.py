"""The pool's settings: one typed model, the one place that reads the environment.

:func:`settings` is what the pool's code asks. It reads the environment, ``<SECRET>_FILE``
variables, mounted secrets and the limits file (:mod:`aipool.settings.sources`) into a
:class:`Settings`, and refuses the lot with :class:`~aipool.errors.SettingsError` when an
``AIPOOL_*`` variable or a limits-file key is unknown (naming the closest valid one) or a value
does not fit. Workers, beat and every ``aipool`` command call it before they start.

The result is kept until the environment changes: a process that adopts an embedded Redis (which
sets ``REDIS_URL``) or a test that sets a variable gets fresh settings on its next call. Files are
read when the environment changes, not when they do.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from aipool.errors import SettingsError
from aipool.settings.model import ProviderSettings, Settings
from aipool.settings.names import NAME_OF, SECRETS, Path, not_a_setting, unknown_names
from aipool.settings.provider_limits import (
    ADR_LIMITS,
    UNLIMITED,
    BreakerSettings,
    ProviderLimits,
    QuotaLimits,
)
from aipool.settings.sources import DEFAULT, gathering

__all__ = [
    "ADR_LIMITS",
    "UNLIMITED",
    "BreakerSettings",
    "ProviderLimits",
    "ProviderSettings",
    "QuotaLimits",
    "Reading",
    "Settings",
    "SettingsError",
    "read_settings",
    "settings",
]

_SECRET_PATHS = frozenset(SECRETS.values())


@dataclass
class Reading:
    """One reading of an environment: the settings (``None`` when refused), where each value
    came from, and every problem found."""

    settings: Settings | None
    origins: dict[Path, str] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)

    def origin(self, path: Path) -> str:
        """Where the value at ``path`` came from: ``environment NAME``, ``file ...`` or default."""
        return self.origins.get(path, DEFAULT)

    def checked(self) -> Settings:
        """The settings, or :class:`SettingsError` naming every problem."""
        if self.problems or self.settings is None:
            raise SettingsError(self.problems or ["the settings could not be read"])
        return self.settings


def read_settings(environ: Mapping[str, str] | None = None) -> Reading:
    """Read the settings from ``environ`` (default ``os.environ``), keeping every problem."""
    source = os.environ if environ is None else environ
    problems = [not_a_setting(name) for name in unknown_names(source)]
    with gathering(source) as found:
        try:
            # Every field is filled by the sources (aipool.settings.sources), defaults included.
            built: Settings | None = Settings()  # type: ignore[call-arg]
        except ValidationError as exc:
            built = None
            problems.extend(_explain(error, found.origins) for error in exc.errors())
    return Reading(built, found.origins, problems + found.problems)


def _explain(error: Any, origins: dict[Path, str]) -> str:
    """One validation error as the operator wrote it: ``NAME=value: what is wrong``."""
    path = tuple(str(part) for part in error["loc"])
    message = str(error["msg"]).removeprefix("Value error, ")
    value = "<secret>" if path in _SECRET_PATHS else _without_password(error.get("input"))
    origin = origins.get(path, "")
    if origin.startswith("environment "):
        return f"{origin.removeprefix('environment ')}={value}: {message}"
    if origin.startswith("file "):
        return f"{origin.removeprefix('file ')} = {value!r}: {message}"
    return f"{NAME_OF.get(path, '.'.join(path))}: {message}"


def _without_password(value: Any) -> Any:
    """A URL's password replaced by ``***`` (``redis://:pw@host`` is still shown as typed)."""
    if isinstance(value, str):
        return re.sub(r"(://[^/@:]*:)[^/@]*@", r"\1***@", value)
    return value


_lock = threading.Lock()
_current: tuple[dict[Any, Any], Settings] | None = None


def settings() -> Settings:
    """The settings of this process's current environment; raises :class:`SettingsError`."""
    global _current
    # Comparing the environment's own dict with a copy costs about a microsecond, so the hot path
    # can ask on every hop and still see a variable a process (or test) has just set.
    data = os.environ._data  # type: ignore[attr-defined]
    current = _current
    if current is not None and current[0] == data:
        return current[1]
    with _lock:
        snapshot = dict(data)
        built = read_settings(os.environ).checked()
        _current = (snapshot, built)
        return built
