"""What the demo changes from ADR-006's numbers so the story fits in a minute, and says so."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Shortened:
    env: str
    value: str
    adr: str
    why: str


#: Settings the demo sets for itself and its worker; everything else is ADR-006's default.
SHORTENED = (
    Shortened(
        "AIPOOL_OLLAMA_RECOVERY_TIMEOUT",
        "4",
        "30 s",
        "Ollama's breaker probes again after 4 s instead of 30 s",
    ),
    Shortened(
        "AIPOOL_MONTHLY_BUDGET_USD",
        "0.002",
        "$10",
        "a monthly budget of $0.002, so the simulated calls cross its 50% line",
    ),
    Shortened(
        "AIPOOL_TIMEOUT_OLLAMA",
        "3",
        "30 s",
        "provider calls time out after 3 s",
    ),
    Shortened("AIPOOL_TIMEOUT_GEMINI", "3", "30 s", ""),
    Shortened("AIPOOL_TIMEOUT_CLAUDE", "3", "30 s", ""),
    Shortened("AIPOOL_TIMEOUT_NEMOTRON", "3", "60 s", ""),
)

#: The response cache's key in the demo (a real pool reads its own from a secret).
CACHE_SECRET = "demo-cache-secret"
#: The service whose questions the demo's cache answers (its route table turns the cache on for
#: it alone, and for the complexity_high rule: questions Gemini answers, so a hit saves money).
CACHED_SERVICE = "faq"
#: Spans are batched: the demo's processes write theirs to the trace file this often (ms).
TRACE_BATCH_MS = "500"


def cached_routes(packaged: str) -> str:
    """The packaged route table with the response cache on for the ``complexity_high`` rule and
    the :data:`CACHED_SERVICE`."""
    rule = 'name = "complexity_high"\n'
    if rule not in packaged:
        raise ValueError("the packaged route table has no complexity_high rule")
    cached = packaged.replace(rule, rule + "cache_ttl_s = 86400\n", 1)
    return cached + f'\n[services.{CACHED_SERVICE}]\nname = "FAQ"\ncache = true\n'


#: Variables of the caller's shell the demo must not inherit: it runs on its own embedded Redis
#: and ledger and exports no metrics port. Every ``AIPOOL_`` setting is dropped too (limits,
#: routes, prices, alert channels), but for these two.
NOT_INHERITED = (
    "REDIS_URL",
    "DATABASE_URL",
    "CELERY_BROKER_URL",
    "CELERY_RESULT_BACKEND",
    "PROMETHEUS_MULTIPROC_DIR",
)
KEPT_AIPOOL_SETTINGS = ("AIPOOL_RUNTIME_DIR", "AIPOOL_TIMEZONE")


def inherited(name: str) -> bool:
    """Whether the demo keeps the caller's variable ``name``."""
    if name in NOT_INHERITED:
        return False
    return not name.startswith("AIPOOL_") or name in KEPT_AIPOOL_SETTINGS


#: The demo's simulated keys: the simulators accept any key, real providers are never called.
KEYS = {
    "GEMINI_API_KEY": "demo-key-for-the-simulator",
    "ANTHROPIC_API_KEY": "demo-key-for-the-simulator",
    "NVIDIA_API_KEY": "demo-key-for-the-simulator",
}
BASE_URL_ENV = {
    "ollama": "OLLAMA_BASE_URL",
    "gemini": "GEMINI_BASE_URL",
    "anthropic": "ANTHROPIC_BASE_URL",
    "openai": "NVIDIA_BASE_URL",
}
