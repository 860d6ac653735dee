"""Which requests the response cache may answer, and for how long it keeps their answers.

Off by default, on where three things say so: ``AIPOOL_CACHE_SECRET`` is set (the key's HMAC key,
:mod:`aipool.cache.key`), the route rule that chose the request's first hop has a
``cache_ttl_s``, and the request's service is declared with ``cache = true`` in the route table.
Whatever those say, a request is never cached when:

- it carries tools or its chain is the tool chain: a tool call is an act to run, not a text to
  replay;
- its intent is one of the table's ``[cache] never_intents`` (``ALERT_TRIAGE`` by default: an
  alert's triage reads live data, and the same text an hour later is another incident);
- it asks for a ``temperature`` above ``AIPOOL_CACHE_MAX_TEMPERATURE`` (a new answer each time);
- its service is ``other`` (a name the table does not declare: no service to scope it to).
"""

from __future__ import annotations

from dataclasses import dataclass

from aipool.cache.key import cache_key
from aipool.contract.request import Request
from aipool.contract.route import Route
from aipool.providers.catalog import REFUSE
from aipool.routing.table import RouteTable, load_table
from aipool.settings import settings


@dataclass(frozen=True)
class Cacheable:
    """A request the cache may answer: its entry's name, how long an answer is kept, and the
    scope (the services that share entries)."""

    key: str
    ttl_s: int
    scope: str


def cacheable(request: Request, route: Route, table: RouteTable | None = None) -> Cacheable | None:
    """Whether the cache may answer ``request`` routed as ``route`` (see the module docstring)."""
    secret = settings().cache_secret
    if secret is None:
        return None
    table = table if table is not None else load_table()
    rule = next((r for r in table.rules if r.name == route.rule), None)
    service = table.services.get(route.service)
    if rule is None or rule.cache_ttl_s is None or service is None or not service.cache:
        return None
    if request.tools or route.chain[-1].provider == REFUSE or route.intent in table.never_cached:
        return None
    limit = settings().cache_max_temperature
    if request.temperature is not None and request.temperature > limit:
        return None
    key = cache_key(
        secret.get_secret_value().encode(), request, route, table.version, service.scope
    )
    return Cacheable(key=key, ttl_s=rule.cache_ttl_s, scope=service.scope)
