"""The pool's settings as one typed model: what each value may be, and its default.

Values come from the sources in :mod:`aipool.settings.sources` (environment, secret files, the
limits file), highest first; what none of them sets keeps the default written here. Seconds are
``*_s``; secrets are :class:`~pydantic.SecretStr`, so neither a repr nor a log line shows them.
"""

from __future__ import annotations

import ipaddress
from decimal import Decimal
from functools import cached_property
from pathlib import Path
from typing import Any, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PositiveInt,
    SecretStr,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from aipool.settings.names import SECRETS
from aipool.settings.provider_limits import (
    UNLIMITED,
    BreakerSettings,
    ProviderLimits,
    QuotaLimits,
    Seconds,
    no_limit_word,
)
from aipool.settings.sources import pool_sources

STATIC_ANSWER_DEFAULT = "抱歉，AI 服務暫時不可用。請稍後再試，或聯繫管理員。"
REFUSAL_DEFAULT = (
    "This request needs a tool-capable model and none is available; nothing was executed."
)
DEFAULT_TIMEZONE = "Asia/Taipei"
#: Added to the hard time limit when no visibility timeout is set (see celeryconfig).
VISIBILITY_MARGIN_S = 60
#: How much longer than its timeout a WAIT may hold its connection: Redis ends a blocked WAIT at
#: its next cron tick (hz 10, every 100 ms), with some slack for a busy server.
WAIT_TICK_S = 0.2

_FROZEN = ConfigDict(frozen=True, extra="forbid")

#: How a Redis URL is written, for messages.
REDIS_URL_FORMS = (
    "redis://[:password@]host:6379/0, rediss://… (TLS), unix:///path/to/redis.sock "
    "or sentinel://host1:26379/0;sentinel://host2:26379/0;… (Redis Sentinel)"
)


def check_redis_url(value: str) -> str:
    """``value`` if redis-py can connect by it; else ``ValueError`` saying how it is written."""
    from urllib.parse import urlsplit

    from redis.connection import parse_url

    # deferred: aipool.redis is above the settings; this module must not import it at load
    from aipool.redis.sentinel import is_sentinel, parse

    if is_sentinel(value):
        parse(value)
        return value
    if value.startswith("redis+socket://"):
        raise ValueError(
            "redis+socket:// is how Celery producers spell a socket; write unix:// here"
        )
    try:
        parse_url(value)
        path = urlsplit(value).path.strip("/")
    except ValueError as exc:
        why = "no redis://, rediss:// or unix:// scheme" if "scheme" in str(exc) else str(exc)
        raise ValueError(f"is not a Redis URL ({why}); write {REDIS_URL_FORMS}") from None
    if not value.startswith("unix://") and path and not path.isdigit():
        raise ValueError(f"names database {path!r}, not a number; write {REDIS_URL_FORMS}")
    return value


class ProviderSettings(BaseModel):
    """Where a provider is, which model it serves by default, and how much it may be used."""

    model_config = _FROZEN

    base_url: str = Field(min_length=1)
    model: str = Field(min_length=1)
    timeout_s: Seconds
    api_key: SecretStr | None = None
    breaker: BreakerSettings
    quota: QuotaLimits

    @field_validator("base_url")
    @classmethod
    def _no_trailing_slash(cls, value: str) -> str:
        return value.rstrip("/")

    @property
    def limits(self) -> ProviderLimits:
        return ProviderLimits(self.breaker, self.quota)


class AlertSettings(BaseModel):
    """Who sends budget and breaker alerts, in which language, and on which channels."""

    model_config = _FROZEN

    sender: Literal["pool", "prometheus"] = "pool"
    lang: Literal["zh-TW", "en"] = "zh-TW"
    slack_webhook_url: SecretStr | None = None
    webhook_url: SecretStr | None = None
    smtp_host: str | None = None
    smtp_port: int = Field(default=25, ge=1, le=65535)
    smtp_from: str = "aipool@localhost"
    smtp_to: tuple[str, ...] = ()
    smtp_user: str | None = None
    smtp_password: SecretStr | None = None
    smtp_starttls: bool = False

    @field_validator("sender", mode="before")
    @classmethod
    def _sender_any_case(cls, value: Any) -> Any:
        return value.strip().lower() if isinstance(value, str) else value

    @field_validator("lang", mode="before")
    @classmethod
    def _lang_family(cls, value: Any) -> Any:
        # "en-US" or "EN" is English, "zh-tw" or "zh-Hant" Traditional Chinese, as before.
        if isinstance(value, str):
            text = value.strip().lower()
            if text.startswith("en"):
                return "en"
            if text.startswith("zh"):
                return "zh-TW"
        return value

    @field_validator("smtp_to", mode="before")
    @classmethod
    def _comma_separated(cls, value: Any) -> Any:
        if isinstance(value, str):
            return tuple(a.strip() for a in value.split(",") if a.strip())
        return value


#: Seconds a hop may run before its process is killed (Celery's hard time limit).
DEFAULT_HARD_LIMIT_S = 120


#: Every interface: where a worker's metrics listen unless ``AIPOOL_METRICS_HOST`` names one
#: address (:mod:`aipool.metrics.endpoint`).
EVERY_INTERFACE = "0.0.0.0"


class Settings(BaseSettings):
    """Every setting of the pool. Build it with :func:`aipool.settings.settings` (the current
    environment, checked) or :func:`aipool.settings.read_settings` (any mapping, with where each
    value came from)."""

    model_config = SettingsConfigDict(frozen=True, extra="forbid")

    redis_url: str | None = None
    database_url: str | None = None
    celery_broker_url: str | None = None
    celery_result_backend: str | None = None
    #: The name the sentinels know the master by, when a URL is ``sentinel://``
    #: (:mod:`aipool.redis.sentinel`).
    redis_sentinel_master: str | None = Field(default=None, min_length=1, validate_default=True)
    #: The sentinels' own password (their ``requirepass``), when they ask for one.
    redis_sentinel_password: SecretStr | None = None
    #: How many replicas must hold a write that decides a paid call before the pool goes on
    #: (Redis's ``WAIT``; :mod:`aipool.redis.durability`). 0: none, the writes replicate
    #: asynchronously as any other.
    redis_replica_acks: int = Field(default=0, ge=0)
    #: How long the pool waits for those replicas (``WAIT``'s timeout; never 0, which is forever).
    redis_replica_ack_timeout_s: Seconds = 0.1
    #: Fewer replicas in time: go on and say so (off), or refuse the paid call (on).
    redis_replica_ack_required: bool = False
    redis_connect_timeout_s: Seconds = 5.0
    redis_socket_timeout_s: Seconds = 5.0
    timezone: str = DEFAULT_TIMEZONE
    #: ``production`` (the image sets it) refuses what is only for one machine: the embedded Redis.
    environment: Literal["development", "production"] = "development"
    task_time_limit_s: PositiveInt = DEFAULT_HARD_LIMIT_S
    #: ``None`` (written ``unlimited``): no soft limit, a hop runs until the hard limit.
    task_soft_time_limit_s: PositiveInt | None = 90
    visibility_timeout_s: PositiveInt | None = None
    result_expires_s: PositiveInt = 3600
    limits_file: Path | None = None
    routes_file: Path | None = None
    #: The intent model workers and producers route with; None: the model shipped in the package.
    routing_model_file: Path | None = None
    prices_file: Path | None = None
    monthly_budget_usd: Decimal = Field(default=Decimal(10), gt=0)
    #: What paid calls may cost in a month, all services together; once reached, paid hops are
    #: skipped (``budget_exhausted``) and requests go on to free ones. None (``unlimited``): no cap.
    cloud_spend_cap_usd: Decimal | None = Field(default=None, gt=0)
    #: From which fraction of a provider's daily tokens, or of the monthly budget, requests below
    #: ``saving_below_priority`` stay off paid hops (``budget_saving``). None (``off``): never.
    saving_threshold: float | None = Field(default=0.9, gt=0, le=1)
    saving_below_priority: Literal["low", "normal", "high", "critical"] = "normal"
    max_prompt_tokens: PositiveInt = 32_000
    #: The longest a provider's declared retry delay pauses it (a 429's ``Retry-After``,
    #: Gemini's ``RetryInfo``): a provider asking for more is paused this long, then tried.
    rate_limit_pause_max_s: Seconds = 300.0
    static_answer: str = STATIC_ANSWER_DEFAULT
    refusal_message: str = REFUSAL_DEFAULT
    # Nemotron's reasoning models take their mode from the system prompt; tool calling works best
    # with reasoning off (NVIDIA's model card), and it is much faster.
    nemotron_system_prefix: str = "detailed thinking off"
    #: Bearer token the usage report (``aipool status --serve``) asks for.
    health_token: SecretStr | None = None
    #: Bearer token a worker's metrics endpoint (``AIPOOL_METRICS_PORT``) asks for.
    metrics_token: SecretStr | None = None
    #: Let Flower, the usage report and the workers' metrics serve without a login (``AIPOOL_ALLOW_ANONYMOUS=1``);
    #: off, each refuses to start without one (:mod:`aipool.views.serving`).
    allow_anonymous: bool = False
    #: Let Flower show answers (``AIPOOL_FLOWER_SHOWS_ANSWERS=1``): the worker puts the answer's
    #: repr in its task-succeeded events, and Flower reads results from the result backend. Off,
    #: watching queues in Flower needs no access to answers (``workers.messages``).
    flower_shows_answers: bool = False
    #: Whether workers send task events from the start (``AIPOOL_TASK_EVENTS``). Only Flower reads
    #: them; off, a running Flower still turns them on in every worker it reaches (its periodic
    #: ``enable_events``), and a pool without Flower saves their cost on every hop.
    task_events: bool = True
    #: The key of the response cache's HMAC (``AIPOOL_CACHE_SECRET``): entries are named by a
    #: keyed hash of what decides an answer, so reading Redis tells nothing of what was asked.
    #: Unset, nothing is cached, whatever the route table says (:mod:`aipool.cache`).
    cache_secret: SecretStr | None = None
    #: The most the response cache holds in Redis, entries and their index (least recently used
    #: entries go first beyond it).
    cache_max_bytes: PositiveInt = 64 * 1024 * 1024
    #: Requests asking for a higher temperature are never cached (each asks for a new answer).
    cache_max_temperature: float = Field(default=0.5, ge=0, le=2)
    #: How long identical requests wait for the first one's answer before they ask a provider.
    cache_wait_s: Seconds = 30.0
    #: Where spans go, OTLP over HTTP (``http://collector:4318``); unset with no
    #: ``AIPOOL_TRACE_FILE``, nothing is traced (:mod:`aipool.tracing`).
    otlp_endpoint: str | None = None
    #: A file every span is written to as JSON, one object per span (the console exporter).
    trace_file: Path | None = None
    metrics_port: int = Field(default=9808, ge=1, le=65535)
    #: The address a worker's metrics endpoint listens on: every interface by default, since
    #: Prometheus scrapes a worker from outside its container; one address keeps it there.
    metrics_host: str = EVERY_INTERFACE
    prometheus_multiproc_dir: Path | None = None
    secrets_dir: Path = Path("/run/secrets")
    runtime_dir: Path | None = None
    demo_dir: Path | None = None
    simulator_admin_url: str | None = None
    alerts: AlertSettings = AlertSettings()
    providers: dict[str, ProviderSettings]

    @field_validator("cloud_spend_cap_usd", mode="before")
    @classmethod
    def _cap_unlimited(cls, value: Any) -> Any:
        return None if no_limit_word(value) else value

    @field_validator("saving_threshold", mode="before")
    @classmethod
    def _saving_off(cls, value: Any) -> Any:
        if isinstance(value, str) and value.strip().lower() in ("off", "none", "never"):
            return None
        return value

    @field_validator("task_soft_time_limit_s", mode="before")
    @classmethod
    def _soft_limit_said_explicitly(cls, value: Any) -> Any:
        if no_limit_word(value):
            return None
        if isinstance(value, int | str) and str(value).strip() == "0":
            raise ValueError(f"0 no longer means no soft limit: write {UNLIMITED!r}")
        return value

    @model_validator(mode="before")
    @classmethod
    def _default_soft_within_hard(cls, data: Any) -> Any:
        # The default soft limit leaves a hop 30 s of its 120 s hard limit to answer or move on.
        # With a shorter hard limit set and no soft limit, the default keeps that proportion
        # instead of exceeding the hard limit (which Celery refuses).
        if not isinstance(data, dict) or "task_soft_time_limit_s" in data:
            return data
        try:
            hard = int(str(data.get("task_time_limit_s", DEFAULT_HARD_LIMIT_S)).strip())
        except ValueError:
            return data  # the hard limit's own validation names the problem
        if hard < DEFAULT_HARD_LIMIT_S:
            data = {**data, "task_soft_time_limit_s": max(1, hard * 3 // 4)}
        return data

    @field_validator("task_soft_time_limit_s")
    @classmethod
    def _soft_within_hard(cls, value: int | None, info: ValidationInfo) -> int | None:
        # Celery refuses to send a message whose soft limit exceeds its hard one: every hop
        # re-dispatched with the pool's limits would fail.
        hard = info.data.get("task_time_limit_s")
        if value is not None and hard is not None and value > hard:
            raise ValueError(f"must not exceed the hard limit AIPOOL_TASK_TIME_LIMIT ({hard} s)")
        return value

    @field_validator("visibility_timeout_s")
    @classmethod
    def _visibility_beyond_hard(cls, value: int | None, info: ValidationInfo) -> int | None:
        # On Redis a message a worker holds longer than the visibility timeout is given to another
        # worker: a hop still running within its hard limit would run, and be paid for, twice.
        hard = info.data.get("task_time_limit_s")
        if value is not None and hard is not None and value <= hard:
            raise ValueError(
                f"must exceed the hard limit AIPOOL_TASK_TIME_LIMIT={hard}: a hop still running "
                f"after {value} s would be given to a second worker and run twice (unset, it is "
                f"the hard limit + {VISIBILITY_MARGIN_S} s)"
            )
        return value

    @field_validator("redis_url", "celery_result_backend")
    @classmethod
    def _redis_url(cls, value: str | None) -> str | None:
        # A URL redis-py cannot read would fail every command and worker later, with a traceback
        # far from the variable that caused it (`redis//host` read as "internal error").
        if value is None:
            return value
        return check_redis_url(value)

    @field_validator("redis_socket_timeout_s")
    @classmethod
    def _socket_outlasts_wait(cls, value: float, info: ValidationInfo) -> float:
        # A WAIT holds its connection until its timeout and Redis's next tick (hz 10: up to
        # 100 ms more): a socket timeout within that would fail every paid hop's begin, as a
        # Redis that does not answer, each time a replica is away.
        acks = info.data.get("redis_replica_acks") or 0
        wait = info.data.get("redis_replica_ack_timeout_s")
        if acks and wait is not None and value <= wait + WAIT_TICK_S:
            raise ValueError(
                f"must exceed AIPOOL_REDIS_REPLICA_ACK_TIMEOUT ({wait:g} s) by more than "
                f"{WAIT_TICK_S:g} s while AIPOOL_REDIS_REPLICA_ACKS is set: a WAIT holds its "
                "connection that long when no replica answers"
            )
        return value

    @field_validator("redis_sentinel_master")
    @classmethod
    def _named_with_sentinels(cls, value: str | None, info: ValidationInfo) -> str | None:
        # kombu, Celery and redis-py all need the master's name beside a sentinel:// URL; without
        # it every worker would fail at its first connection instead of here, in one line.
        from aipool.redis.sentinel import is_sentinel

        named = {
            "REDIS_URL": info.data.get("redis_url"),
            "CELERY_BROKER_URL": info.data.get("celery_broker_url"),
            "CELERY_RESULT_BACKEND": info.data.get("celery_result_backend"),
        }
        sentinel = [name for name, url in named.items() if url and is_sentinel(url)]
        if sentinel and not value:
            verb = "names" if len(sentinel) == 1 else "name"
            raise ValueError(
                f"must be set when {' and '.join(sentinel)} {verb} Redis Sentinels (sentinel://): "
                "the name they monitor the master by (their `sentinel monitor <name> ...`)"
            )
        return value

    @field_validator("database_url")
    @classmethod
    def _database_url(cls, value: str | None) -> str | None:
        if value is None:
            return value
        from sqlalchemy.engine import make_url
        from sqlalchemy.exc import ArgumentError

        try:
            make_url(value)
        except ArgumentError:
            raise ValueError(
                "is not a database URL (e.g. postgresql+psycopg://user:password@host:5432/aipool "
                "or sqlite:///var/aipool.db)"
            ) from None
        return value

    @field_validator("otlp_endpoint")
    @classmethod
    def _otlp_endpoint(cls, value: str | None) -> str | None:
        if value is None or not value.strip():
            return None
        from urllib.parse import urlsplit

        parts = urlsplit(value.strip())
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(
                "is not an OTLP/HTTP endpoint (e.g. http://otel-collector:4318; spans are "
                "posted to its /v1/traces)"
            )
        return value.strip().rstrip("/")

    @field_validator("metrics_host")
    @classmethod
    def _ip_address(cls, value: str) -> str:
        try:
            ipaddress.ip_address(value)
        except ValueError:
            raise ValueError(
                "is not an IP address to listen on; write 0.0.0.0 (every interface), "
                "127.0.0.1 (this host only) or one of this host's addresses"
            ) from None
        return value

    @field_validator("timezone")
    @classmethod
    def _known_zone(cls, value: str) -> str:
        try:
            ZoneInfo(value)
        except (ZoneInfoNotFoundError, ValueError):
            raise ValueError("is not a time zone name (e.g. Asia/Taipei, UTC)") from None
        return value

    @property
    def zone(self) -> ZoneInfo:
        """The calendar of quotas, roll-ups, alerts and beat."""
        return ZoneInfo(self.timezone)

    @property
    def effective_visibility_timeout_s(self) -> int:
        """The visibility timeout in force: the one set, else the hard limit plus a minute."""
        if self.visibility_timeout_s is not None:
            return self.visibility_timeout_s
        return self.task_time_limit_s + VISIBILITY_MARGIN_S

    @cached_property
    def limits(self) -> dict[str, ProviderLimits]:
        """Breaker settings and quota limits of every provider."""
        return {name: p.limits for name, p in self.providers.items()}

    def secret(self, name: str) -> str | None:
        """The value of the secret variable ``name`` (e.g. ``GEMINI_API_KEY``), if configured."""

        node: Any = self
        for key in SECRETS[name]:
            node = node[key] if isinstance(node, dict) else getattr(node, key)
        return node.get_secret_value() if node is not None else None

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        # The pool's own sources replace pydantic-settings' defaults: its variables do not follow
        # one prefix (REDIS_URL, GEMINI_API_KEY, AIPOOL_GEMINI_RPM), and every value must say where
        # it came from (`aipool config`).

        return (init_settings, *pool_sources(settings_cls))
