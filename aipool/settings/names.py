"""Every environment variable the pool reads, and where each one lands in the settings model.

A variable that looks like one of the pool's and is not listed here is refused at start-up, with
the closest listed name suggested: a misspelled limit must never be ignored without a word. Looks
like one of the pool's: it starts with ``AIPOOL_`` in any case (``aipool_gemini_rpm``), its first
word is a near-miss of ``AIPOOL`` (``AIPOL_GEMINI_RPM``, ``AIPOOOL_...``), or it is a listed name
in another case (``gemini_api_key``). A retired setting is refused saying why it went.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping

from aipool.providers.catalog import CATALOG, PROVIDERS
from aipool.settings.provider_limits import BREAKER_KEYS, QUOTA_KEYS

PREFIX = "AIPOOL_"
#: A path into the settings model, e.g. ``("providers", "gemini", "quota", "rpm")``.
Path = tuple[str, ...]


#: Variables that are read from the environment, then from ``<NAME>_FILE``, then from
#: ``$AIPOOL_SECRETS_DIR/<name>``; their values are never shown or logged.
SECRETS: dict[str, Path] = {
    **{f.api_key_variable: ("providers", p, "api_key") for p, f in CATALOG.items()},
    "AIPOOL_SMTP_PASSWORD": ("alerts", "smtp_password"),
    "AIPOOL_SLACK_WEBHOOK_URL": ("alerts", "slack_webhook_url"),
    "AIPOOL_ALERT_WEBHOOK_URL": ("alerts", "webhook_url"),
    "AIPOOL_HEALTH_TOKEN": ("health_token",),
    "AIPOOL_METRICS_TOKEN": ("metrics_token",),
    "AIPOOL_REDIS_SENTINEL_PASSWORD": ("redis_sentinel_password",),
    "AIPOOL_CACHE_SECRET": ("cache_secret",),
}

_POOL: dict[str, Path] = {
    "REDIS_URL": ("redis_url",),
    "DATABASE_URL": ("database_url",),
    "CELERY_BROKER_URL": ("celery_broker_url",),
    "CELERY_RESULT_BACKEND": ("celery_result_backend",),
    "AIPOOL_REDIS_SENTINEL_MASTER": ("redis_sentinel_master",),
    "AIPOOL_REDIS_REPLICA_ACKS": ("redis_replica_acks",),
    "AIPOOL_REDIS_REPLICA_ACK_TIMEOUT": ("redis_replica_ack_timeout_s",),
    "AIPOOL_REDIS_REPLICA_ACK_REQUIRED": ("redis_replica_ack_required",),
    "AIPOOL_REDIS_CONNECT_TIMEOUT": ("redis_connect_timeout_s",),
    "AIPOOL_REDIS_SOCKET_TIMEOUT": ("redis_socket_timeout_s",),
    "AIPOOL_TIMEZONE": ("timezone",),
    "AIPOOL_ENV": ("environment",),
    "AIPOOL_TASK_SOFT_TIME_LIMIT": ("task_soft_time_limit_s",),
    "AIPOOL_TASK_TIME_LIMIT": ("task_time_limit_s",),
    "AIPOOL_VISIBILITY_TIMEOUT": ("visibility_timeout_s",),
    "AIPOOL_RESULT_EXPIRES": ("result_expires_s",),
    "AIPOOL_LIMITS_FILE": ("limits_file",),
    "AIPOOL_ROUTES_FILE": ("routes_file",),
    "AIPOOL_ROUTING_MODEL_FILE": ("routing_model_file",),
    "AIPOOL_PRICES_FILE": ("prices_file",),
    "AIPOOL_MONTHLY_BUDGET_USD": ("monthly_budget_usd",),
    "AIPOOL_CLOUD_SPEND_CAP_USD": ("cloud_spend_cap_usd",),
    "AIPOOL_SAVING_THRESHOLD": ("saving_threshold",),
    "AIPOOL_SAVING_BELOW_PRIORITY": ("saving_below_priority",),
    "AIPOOL_MAX_PROMPT_TOKENS": ("max_prompt_tokens",),
    "AIPOOL_RATE_LIMIT_PAUSE_MAX_S": ("rate_limit_pause_max_s",),
    "AIPOOL_STATIC_ANSWER": ("static_answer",),
    "AIPOOL_REFUSAL_MESSAGE": ("refusal_message",),
    "AIPOOL_NEMOTRON_SYSTEM_PREFIX": ("nemotron_system_prefix",),
    "AIPOOL_CACHE_MAX_BYTES": ("cache_max_bytes",),
    "AIPOOL_CACHE_MAX_TEMPERATURE": ("cache_max_temperature",),
    "AIPOOL_CACHE_WAIT_S": ("cache_wait_s",),
    "AIPOOL_OTLP_ENDPOINT": ("otlp_endpoint",),
    "AIPOOL_TRACE_FILE": ("trace_file",),
    "AIPOOL_METRICS_PORT": ("metrics_port",),
    "AIPOOL_METRICS_HOST": ("metrics_host",),
    "AIPOOL_ALLOW_ANONYMOUS": ("allow_anonymous",),
    "AIPOOL_FLOWER_SHOWS_ANSWERS": ("flower_shows_answers",),
    "AIPOOL_TASK_EVENTS": ("task_events",),
    "PROMETHEUS_MULTIPROC_DIR": ("prometheus_multiproc_dir",),
    "AIPOOL_SECRETS_DIR": ("secrets_dir",),
    "AIPOOL_RUNTIME_DIR": ("runtime_dir",),
    "AIPOOL_DEMO_DIR": ("demo_dir",),
    "AIPOOL_SIMULATOR_ADMIN_URL": ("simulator_admin_url",),
    "AIPOOL_ALERTS": ("alerts", "sender"),
    "AIPOOL_ALERT_LANG": ("alerts", "lang"),
    "AIPOOL_SMTP_HOST": ("alerts", "smtp_host"),
    "AIPOOL_SMTP_PORT": ("alerts", "smtp_port"),
    "AIPOOL_SMTP_FROM": ("alerts", "smtp_from"),
    "AIPOOL_SMTP_TO": ("alerts", "smtp_to"),
    "AIPOOL_SMTP_USER": ("alerts", "smtp_user"),
    "AIPOOL_SMTP_STARTTLS": ("alerts", "smtp_starttls"),
}


def _provider_names(provider: str) -> dict[str, Path]:
    upper = provider.upper()
    names: dict[str, Path] = {
        CATALOG[provider].base_url_variable: ("providers", provider, "base_url"),
        f"AIPOOL_MODEL_{upper}": ("providers", provider, "model"),
        f"AIPOOL_TIMEOUT_{upper}": ("providers", provider, "timeout_s"),
    }
    for key in BREAKER_KEYS:
        names[f"AIPOOL_{upper}_{key.upper()}"] = ("providers", provider, "breaker", key)
    for key in QUOTA_KEYS:
        names[f"AIPOOL_{upper}_{key.upper()}"] = ("providers", provider, "quota", key)
    return names


#: Every variable the pool reads, and the model path it sets. ``<SECRET>_FILE`` variables name a
#: file holding the secret (see :data:`SECRETS`).
ENVIRONMENT: dict[str, Path] = {
    **_POOL,
    **{name: path for p in PROVIDERS for name, path in _provider_names(p).items()},
    **SECRETS,
}
SECRET_FILE_VARIABLES = {f"{name}_FILE": name for name in SECRETS}
#: The name each model path is set by, for messages about a value.
NAME_OF: dict[Path, str] = {path: name for name, path in ENVIRONMENT.items()}

#: Variables of the test and benchmark harnesses: they configure the harness, never the pool.
HARNESS_PREFIXES = ("AIPOOL_TEST_", "AIPOOL_BENCH_")
HARNESS_NAMES = frozenset(
    {
        "AIPOOL_SOAK_SECONDS",
        "AIPOOL_SOAK_SEED",
        "AIPOOL_DB_OUTAGE_SECONDS",
        "AIPOOL_RELIABILITY_REPORT",
        "AIPOOL_GUARDS_TEST_REDIS_URL",
        # docker-compose's image name, interpolated by Compose on the host.
        "AIPOOL_IMAGE",
    }
)
KNOWN = frozenset(ENVIRONMENT) | frozenset(SECRET_FILE_VARIABLES)


#: Settings the pool no longer reads, and why: setting one is refused with the reason.
RETIRED = {
    "AIPOOL_LOG_PROMPTS": "the pool never writes prompt text to its logs, at any level "
    "(docs/operations.md, What the pool stores, and where)",
}
#: How close a variable's first word must be to ``AIPOOL`` to be taken for a misspelling of it:
#: ``AIPOL`` and ``AIPOOOL`` are (0.91), ``AIRFLOW`` is not (0.46).
PREFIX_NEAR_MISS = 0.8
_WORD = PREFIX.rstrip("_")


def _looks_like_ours(name: str) -> bool:
    upper = name.upper()
    if upper.startswith(PREFIX):
        return True
    if upper in KNOWN:
        return name != upper  # a listed name in another case
    head = upper.split("_", 1)[0]
    return "_" in upper and difflib.SequenceMatcher(None, head, _WORD).ratio() >= PREFIX_NEAR_MISS


def unknown_names(environ: Mapping[str, str] | Iterable[str]) -> list[str]:
    """The variables in ``environ`` that look like the pool's and that it does not read, sorted."""
    return sorted(
        name
        for name in environ
        if _looks_like_ours(name)
        and name not in KNOWN
        and name.upper() not in HARNESS_NAMES
        and not name.upper().startswith(HARNESS_PREFIXES)
    )


def closest(name: str, candidates: Iterable[str]) -> str | None:
    """The candidate ``name`` was most likely meant to be, if one is close enough."""
    found = difflib.get_close_matches(name, list(candidates), n=1, cutoff=0.6)
    return found[0] if found else None


def not_a_setting(name: str) -> str:
    """The refusal of an unknown variable, naming the closest known one (or why it was retired)."""
    upper = name.upper()
    if upper in RETIRED:
        return f"{name} is no longer a setting: {RETIRED[upper]}"
    if upper in KNOWN:
        return f"{name} is not a setting: names are upper case (did you mean {upper}?)"
    guess = closest(upper, KNOWN)
    hint = f" (did you mean {guess}?)" if guess else ""
    return f"{name} is not a setting{hint}"
