"""Every provider the pool knows, and ADR-006's defaults for each: the one place to add one.

Settings, chains, adapters, alerts, the demo's chart and the benchmarks read this table; a test
(``tests/aipool/providers/test_catalog.py``) fails when a deploy file (compose, Kubernetes, KEDA) or
a table (prices, routes) names a provider that is not here, or misses one that is. ``docs/
adding-a-provider.md`` walks through adding one. This module imports nothing of the pool's, so
anything may read it.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Breaker:
    """When the breaker opens and how it probes recovery (ADR-006 §2)."""

    failure_threshold: int = 5
    recovery_timeout: float = 60.0
    half_open_max_calls: int = 3


@dataclass(frozen=True)
class Quota:
    """How much the provider may be used (ADR-006 §3, §7); ``None`` is unlimited."""

    rpm: int | None = None
    daily_requests: int | None = None
    daily_tokens: int | None = None
    monthly_tokens: int | None = None


@dataclass(frozen=True)
class ProviderFacts:
    """One provider: who it is, where it answers, and ADR-006's defaults for it."""

    #: The pool's name: queue, metric label, ledger value, settings infix, price and route key.
    name: str
    #: How people read it in alerts, reports and the demo.
    display_name: str
    #: The vendor prefix of its SDK's variables: ``<VENDOR>_BASE_URL``, ``<VENDOR>_API_KEY``.
    vendor: str
    base_url: str
    model: str
    #: Seconds per call.
    timeout_s: float
    #: ``module:Class`` of its adapter (:class:`aipool.providers.base.Provider`).
    adapter: str
    #: The SDK the adapter calls, imported when a worker serving it starts.
    sdk_module: str
    #: Whether the provider bills per token (prices.toml prices it either way).
    paid: bool
    #: Whether it is on the general chain (requests without tools).
    general: bool
    #: Whether it calls tools: on the tool chain (routes skip it for a request with tools when not).
    tools: bool
    breaker: Breaker = field(default_factory=Breaker)
    quota: Quota = field(default_factory=Quota)
    #: The demo chart's colour.
    colour: str = "#888888"

    @property
    def base_url_variable(self) -> str:
        return f"{self.vendor}_BASE_URL"

    @property
    def api_key_variable(self) -> str:
        return f"{self.vendor}_API_KEY"


#: The order is the fallback order of both chains (ADR-006: ollama → gemini → claude for general
#: requests, nemotron → gemini → claude for tool calls).
CATALOG: dict[str, ProviderFacts] = {
    facts.name: facts
    for facts in (
        ProviderFacts(
            name="ollama",
            display_name="Ollama",
            vendor="OLLAMA",
            # Ollama's own default address.
            base_url="http://127.0.0.1:11434",
            model="llama3.2:3b",
            timeout_s=30.0,
            adapter="aipool.providers.ollama:OllamaProvider",
            sdk_module="ollama",
            paid=False,
            general=True,
            tools=False,
            breaker=Breaker(3, 30.0, 3),
            colour="#2a9d8f",
        ),
        ProviderFacts(
            name="nemotron",
            display_name="Nemotron",
            vendor="NVIDIA",
            base_url="https://integrate.api.nvidia.com/v1",
            model="nvidia/llama-3.3-nemotron-super-49b-v1",
            # Nemotron's tool calls take 11-45 s (ADR-006 §8); the others answer in seconds.
            timeout_s=60.0,
            adapter="aipool.providers.nemotron:NemotronProvider",
            sdk_module="openai",
            paid=False,
            general=False,
            tools=True,
            # NVIDIA's free tier is metered per key; the site sets its numbers (ADR-006 §8).
            colour="#8ab17d",
        ),
        ProviderFacts(
            name="gemini",
            display_name="Gemini",
            vendor="GEMINI",
            base_url="https://generativelanguage.googleapis.com",
            model="gemini-2.5-flash",
            timeout_s=30.0,
            adapter="aipool.providers.gemini:GeminiProvider",
            sdk_module="google.genai",
            paid=True,
            general=True,
            tools=True,
            quota=Quota(10, 500, 100_000, 2_000_000),
            colour="#4285f4",
        ),
        ProviderFacts(
            name="claude",
            display_name="Claude",
            vendor="ANTHROPIC",
            base_url="https://api.anthropic.com",
            model="claude-sonnet-5",
            timeout_s=30.0,
            adapter="aipool.providers.claude:ClaudeProvider",
            sdk_module="anthropic",
            paid=True,
            general=True,
            tools=True,
            quota=Quota(5, 200, 50_000, 500_000),
            colour="#d97757",
        ),
    )
}

#: Terminal hops: answered by the pool itself, never by a model (the chains' last hops).
STATIC = "static"
REFUSE = "refuse"
TERMINALS = (STATIC, REFUSE)

#: Every model provider, in the order reports list them.
PROVIDERS: tuple[str, ...] = tuple(CATALOG)
