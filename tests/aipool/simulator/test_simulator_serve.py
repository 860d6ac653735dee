"""Running the simulator in the foreground, as ``aipool simulate`` does."""

from __future__ import annotations

import io
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx

from aipool.simulator import serve_forever

REPO_ROOT = Path(__file__).resolve().parents[3]


def test_serve_forever_prints_urls_and_exports_then_stops() -> None:
    # Given the simulator running in the foreground of another thread, on free ports
    out = io.StringIO()
    stop = threading.Event()
    ports = {"ollama": 0, "gemini": 0, "anthropic": 0, "openai": 0}
    runner = threading.Thread(
        target=serve_forever,
        kwargs={"ports": ports, "admin_port": 0, "out": out, "stop": stop},
        daemon=True,
    )
    runner.start()
    deadline = time.monotonic() + 5
    while "AIPOOL_SIMULATOR_ADMIN_URL" not in out.getvalue() and time.monotonic() < deadline:
        time.sleep(0.01)
    text = out.getvalue()
    # Then it prints one line per provider with the variable to export, and the admin URL
    exports = dict(re.findall(r"export (\w+)=(\S+)", text))
    assert set(exports) == {
        "OLLAMA_BASE_URL",
        "GEMINI_BASE_URL",
        "ANTHROPIC_BASE_URL",
        "NVIDIA_BASE_URL",
        "AIPOOL_SIMULATOR_ADMIN_URL",
    }
    assert exports["NVIDIA_BASE_URL"].endswith("/v1")
    assert httpx.get(exports["OLLAMA_BASE_URL"] + "/api/version").status_code == 200
    # When asked to stop, Then it returns
    stop.set()
    runner.join(timeout=3)
    assert not runner.is_alive()


def test_the_module_runs_until_sigterm() -> None:
    # Given `python -m aipool.simulator` on free ports
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    args = [sys.executable, "-m", "aipool.simulator", "--admin-port", "0"]
    for kind in ("ollama", "gemini", "anthropic", "openai"):
        args += [f"--{kind}-port", "0"]
    process = subprocess.Popen(args, env=env, stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        lines = [process.stdout.readline() for _ in range(5)]
        admin_url = dict(re.findall(r"export (\w+)=(\S+)", "".join(lines)))[
            "AIPOOL_SIMULATOR_ADMIN_URL"
        ]
        assert httpx.get(admin_url + "/admin/state").status_code == 200
        # When it gets SIGTERM, Then it exits cleanly
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=5) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        if process.stdout is not None:
            process.stdout.close()
