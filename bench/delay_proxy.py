"""A TCP proxy that puts Redis a network away: every request waits ``delay`` before it is sent on.

Run: ``python -m bench.delay_proxy --to 127.0.0.1:6379 --delay-ms 0.5 [--port 0] [--log PATH]``;
prints the port it listens on (one line), then forwards every connection to ``--to``. What a
client sends is held ``delay`` from the moment it arrived, then forwarded in order; what the
server answers goes back at once. A command (or a pipeline, or a transaction, sent in one write)
therefore costs ``delay`` more per round trip, as across a network, and commands written back to
back are not delayed one after the other (each waits from its own arrival).

With ``--log`` it also writes what passed, one line per event (:class:`Log`), so a request's
Redis traffic can be laid out as a timeline (:mod:`bench.timeline`): which command, on which
connection, when it arrived, when it was sent on, and when its answer came back.

Started as a process of its own (:func:`started`), so its threads share no interpreter lock with
the processes it measures. On loopback the proxy itself adds about 0.1 ms per round trip even
with no delay: ``bench/run`` measures what a round trip through it costs (a ``PING``) and reports
the pool's added time in those round trips.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import os
import queue
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TextIO

_CHUNK = 65536
#: Commands whose first argument is a key or a channel (never a value): the log names it. No
#: other argument is logged, so no request's text reaches the log.
_KEYED = frozenset(
    b"GET SET SETEX PSETEX SETNX GETDEL DEL EXISTS EXPIRE PEXPIRE TTL PTTL INCR INCRBY DECR "
    b"HGET HSET HMGET HGETALL HDEL HINCRBY LPUSH RPUSH LPOP RPOP LLEN LRANGE LREM BRPOP BLPOP "
    b"SADD SREM SMEMBERS ZADD ZREM ZRANGE ZRANGEBYSCORE ZREVRANGEBYSCORE ZREMRANGEBYSCORE ZCARD "
    b"PUBLISH SUBSCRIBE UNSUBSCRIBE PSUBSCRIBE PUNSUBSCRIBE WATCH".split()
)


class Log:
    """The proxy's event log: tab-separated lines ``time  connection  event  detail``.

    ``time`` is ``time.perf_counter()`` (CLOCK_MONOTONIC on Linux, the same clock in every
    process of the machine, so a producer's own marks line up with it). Events: ``open`` (detail:
    the client's host:port), ``hold`` (a client's write arrived; detail: its bytes and the
    commands it completed), ``sent`` (the held write went on to Redis), ``back`` (Redis answered;
    detail: bytes and the answer's kind), ``close``. Written by a thread of its own from what the
    proxy's threads queue, so parsing and writing never hold a write back.
    """

    def __init__(self, path: Path) -> None:
        self._events: queue.SimpleQueue[tuple[float, int, str, object]] = queue.SimpleQueue()
        self._file: TextIO = path.open("w", buffering=1 << 16)
        self._pending: dict[int, bytes] = {}
        threading.Thread(target=self._write, daemon=True).start()

    def event(self, at: float, connection: int, kind: str, detail: object = "") -> None:
        self._events.put((at, connection, kind, detail))

    def flush(self) -> None:
        """Write what is queued, and flush the file (the proxy is about to stop)."""
        done = threading.Event()
        self._events.put((0.0, -1, "flush", done))
        done.wait(5)

    def _write(self) -> None:
        while True:
            at, connection, kind, detail = self._events.get()
            if kind == "flush":
                self._file.flush()
                assert isinstance(detail, threading.Event)
                detail.set()
                continue
            try:
                detail = self._detail(connection, kind, detail)
            except ValueError:
                self._pending.pop(connection, None)
                detail = "(not RESP)"
            self._file.write(f"{at:.6f}\t{connection}\t{kind}\t{detail}\n")

    def _detail(self, connection: int, kind: str, detail: object) -> object:
        if kind == "hold" and isinstance(detail, bytes):
            buffer = self._pending.get(connection, b"") + detail
            names, rest = commands(buffer)
            self._pending[connection] = rest
            return f"{len(detail)}\t{' | '.join(names) or '(part)'}"
        if kind == "back" and isinstance(detail, bytes):
            return f"{len(detail)}\t{answer_kind(detail)}"
        return detail


def commands(buffer: bytes) -> tuple[list[str], bytes]:
    """The RESP commands complete in ``buffer``, each as its name (and, for a command on a key or
    channel, that key; for ``EVALSHA``, the script's SHA and its first key), and what is left
    over (a command still arriving)."""
    names: list[str] = []
    at = 0
    while at < len(buffer):
        words, end = _array(buffer, at)
        if end < 0:
            break
        at = end
        names.append(_describe(words))
    return names, buffer[at:]


def _array(buffer: bytes, at: int) -> tuple[list[bytes], int]:
    # One RESP array of bulk strings from ``at``: its first four words, and where it ends (-1:
    # not complete yet).
    if buffer[at : at + 1] != b"*":
        line_end = buffer.find(b"\r\n", at)  # an inline command
        if line_end < 0:
            return [], -1
        return buffer[at:line_end].split()[:4], line_end + 2
    line_end = buffer.find(b"\r\n", at)
    if line_end < 0:
        return [], -1
    count = int(buffer[at + 1 : line_end])
    at = line_end + 2
    words: list[bytes] = []
    for _ in range(count):
        line_end = buffer.find(b"\r\n", at)
        if line_end < 0:
            return [], -1
        if buffer[at : at + 1] != b"$":
            # An answer's element that is not a string (RESP3's null, a number, a nested
            # array): the words so far name it; a request is all strings.
            return words, len(buffer)
        size = int(buffer[at + 1 : line_end])
        if size < 0:  # a null string
            at = line_end + 2
            continue
        start = line_end + 2
        if start + size + 2 > len(buffer):
            return [], -1
        if len(words) < 4:
            words.append(buffer[start : start + size])
        at = start + size + 2
    return words, at


def _describe(words: list[bytes]) -> str:
    if not words:
        return "?"
    name = words[0].upper()
    if name in (b"EVALSHA", b"EVAL") and len(words) > 2:
        script = words[1][:8] if name == b"EVALSHA" else b"(body)"
        first_key = words[3] if len(words) > 3 and words[2] != b"0" else b""
        return f"{name.decode()} {script.decode(errors='replace')} {_key(first_key)}".rstrip()
    if name in _KEYED and len(words) > 1:
        return f"{name.decode()} {_key(words[1])}"
    return name.decode(errors="replace")


def _key(word: bytes) -> str:
    return word[:80].decode(errors="replace")


def answer_kind(chunk: bytes) -> str:
    """What an answer is, without its content: RESP's type, a short status or number, and for an
    array or a push its first word when that is short (a ``BRPOP``'s queue, a pub/sub
    ``message``); the rest of an array (a message's body) is never shown."""
    kind = chunk[:1].decode(errors="replace")
    if kind in "*>":
        words, _ = _array(b"*" + chunk[1:], 0)
        if words and len(words[0]) <= 80:
            return f"{kind} {_key(words[0])}"
        return kind
    first_line = chunk.split(b"\r\n", 1)[0]
    if kind in "+-:" and len(first_line) <= 60:
        return first_line.decode(errors="replace")
    return kind


def _hold_and_send(
    source: socket.socket, target: socket.socket, delay: float, log: Log | None, connection: int
) -> None:
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
            if log is not None:
                log.event(time.perf_counter(), connection, "sent")
        with contextlib.suppress(OSError):
            target.shutdown(socket.SHUT_WR)

    sender = threading.Thread(target=send_when_due, daemon=True)
    sender.start()
    try:
        while chunk := source.recv(_CHUNK):
            arrived = time.perf_counter()
            held.put((arrived + delay, chunk))
            if log is not None:
                log.event(arrived, connection, "hold", chunk)
    except OSError:
        pass
    finally:
        held.put((0.0, b""))
        if log is not None:
            log.event(time.perf_counter(), connection, "close")


def _pass_back(
    source: socket.socket, target: socket.socket, log: Log | None, connection: int
) -> None:
    try:
        while chunk := source.recv(_CHUNK):
            target.sendall(chunk)
            if log is not None:
                log.event(time.perf_counter(), connection, "back", chunk)
    except OSError:
        pass
    finally:
        with contextlib.suppress(OSError):
            target.shutdown(socket.SHUT_WR)


def serve(host: str, port: int, to: tuple[str, int], delay: float, log: Log | None = None) -> None:
    """Listen on ``host:port`` (0: any free port, printed) and forward to ``to``; ``log``: where
    to tell what passed."""
    listener = socket.create_server((host, port))
    print(listener.getsockname()[1], flush=True)
    for connection in itertools.count(1):
        client, peer = listener.accept()
        try:
            server = socket.create_connection(to)
        except OSError:
            client.close()
            continue
        for sock in (client, server):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if log is not None:
            log.event(time.perf_counter(), connection, "open", f"{peer[0]}:{peer[1]}")
        threading.Thread(
            target=_hold_and_send, args=(client, server, delay, log, connection), daemon=True
        ).start()
        threading.Thread(
            target=_pass_back, args=(server, client, log, connection), daemon=True
        ).start()


@contextlib.contextmanager
def started(to: str, delay_ms: float, log: Path | None = None) -> Iterator[int]:
    """A proxy process to ``to`` (``host:port``) adding ``delay_ms``, logging to ``log`` if
    given; yields the port it listens on, and stops it on the way out (its log flushed)."""
    process = subprocess.Popen(
        [sys.executable, "-m", "bench.delay_proxy", "--to", to, "--delay-ms", str(delay_ms)]
        + (["--log", str(log)] if log else []),
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
    parser.add_argument("--log", type=Path, help="write what passed here (see Log)")
    args = parser.parse_args(argv)
    host, _, port = args.to.rpartition(":")
    log = Log(args.log) if args.log else None
    if log is not None:
        import signal

        def stop(*_: object) -> None:
            # Out at once once flushed: an interpreter's shutdown could cut a line the writer
            # thread was still writing.
            log.flush()
            os._exit(0)

        signal.signal(signal.SIGTERM, stop)
    serve(args.host, args.port, (host, int(port)), args.delay_ms / 1000, log)


if __name__ == "__main__":
    main()
