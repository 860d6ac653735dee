"""A process's own route decision at the cost of a lookup: a request this process has decided
is not decided again while the route table and the intent model stay the same. Workers ask it for
every hop; producers too, for where a request starts (``tasks.client.route``).

A worker re-decides every request's route, whatever its message says (the trust boundary,
docs/architecture.md). :func:`~aipool.routing.router.decide` is a pure function of what it reads
of the request, the route table and the intent model, so the decision a process made for the same
inputs *is* the one it would make again: :func:`own_route` returns it instead of re-reading the
text. Nothing the message carries is read here (its journey and route never reach this module), so
a forged route decides no more than before; the remembered decision was this process's own.

What :func:`decision_inputs` feeds the key is everything ``decide`` reads of a request: every
message's role and text, the system prompt, how many tools it carries, its declared intent,
priority and service (a test holds the two together). The route table and model are part of
the key by identity: they are loaded once per file version (:func:`~aipool.routing.table.load_table`,
:func:`~aipool.routing.model.load_model`), and a new version empties the memory.

No prompt text is kept: the key is a keyed BLAKE2b digest of the inputs under a random key drawn
per process (and again in a forked child), which nobody outside this process's memory holds, so
the digest cannot be matched against guessed prompts; the value is the :class:`Route`, whose
``reason`` names labels and counts, never words (issue #21). Bounded to :data:`CAPACITY` routes,
least recently used out first.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Iterator
from hashlib import blake2b

from aipool.contract.request import Request
from aipool.contract.route import Route
from aipool.routing.model import IntentModel, load_model
from aipool.routing.router import decide
from aipool.routing.table import RouteTable, load_table

#: Routes kept per process: a few hundred bytes each (chain, reason, labels).
CAPACITY = 2048
_DIGEST_BYTES = 16


def decision_inputs(request: Request) -> Iterator[str]:
    """Every value of ``request`` that :func:`~aipool.routing.router.decide` reads, in a fixed
    order (the text of its messages and system prompt, never kept: only digested)."""
    yield request.system
    yield str(len(request.messages))
    for message in request.messages:
        yield message.role
        yield message.content
    yield str(len(request.tools))
    yield request.intent or ""
    yield request.priority
    # No service and a named one never read alike: a name is marked, absence is empty.
    yield "" if request.service is None else "=" + request.service


class Recall:
    """Routes this process decided, by a keyed digest of their inputs, for one table and model."""

    def __init__(self) -> None:
        self.forget()

    def forget(self) -> None:
        """Start over with a new key and no routes, as a forked child does (its memory is its own;
        a new lock too: another thread of the parent may have held this one at the fork)."""
        self._lock = threading.Lock()
        self._key = os.urandom(32)
        self._versions: tuple[RouteTable, IntentModel] | None = None
        self._routes: OrderedDict[bytes, Route] = OrderedDict()

    def _digest(self, request: Request) -> bytes:
        digest = blake2b(key=self._key, digest_size=_DIGEST_BYTES)
        for value in decision_inputs(request):
            data = value.encode("utf-8")
            # Length first, so no two different sequences of values read as the same bytes.
            digest.update(len(data).to_bytes(8, "little"))
            digest.update(data)
        return digest.digest()

    def _current(self, table: RouteTable, model: IntentModel) -> bool:
        versions = self._versions
        return versions is not None and versions[0] is table and versions[1] is model

    def route(self, request: Request) -> Route:
        """The route :func:`~aipool.routing.router.decide` gives ``request`` with the table and
        model in force: remembered when this process decided the same inputs already."""
        table, model = load_table(), load_model()
        digest = self._digest(request)
        with self._lock:
            if not self._current(table, model):
                # Another table or model: every remembered route was another version's decision.
                self._routes.clear()
                self._versions = (table, model)
            known = self._routes.get(digest)
            if known is not None:
                self._routes.move_to_end(digest)
                return known
        decided = decide(request, table, model)
        with self._lock:
            if self._current(table, model):
                self._routes[digest] = decided
                if len(self._routes) > CAPACITY:
                    self._routes.popitem(last=False)
        return decided


_recall = Recall()
os.register_at_fork(after_in_child=_recall.forget)


def own_route(request: Request) -> Route:
    """This process's own route for ``request``: :func:`~aipool.routing.router.decide`'s, at the
    cost of a digest and a lookup when it decided the same inputs before (module doc)."""
    return _recall.route(request)
