"""A route table with the response cache on: QUERY answered by Gemini (so a hit saves money),
kept a day, for services that turn the cache on. The rule names ALERT_TRIAGE too, so the table's
``never_intents`` (not the rule) is what keeps an alert's triage out of the cache."""

from __future__ import annotations

from pathlib import Path

from aipool.routing.table import DEFAULT_ROUTES_FILE

#: The HMAC key the tests' pools use.
SECRET = "test-cache-secret"

CACHED_RULE = """
[[rules]]
name = "cached_query"
tier = "cloud"
intents = ["QUERY", "ALERT_TRIAGE"]
provider = "gemini"
cache_ttl_s = 86400
"""

SERVICES = """
[services.faq]
cache = true
cache_scope = "help-desk"

[services.help]
cache = true
cache_scope = "help-desk"

[services.billing]
cache = true

[services.quiet]
name = "No cache"
"""


def cached_routes(directory: Path) -> Path:
    """The packaged table with :data:`CACHED_RULE` first and :data:`SERVICES` declared."""
    path = directory / "routes-cached.toml"
    path.write_text(CACHED_RULE + DEFAULT_ROUTES_FILE.read_text() + SERVICES, encoding="utf-8")
    return path
