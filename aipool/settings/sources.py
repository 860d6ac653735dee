"""Where settings come from, highest first: the environment, secret files, the limits file, and
the defaults. Each source notes the origin of every value it gives, for ``aipool config``, and the
problems it finds (unknown keys, unreadable files), so all of them are reported at once.
"""

from __future__ import annotations

import tomllib
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import asdict, dataclass, field
from pathlib import Path as FilePath
from typing import Any

from pydantic.fields import FieldInfo
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource

from aipool.providers.catalog import CATALOG, PROVIDERS
from aipool.settings.names import (
    ENVIRONMENT,
    SECRETS,
    Path,
    closest,
)
from aipool.settings.provider_limits import ADR_LIMITS, BREAKER_KEYS, LIMIT_KEYS

DEFAULT = "default"


@dataclass
class Gathering:
    """What the sources found in one reading of ``environ``."""

    environ: Mapping[str, str]
    origins: dict[Path, str] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)

    def value(self, name: str) -> str | None:
        """``name``'s value; an empty variable is the same as an unset one."""
        value = self.environ.get(name)
        return value.strip() if value is not None and value.strip() else None


_GATHERING: ContextVar[Gathering | None] = ContextVar("aipool_settings_gathering", default=None)


@contextmanager
def gathering(environ: Mapping[str, str]) -> Iterator[Gathering]:
    """Gather settings from ``environ`` for the :class:`Settings` built inside the block."""
    found = Gathering(environ)
    token = _GATHERING.set(found)
    try:
        yield found
    finally:
        _GATHERING.reset(token)


def _put(tree: dict[str, Any], path: Path, value: Any) -> None:
    for key in path[:-1]:
        tree = tree.setdefault(key, {})
    tree[path[-1]] = value


class _PoolSource(PydanticBaseSettingsSource):
    """A source that builds its whole tree at once (the pool's names do not follow field names)."""

    def __init__(self, settings_cls: type[BaseSettings], found: Gathering) -> None:
        super().__init__(settings_cls)
        self.found = found

    def get_field_value(self, field: FieldInfo, field_name: str) -> tuple[Any, str, bool]:
        # Unused: __call__ builds the tree directly.
        return None, field_name, False

    def give(self, tree: dict[str, Any], path: Path, value: Any, origin: str) -> None:
        _put(tree, path, value)
        self.found.origins.setdefault(path, origin)


class EnvironmentSource(_PoolSource):
    """Every variable of :data:`~aipool.settings.names.ENVIRONMENT` that is set."""

    def __call__(self) -> dict[str, Any]:
        tree: dict[str, Any] = {}
        for name, path in ENVIRONMENT.items():
            value = self.found.value(name)
            if value is not None:
                self.give(tree, path, value, f"environment {name}")
        return tree


class SecretFileSource(_PoolSource):
    """Secrets not in the environment: the file ``<NAME>_FILE`` names, else the mounted secret
    ``$AIPOOL_SECRETS_DIR/<name>`` (``/run/secrets`` by default, where Docker and Kubernetes put
    them). A ``<NAME>_FILE`` that cannot be read is a problem; a missing mounted secret is not.
    A secret file that is there and empty is a problem either way: it is what
    ``printf %s "$GEMINI_API_KEY" > gemini_api_key`` leaves when the variable was not set, and
    serving without the key would fail every call with 401."""

    def __call__(self) -> dict[str, Any]:
        tree: dict[str, Any] = {}
        directory = FilePath(self.found.value("AIPOOL_SECRETS_DIR") or "/run/secrets")
        for name, path in SECRETS.items():
            if self.found.value(name) is not None:
                continue
            named = self.found.value(f"{name}_FILE")
            if named is not None:
                text = self._read(FilePath(named), f"{name}_FILE={named}", name)
                if text:
                    self.give(tree, path, text, f"file {named} ({name}_FILE)")
                continue
            mounted = directory / name.lower()
            text = self._read(mounted, None, name)
            if text:
                self.give(tree, path, text, f"secret file {mounted}")
        return tree

    def _read(self, path: FilePath, variable: str | None, name: str) -> str | None:
        try:
            text = path.read_text(encoding="utf-8").strip()
        except OSError as exc:
            if variable is not None:
                self.found.problems.append(f"{variable}: cannot read it ({exc.strerror})")
            return None
        if not text:
            if variable is not None:
                fix = f"put {name} in it, or unset {name}_FILE"
                self.found.problems.append(f"{variable}: the file is empty; {fix}")
            else:
                fix = f"put {name} in it, or remove it"
                self.found.problems.append(f"secret file {path} is empty; {fix}")
            return None
        return text


class LimitsFileSource(_PoolSource):
    """The TOML file ``AIPOOL_LIMITS_FILE`` names: one ``[provider]`` table of limits each."""

    def __call__(self) -> dict[str, Any]:
        tree: dict[str, Any] = {}
        named = self.found.value("AIPOOL_LIMITS_FILE")
        if named is None:
            return tree
        try:
            with open(named, "rb") as handle:
                data = tomllib.load(handle)
        except OSError as exc:
            self.found.problems.append(
                f"AIPOOL_LIMITS_FILE={named}: cannot read it ({exc.strerror})"
            )
            return tree
        except tomllib.TOMLDecodeError as exc:
            self.found.problems.append(f"AIPOOL_LIMITS_FILE={named}: not TOML ({exc})")
            return tree
        for provider, section in data.items():
            if provider not in PROVIDERS:
                self.found.problems.append(_unknown(named, f"[{provider}]", provider, PROVIDERS))
                continue
            if not isinstance(section, dict):
                self.found.problems.append(f"{named}: {provider} must be a [{provider}] table")
                continue
            for key, value in section.items():
                if key not in LIMIT_KEYS:
                    self.found.problems.append(
                        _unknown(named, f"[{provider}] {key}", key, LIMIT_KEYS)
                    )
                    continue
                group = "breaker" if key in BREAKER_KEYS else "quota"
                self.give(
                    tree,
                    ("providers", provider, group, key),
                    value,
                    f"file {named} [{provider}] {key}",
                )
        return tree


def _unknown(file: str, where: str, key: str, valid: tuple[str, ...]) -> str:
    guess = closest(key, valid)
    hint = f" (did you mean {guess}?)" if guess else f" (valid: {', '.join(valid)})"
    return f"{file}: {where} is not a setting{hint}"


class DefaultsSource(_PoolSource):
    """Each provider's defaults (ADR-006's limits), under whatever the other sources set."""

    def __call__(self) -> dict[str, Any]:
        return {
            "providers": {
                p: {
                    "base_url": CATALOG[p].base_url,
                    "model": CATALOG[p].model,
                    "timeout_s": CATALOG[p].timeout_s,
                    "breaker": asdict(ADR_LIMITS[p].breaker),
                    "quota": asdict(ADR_LIMITS[p].quota),
                }
                for p in PROVIDERS
            }
        }


def pool_sources(settings_cls: type[BaseSettings]) -> tuple[PydanticBaseSettingsSource, ...]:
    """The pool's sources, highest first, for the reading in progress (or ``os.environ``)."""
    found = _GATHERING.get()
    if found is None:
        import os

        found = Gathering(os.environ)
    return tuple(
        source(settings_cls, found)
        for source in (EnvironmentSource, SecretFileSource, LimitsFileSource, DefaultsSource)
    )
