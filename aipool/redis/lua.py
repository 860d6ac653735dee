"""Lua scripts shipped as package files, registered once per Redis client.

Each script is loaded from a ``.lua`` file next to the Python that runs it and registered with
``register_script``, so every call is one EVALSHA (redis-py reloads the script by itself if the
server lost it, e.g. after a restart).
"""

from __future__ import annotations

import weakref
from importlib import resources
from typing import Any

from redis.commands.core import Script


class LuaScripts:
    """The named ``.lua`` files of one package, registered lazily and once per client."""

    def __init__(self, package: str, *names: str, composed: dict[str, str] | None = None) -> None:
        self._sources = {name: source(package, name) for name in names}
        self._sources.update(composed or {})
        _ALL.append(self)
        self._registered: weakref.WeakKeyDictionary[Any, dict[str, Script]] = (
            weakref.WeakKeyDictionary()
        )

    def for_client(self, client: Any) -> dict[str, Script]:
        """The scripts bound to ``client``; the same objects on every call for one client."""
        scripts = self._registered.get(client)
        if scripts is None:
            scripts = {name: client.register_script(src) for name, src in self._sources.items()}
            self._registered[client] = scripts
        return scripts


_ALL: list[LuaScripts] = []


def evalsha_in(pipe: Any, script: Script, keys: list[Any], args: list[Any]) -> None:
    """Queue ``script`` on ``pipe`` by its SHA alone.

    redis-py sends SCRIPT EXISTS before every pipeline that holds a ``Script`` (one more round
    trip per outcome); a Redis that lost its scripts answers NOSCRIPT instead, and the caller
    loads the script and runs the pipeline once more (:func:`aipool.redis.durability.run_acknowledged`).
    Only for a pipeline whose other commands may run twice (a ``WAIT``): a pipeline is not a
    transaction, so the commands around a refused EVALSHA have already run when NOSCRIPT comes back.
    """
    pipe.evalsha(script.sha, len(keys), *keys, *args)  # type: ignore[attr-defined]


def source(package: str, name: str) -> str:
    """The text of ``<name>.lua`` shipped in ``package``."""
    return resources.files(package).joinpath(f"{name}.lua").read_text(encoding="utf-8")


def compose(template: str, **functions: str) -> str:
    """``template`` preceded by whole scripts turned into local functions of ``(KEYS, ARGV)``.

    One script can then run what several scripts do, atomically and in one round trip, while
    each piece stays one ``.lua`` file with its own tests.
    """
    parts = [
        f"local function {name}(KEYS, ARGV)\n{body}\nend\n" for name, body in functions.items()
    ]
    return "".join(parts) + template


def text(value: Any) -> str:
    """A Redis reply as ``str`` whether or not the client decodes responses."""
    if isinstance(value, bytes):
        return value.decode()
    return str(value)
