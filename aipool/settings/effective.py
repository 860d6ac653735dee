"""The effective settings as rows an operator reads: each variable, its value (secrets masked) and
where the value came from (default, environment, a file). ``aipool config`` prints them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import SecretStr

from aipool.settings import Reading
from aipool.settings.names import ENVIRONMENT, SECRETS
from aipool.settings.provider_limits import QUOTA_KEYS, UNLIMITED

MASK = "********"


@dataclass(frozen=True)
class Row:
    """One setting: the variable that sets it, its value as text and where it came from."""

    name: str
    value: str
    source: str

    def to_dict(self) -> dict[str, str]:
        return {"name": self.name, "value": self.value, "source": self.source}


def _at(node: Any, path: tuple[str, ...]) -> Any:
    for key in path:
        node = node[key] if isinstance(node, dict) else getattr(node, key)
    return node


def _shown(path: tuple[str, ...], value: Any) -> str:
    if isinstance(value, SecretStr):
        return MASK
    if value is None:
        return UNLIMITED if path[-1] in QUOTA_KEYS else "(unset)"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, tuple):
        return ",".join(value)
    return str(value)


def effective_rows(reading: Reading) -> list[Row]:
    """A row per variable of :data:`~aipool.settings.names.ENVIRONMENT`, in its order.

    Raises :class:`~aipool.errors.SettingsError` when the reading was refused."""
    current = reading.checked()
    rows = []
    for name, path in ENVIRONMENT.items():
        value = _at(current, path)
        source = reading.origin(path)
        if name == "AIPOOL_VISIBILITY_TIMEOUT" and value is None:
            value, source = current.effective_visibility_timeout_s, "default (hard limit + 60 s)"
        if name in SECRETS and value is None:
            mounted = current.secrets_dir / name.lower()
            source = f"not set: neither {name}, {name}_FILE nor {mounted}"
        rows.append(Row(name, _shown(path, value), source))
    return rows
