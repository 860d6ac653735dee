"""Host clocks shifted with libfaketime, for pool processes whose clocks disagree with Redis's."""

from __future__ import annotations

from pathlib import Path


def faketime_library() -> str:
    """The path of libfaketime's multi-threaded library (installed by .ci/services)."""
    found = sorted(Path("/usr/lib").glob("*/faketime/libfaketimeMT.so.1"))
    assert found, "libfaketime is not installed (.ci/services installs it)"
    return str(found[0])


def shifted(by: str, *, monotonic: bool = False) -> dict[str, str]:
    """The environment that shifts a process's clock ``by`` (``"+90s"``, ``"-10s"``).

    The monotonic clock is left alone unless ``monotonic``: a process that sleeps between ticks
    (beat) needs both shifted, or libfaketime makes ``time.sleep`` fail with EINVAL.
    """
    env = {"LD_PRELOAD": faketime_library(), "FAKETIME": by}
    if not monotonic:
        env["FAKETIME_DONT_FAKE_MONOTONIC"] = "1"
    return env
