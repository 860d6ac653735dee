"""A TCP proxy that puts Redis a network away: every request waits ``delay`` before it is sent on.

Run: ``python -m bench.delay_proxy --to 127.0.0.1:6379 --delay-ms 0.5 [--port 0]``; prints the
port it listens on (one line), then forwards every connection to ``--to``. What a client sends
is held ``delay`` from the moment it arrived, then forwarded in order; what the server answers
goes back at once. A command (or a pipeline, or a transaction, sent in one write) therefore costs
``delay`` more per round trip, as across a network, and commands written back to back are not
delayed one after the other (each waits from its own arrival).

Started as a process of its own (:func:`started`), so its threads share no interpreter lock with
the processes it measures. On loopback the proxy itself adds about 0.1 ms per round trip even
with no delay: ``bench/run`` measures what a round trip through it costs (a ``PING``) and reports
the pool's added time in those round trips.
"""

from __future__ import annotations

import argparse
import contextlib
import queue
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator

_CHUNK = 65536


def _hold_and_send(source: socket.socket, target: socket.socket, delay: float) -> None:
    """Read from ``source``; send each chunk to ``target`` ``delay`` after it arrived.

    Threads and ``time.sleep`` rather than asyncio: an event loop's timers wait in whole
    milliseconds (epoll), which would turn 0.5 ms into 1.
    """
    held: queue.SimpleQueue[tuple[float, bytes]] = queue.SimpleQueue()

    def send_when_due() -> None:
        while True:
            due, chunk = held.get()
            if not chunk:
                break
            wait = due - time.perf_counter()
            if wait > 0:
                time.sleep(wait)
            try:
                target.sendall(chunk)
            except OSError:
                break
        with contextlib.suppress(OSError):
            target.shutdown(socket.SHUT_WR)

    sender = threading.Thread(target=send_when_due, daemon=True)
    sender.start()
    try:
        while chunk := source.recv(_CHUNK):
            held.put((time.perf_counter() + delay, chunk))
    except OSError:
        pass
    finally:
        held.put((0.0, b""))


def _pass_back(source: socket.socket, target: socket.socket) -> None:
    try:
        while chunk := source.recv(_CHUNK):
            target.sendall(chunk)
    except OSError:
        pass
    finally:
        with contextlib.suppress(OSError):
            target.shutdown(socket.SHUT_WR)


def serve(host: str, port: int, to: tuple[str, int], delay: float) -> None:
    """Listen on ``host:port`` (0: any free port, printed) and forward to ``to``."""
    listener = socket.create_server((host, port))
    print(listener.getsockname()[1], flush=True)
    while True:
        client, _ = listener.accept()
        try:
            server = socket.create_connection(to)
        except OSError:
            client.close()
            continue
        for sock in (client, server):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        threading.Thread(target=_hold_and_send, args=(client, server, delay), daemon=True).start()
        threading.Thread(target=_pass_back, args=(server, client), daemon=True).start()


@contextlib.contextmanager
def started(to: str, delay_ms: float) -> Iterator[int]:
    """A proxy process to ``to`` (``host:port``) adding ``delay_ms``; yields the port it listens
    on, and stops it on the way out."""
    process = subprocess.Popen(
        [sys.executable, "-m", "bench.delay_proxy", "--to", to, "--delay-ms", str(delay_ms)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        port = int(process.stdout.readline().strip())
        time.sleep(0.1)
        yield port
    finally:
        process.terminate()
        process.wait(timeout=10)
        if process.stdout is not None:
            process.stdout.close()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--to", required=True, help="host:port of the Redis server")
    parser.add_argument("--delay-ms", type=float, default=0.5)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args(argv)
    host, _, port = args.to.rpartition(":")
    serve(args.host, args.port, (host, int(port)), args.delay_ms / 1000)


if __name__ == "__main__":
    main()
