"""Which addresses a local server listens on, read from the kernel (``/proc/net/tcp``)."""

from __future__ import annotations

import socket
import struct
from pathlib import Path

_LISTEN = "0A"


def listening_addresses(port: int) -> set[str]:
    """The IPv4 addresses with a socket listening on ``port`` (``0.0.0.0``: every interface)."""
    found = set()
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        address, hex_port = fields[1].split(":")
        if fields[3] == _LISTEN and int(hex_port, 16) == port:
            found.add(socket.inet_ntoa(struct.pack("<I", int(address, 16))))
    return found
