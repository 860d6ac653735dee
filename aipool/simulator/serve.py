"""Run the simulator in the foreground: what ``aipool simulate`` calls."""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from collections.abc import Mapping, Sequence
from types import FrameType
from typing import Any, TextIO

from aipool.simulator.names import (
    ADMIN_URL_ENV,
    BASE_URL_ENV,
    DEFAULT_ADMIN_PORT,
    DEFAULT_PORTS,
    POOL_NAMES,
)
from aipool.simulator.simulator import Simulator


def describe(simulator: Simulator) -> list[str]:
    """One line per provider (base URL and the variable to export), then the admin line."""
    lines = []
    for kind, url in simulator.base_urls.items():
        label = f"{kind} ({POOL_NAMES[kind]})" if POOL_NAMES[kind] != kind else kind
        lines.append(f"{label:<21} {url:<30} export {BASE_URL_ENV[kind]}={url}")
    if simulator.admin_url:
        admin = simulator.admin_url
        lines.append(f"{'admin':<21} {admin:<30} export {ADMIN_URL_ENV}={admin}")
    lines.append("API keys: any non-empty value is accepted by every simulated provider.")
    return lines


def serve_forever(
    host: str = "127.0.0.1",
    ports: Mapping[str, int] | None = None,
    admin_port: int | None = DEFAULT_ADMIN_PORT,
    out: TextIO | None = None,
    stop: threading.Event | None = None,
) -> None:
    """Start the simulator on fixed ports, print its URLs and block until SIGINT or SIGTERM.

    ``ports`` defaults to :data:`~aipool.simulator.names.DEFAULT_PORTS` (18434-18437, admin
    18430), chosen so a real local Ollama on 11434 is never shadowed. ``stop``, when given, ends
    the wait too (signals can only be caught on the main thread).
    """
    out = out if out is not None else sys.stdout
    stop = stop if stop is not None else threading.Event()
    chosen = {**DEFAULT_PORTS, **(ports or {})}
    with Simulator(host=host, ports=chosen, admin_port=admin_port) as simulator:
        for line in describe(simulator):
            print(line, file=out, flush=True)
        previous = _install_handlers(stop)
        try:
            stop.wait()
        finally:
            _restore_handlers(previous)


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry: ``python -m aipool.simulator [--host H] [--ollama-port P] ...``."""
    parser = argparse.ArgumentParser(
        prog="aipool simulate", description="Run loopback stand-ins for the AI providers."
    )
    parser.add_argument("--host", default="127.0.0.1")
    for kind, port in DEFAULT_PORTS.items():
        parser.add_argument(f"--{kind}-port", type=int, default=port, dest=f"{kind}_port")
    parser.add_argument("--admin-port", type=int, default=DEFAULT_ADMIN_PORT)
    args = parser.parse_args(argv)
    ports = {kind: getattr(args, f"{kind}_port") for kind in DEFAULT_PORTS}
    serve_forever(host=args.host, ports=ports, admin_port=args.admin_port)
    return 0


_Handlers = dict[int, Any]


def _install_handlers(stop: threading.Event) -> _Handlers:
    if threading.current_thread() is not threading.main_thread():
        return {}

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    previous: _Handlers = {}
    for signum in (signal.SIGINT, signal.SIGTERM):
        previous[signum] = signal.getsignal(signum)
        signal.signal(signum, on_signal)
    return previous


def _restore_handlers(previous: _Handlers) -> None:
    for signum, handler in previous.items():
        signal.signal(signum, handler)
