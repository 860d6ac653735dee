"""The two lock files: every distribution the pool and its checks install, pinned.

- ``requirements.lock``: the closure of the project's runtime dependencies (``[project]
  dependencies``, extras followed, markers evaluated for Linux and this Python). The Dockerfile
  installs exactly it, so the image runs what CI tested.
- ``requirements-dev.lock``: what the checks add on top (the ``dev`` extra's closure less the
  runtime's), and the installers themselves (pip, setuptools), since ``make install`` builds the
  project without build isolation so that no unpinned setuptools is fetched for the build.

``make install`` (and so ``make test`` and CI) installs with both files as constraints: a new
upstream release changes nothing until the locks are refreshed on purpose. To refresh them from
the newest releases the ranges in ``pyproject.toml`` allow, then check them::

    make lock          # a scratch venv of the newest releases writes both files
    make test          # reinstalls .venv from the new locks and runs every check

``make upstream-check`` runs the suite against the newest releases without touching the locks,
and names the releases that differ from them: the early warning that a refresh will need work.
"""

from __future__ import annotations

import sys
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[2]
RUNTIME_LOCK = ROOT / "requirements.lock"
DEV_LOCK = ROOT / "requirements-dev.lock"

# The installers make install pins before it installs anything else.
INSTALLERS = ("pip", "setuptools")

RUNTIME_HEADER = """\
# The image's runtime dependencies, pinned: the closure of aipool's [project] dependencies at the
# versions the test suite ran against (tests/deploy/test_dockerfile.py keeps it so).
# Refresh: make lock (tests/deploy/locks.py says how)
"""

DEV_HEADER = """\
# What the checks install on top of requirements.lock, pinned: the dev extra's closure and the
# installers. make install uses both files as constraints (tests/deploy/locks.py says how).
# Refresh: make lock
"""


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


def runtime_pins() -> dict[str, str]:
    """The runtime closure, as installed."""
    return closure()


def dev_pins() -> dict[str, str]:
    """The dev extra's closure less the runtime's, plus the installers, as installed."""
    runtime = runtime_pins()
    dev = {k: v for k, v in closure(extras=frozenset({"dev"})).items() if k not in runtime}
    for installer in INSTALLERS:
        if canonicalize_name(installer) not in runtime:
            dev[canonicalize_name(installer)] = metadata.version(installer)
    return dict(sorted(dev.items()))


def _render(header: str, pins: dict[str, str]) -> str:
    return header + "".join(f"{name}=={version}\n" for name, version in pins.items())


def render_runtime() -> str:
    """The text of ``requirements.lock`` for the environment this runs in."""
    return _render(RUNTIME_HEADER, runtime_pins())


def render_dev() -> str:
    """The text of ``requirements-dev.lock`` for the environment this runs in."""
    return _render(DEV_HEADER, dev_pins())


def read_pins(path: Path) -> dict[str, str]:
    """The pins of a lock file: canonical name -> version."""
    pins = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if "==" in line and not line.startswith("#"):
            name, version = line.split("==", 1)
            pins[canonicalize_name(name)] = version.strip()
    return pins


def drift() -> dict[str, tuple[str, str]]:
    """Name -> (locked, installed) for every locked distribution installed at another version."""
    locked = read_pins(RUNTIME_LOCK) | read_pins(DEV_LOCK)
    found = runtime_pins() | dev_pins()
    return {k: (v, found[k]) for k, v in sorted(locked.items()) if k in found and found[k] != v}


def main(argv: list[str]) -> int:
    """``--write``: write both locks; ``--drift``: name what differs from them (exit 1 if any)."""
    if argv == ["--write"]:
        RUNTIME_LOCK.write_text(render_runtime(), encoding="utf-8")
        DEV_LOCK.write_text(render_dev(), encoding="utf-8")
        print(f"wrote {RUNTIME_LOCK.name} and {DEV_LOCK.name}")
        return 0
    if argv == ["--drift"]:
        differs = drift()
        for name, (locked, installed) in differs.items():
            print(f"{name}: locked {locked}, newest {installed}")
        if not differs:
            print("the newest releases are the locked ones")
        return 1 if differs else 0
    print("usage: python -m tests.deploy.locks --write | --drift", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
