"""A simulated provider's prompt cache: repeated prompt prefixes are read from it, as billed.

Providers bill a prompt's cached part apart: Claude writes the prefix up to the request's last
``cache_control`` mark on first use and reads it afterwards; Gemini 2.5 and OpenAI-style APIs
cache a repeated prefix of at least :data:`IMPLICIT_MINIMUM` tokens by themselves and report the
part read. The simulator keeps the prefixes it has seen (in memory, per server) so a client sees
the same counts, and the pool can be checked to charge them.
"""

from __future__ import annotations

import hashlib
import threading
from dataclasses import replace

from aipool.simulator.answers import TOKENS_PER_MESSAGE, Answer
from aipool.simulator.conversation import Exchange
from aipool.tokens import estimate_tokens

#: The shortest prefix a provider caches without being asked (Gemini 2.5 Flash, OpenAI: 1,024).
IMPLICIT_MINIMUM = 1024
#: OpenAI-style caches hit in steps of this many tokens.
CACHE_STEP = 128


class PromptCache:
    """The prefixes one simulated server has seen; thread-safe."""

    def __init__(self) -> None:
        self._seen: set[str] = set()
        self._lock = threading.Lock()

    def apply(self, kind: str, exchange: Exchange, answer: Answer) -> Answer:
        """``answer`` with the cache writes and reads ``exchange`` makes on this server."""
        if not answer.usage_reported:
            return answer
        marked = exchange.cache_breakpoint is not None
        prefix = exchange.texts[: exchange.cache_breakpoint] if marked else exchange.texts[:-1]
        if not prefix:
            return answer
        tokens = sum(estimate_tokens(t) for t in prefix) + TOKENS_PER_MESSAGE * len(prefix)
        tokens = min(tokens, answer.input_tokens)
        if not marked and (kind == "anthropic" or tokens < IMPLICIT_MINIMUM):
            return answer  # Claude caches only what the request marks
        key = hashlib.sha256(
            "\x1f".join((kind, exchange.model, *prefix)).encode("utf-8", "replace")
        ).hexdigest()
        with self._lock:
            seen = key in self._seen
            self._seen.add(key)
        if seen:
            read = tokens if marked else tokens - tokens % CACHE_STEP
            return replace(answer, cache_read_tokens=read)
        # Only a marked prefix is written as a billed step of its own (Claude's cache write).
        return replace(answer, cache_write_tokens=tokens) if marked else answer
