"""The lock files: every distribution the pool, its checks and its scanners install, pinned and hashed.

pip-tools' resolver writes them (``.ci/lock``, pip-compile pinned in the dev lock):

- ``requirements.lock``: the closure of the project's runtime dependencies (``[project]
  dependencies``), with pip and the build backend (``requirements-installers.in``). The Dockerfile
  installs exactly it, so the image runs what CI tested.
- ``requirements-dev.lock``: everything the checks run, at the runtime lock's versions: the
  ``dev`` extra's closure and the installers. ``make install`` (and so ``make test`` and CI)
  installs it with ``--require-hashes``, then the project itself without build isolation.
- ``requirements-scan.lock``: the scanners (``requirements-scan.in``), in a venv of their own.

A new upstream release changes nothing until the locks are refreshed on purpose::

    make lock          # every pin to the newest release the ranges allow (.ci/lock --upgrade)
    make test          # reinstalls .venv from the new locks and runs every check

``.ci/lock`` alone adds what ``pyproject.toml`` newly asks for and keeps every other pin.
``make upstream-check`` runs the suite against the newest releases without touching the locks,
and names the releases that differ from them (``python -m tests.deploy.locks --drift``): the early
warning that a refresh will need work.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[2]
RUNTIME_LOCK = ROOT / "requirements.lock"
DEV_LOCK = ROOT / "requirements-dev.lock"
SCAN_LOCK = ROOT / "requirements-scan.lock"

#: The installers both the image and ``make install`` take from the locks.
INSTALLERS = ("pip", "setuptools")

_HASH = re.compile(r"--hash=sha256:([0-9a-f]{64})")


@dataclass(frozen=True)
class Pin:
    """One locked distribution: its exact version and the hashes of its accepted files."""

    version: str
    hashes: tuple[str, ...]


def read_lock(path: Path) -> dict[str, Pin]:
    """The pins of a lock file written by pip-compile: canonical name -> :class:`Pin`."""
    text = path.read_text(encoding="utf-8")
    # One requirement per logical line: pip-compile continues it with backslashes.
    logical = re.sub(r"\\\n\s*", " ", text)
    pins = {}
    for line in logical.splitlines():
        if not line or line.startswith(("#", " ", "-")):
            continue
        spec, _, _ = line.partition(" --hash")
        requirement = Requirement(spec.strip())
        (specifier,) = requirement.specifier
        if specifier.operator != "==":
            raise ValueError(f"{path.name}: {spec.strip()} is not an exact pin")
        pins[canonicalize_name(requirement.name)] = Pin(
            specifier.version, tuple(_HASH.findall(line))
        )
    return pins


def read_pins(path: Path) -> dict[str, str]:
    """The pins of a lock file: canonical name -> version."""
    return {name: pin.version for name, pin in read_lock(path).items()}


def closure(root: str = "aipool", extras: frozenset[str] = frozenset()) -> dict[str, str]:
    """Canonical name -> installed version of every distribution ``root[extras]`` needs."""
    seen: dict[str, tuple[str, frozenset[str]]] = {}
    todo: list[tuple[str, frozenset[str]]] = [(root, extras)]
    while todo:
        name, wanted = todo.pop()
        dist = metadata.distribution(name)
        key = canonicalize_name(dist.metadata["Name"])
        known = seen.get(key)
        if known is not None and wanted <= known[1]:
            continue
        seen[key] = (dist.version, (known[1] if known else frozenset()) | wanted)
        for raw in dist.requires or []:
            requirement = Requirement(raw)
            environments = [{"extra": extra} for extra in (wanted or {""})]
            marker = requirement.marker
            if marker is not None and not any(marker.evaluate(env) for env in environments):
                continue
            todo.append((requirement.name, frozenset(requirement.extras)))
    seen.pop(canonicalize_name(root))
    return {name: version for name, (version, _) in sorted(seen.items())}


def installed() -> dict[str, str]:
    """Canonical name -> version of every distribution in this environment but the project."""
    found = {canonicalize_name(d.metadata["Name"]): d.version for d in metadata.distributions()}
    found.pop("aipool", None)
    return dict(sorted(found.items()))


def runtime_pins() -> dict[str, str]:
    """What ``requirements.lock`` must pin, as installed: the runtime closure and the installers."""
    pins = closure()
    for installer in INSTALLERS:
        pins[canonicalize_name(installer)] = metadata.version(installer)
    return dict(sorted(pins.items()))


def drift() -> dict[str, tuple[str, str]]:
    """Name -> (locked, installed) for every locked distribution installed at another version."""
    locked = read_pins(DEV_LOCK)
    found = installed()
    return {k: (v, found[k]) for k, v in sorted(locked.items()) if k in found and found[k] != v}


def main(argv: list[str]) -> int:
    """``--drift``: name what this environment has at other versions than the locks (exit 1)."""
    if argv == ["--drift"]:
        differs = drift()
        for name, (locked, newest) in differs.items():
            print(f"{name}: locked {locked}, newest {newest}")
        if not differs:
            print("the newest releases are the locked ones")
        return 1 if differs else 0
    print(
        "usage: python -m tests.deploy.locks --drift  (.ci/lock writes the locks)", file=sys.stderr
    )
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
