"""Worker life-cycle hooks."""

from __future__ import annotations
