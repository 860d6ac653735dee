"""What ``aipool worker`` tells the person who started it, read from its workers' logs.

Each class of worker logs to a file of its own (``var/log/routing.log``...), so the terminal stays
readable; but the few lines a person must see without opening a log are relayed to it, once:

- a worker that cannot reach its broker (Celery retries; the URL and the reason are said once per
  outage, and again when it connects),
- a worker that lost its broker, and when it is back,
- a refused start or an unrecoverable error (``aipool: ...`` lines, ``CRITICAL`` records),
- and, when a worker exits, the last error it logged: why it stopped.

Everything else stays in the logs. The logs are scrubbed when written (:mod:`aipool.log_guard`),
so relaying a line shows nothing a log would not.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

_CANNOT_CONNECT = re.compile(r"Cannot connect to (?P<url>\S+?): (?P<why>.*?)\.*$")
_LOST = re.compile(r"Connection to broker lost")
_CONNECTED = re.compile(r"\] Connected to (?P<url>\S+)")
_FATAL = re.compile(r"CRITICAL/|Unrecoverable error|^aipool: ")
_ERROR = re.compile(r"ERROR/|CRITICAL/|Unrecoverable error|^aipool: |Error: ")
#: How much of a log one look reads at most (a log that grew faster is read from its end).
_READ_AT_MOST = 256 * 1024


@dataclass
class LogNews:
    """New lines of one worker's log, read from where the last look stopped, turned into what to
    tell the terminal."""

    name: str
    path: Path
    offset: int = 0
    #: Whether the worker is between "cannot connect" (or "lost") and "connected".
    outage: bool = False
    last_error: str = ""
    #: Whether the broker's URL carries a password. kombu masks one in every URL it logs, and
    #: masks nothing as the same ``:**@`` (``[REDACTED]`` once scrubbed) when there is none.
    password: bool = True
    _partial: str = field(default="", repr=False)

    def skip_existing(self) -> None:
        """Start after what the log holds now (a log kept from an earlier run)."""
        try:
            self.offset = self.path.stat().st_size
        except OSError:
            self.offset = 0

    def read(self) -> list[str]:
        """The lines to tell since the last look (each prefixed by the worker's name)."""
        try:
            size = self.path.stat().st_size
        except OSError:
            return []
        if size < self.offset:  # the log was rotated or truncated
            self.offset = 0
        if size - self.offset > _READ_AT_MOST:
            self.offset = size - _READ_AT_MOST
        with self.path.open("rb") as log:
            log.seek(self.offset)
            data = log.read(size - self.offset)
        self.offset = size
        text = self._partial + data.decode("utf-8", errors="replace")
        lines = text.split("\n")
        self._partial = lines.pop()  # a line still being written
        told = []
        for line in lines:
            news = self._news(line.strip())
            if news:
                told.append(f"{self.name}: {news}")
        return told

    def _news(self, line: str) -> str | None:
        if not line:
            return None
        if _ERROR.search(line):
            self.last_error = _message(line)
        cannot = _CANNOT_CONNECT.search(line)
        if cannot:
            if self.outage:
                return None
            self.outage = True
            return f"cannot reach the broker at {_url(cannot['url'], self.password)}: {cannot['why']}; retrying"
        if _LOST.search(line):
            if self.outage:
                return None
            self.outage = True
            return "lost the broker's connection; reconnecting"
        connected = _CONNECTED.search(line)
        if connected:
            if not self.outage:
                return None
            self.outage = False
            return f"connected again to {_url(connected['url'], self.password)}"
        if _FATAL.search(line):
            return _message(line)
        return None

    def why_stopped(self) -> str:
        """The last error the worker logged, or a pointer to its log."""
        self.read()
        if self.last_error:
            return self.last_error
        return f"no error logged; see {self.path}"


def _message(line: str) -> str:
    # "[2026-12-06 03:54:55,461: ERROR/MainProcess] consumer: ..." -> "consumer: ..."
    return re.sub(r"^\[[^\]]*\]\s*", "", line)


def _url(logged: str, password: bool = True) -> str:
    # The pool's Redis channel logs as "workers.edge.transport:RedisTransport://...": say redis
    # (sentinel for its Sentinel transport).
    logged = re.sub(r"^[\w.]+:SentinelTransport://", "sentinel://", logged)
    logged = re.sub(r"^[\w.]+:RedisTransport://", "redis://", logged).rstrip(".:")
    if not password:
        # No password to hide: kombu's mask of nothing would suggest one is set.
        logged = re.sub(r"://:(?:\*\*|\[REDACTED\])@", "://", logged, count=1)
    return logged
