"""The runtime lock of the image: every distribution ``aipool`` needs to run, pinned.

``requirements.lock`` is the closure of the project's runtime dependencies (``[project]
dependencies``, extras followed, markers evaluated for Linux and this Python) at the versions the
test suite ran against. The Dockerfile installs exactly it, so the image runs what CI tested.
After a dependency changes, write it anew::

    .venv/bin/python -m tests.deploy.runtime_lock > requirements.lock
"""

from __future__ import annotations

from importlib import metadata

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

HEADER = """\
# The image's runtime dependencies, pinned: the closure of aipool's [project] dependencies at the
# versions the test suite ran against (tests/deploy/test_dockerfile.py keeps it so).
# Regenerate: .venv/bin/python -m tests.deploy.runtime_lock > requirements.lock
"""


def runtime_closure(root: str = "aipool") -> dict[str, str]:
    """Canonical name -> installed version of every distribution ``root`` needs at run time."""
    seen: dict[str, tuple[str, frozenset[str]]] = {}
    todo: list[tuple[str, frozenset[str]]] = [(root, frozenset())]
    while todo:
        name, extras = todo.pop()
        dist = metadata.distribution(name)
        key = canonicalize_name(dist.metadata["Name"])
        known = seen.get(key)
        if known is not None and extras <= known[1]:
            continue
        seen[key] = (dist.version, (known[1] if known else frozenset()) | extras)
        for raw in dist.requires or []:
            requirement = Requirement(raw)
            environments = [{"extra": extra} for extra in (extras or {""})]
            marker = requirement.marker
            if marker is not None and not any(marker.evaluate(env) for env in environments):
                continue
            todo.append((requirement.name, frozenset(requirement.extras)))
    seen.pop(canonicalize_name(root))
    return {name: version for name, (version, _) in sorted(seen.items())}


def render() -> str:
    """The text of ``requirements.lock`` for the environment this runs in."""
    return HEADER + "".join(f"{name}=={version}\n" for name, version in runtime_closure().items())


if __name__ == "__main__":
    print(render(), end="")
