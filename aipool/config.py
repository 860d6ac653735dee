"""Where the pool finds its providers and how long it waits for them.

Every value comes from the environment (12-factor); API keys come from the environment or from mounted
secret files (see :mod:`aipool.secrets`) and are never part of this module's repr or any log line.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from zoneinfo import ZoneInfo

STATIC_ANSWER_DEFAULT = "抱歉，AI 服務暫時不可用。請稍後再試，或聯繫管理員。"
REFUSAL_DEFAULT = (
    "This request needs a tool-capable model and none is available; nothing was executed."
)

# Base URLs are what each SDK takes (DESIGN.md). Ollama's default is Ollama's own default address.
_BASE_URL_DEFAULTS = {
    "ollama": ("OLLAMA_BASE_URL", "http://127.0.0.1:11434"),
    "gemini": ("GEMINI_BASE_URL", "https://generativelanguage.googleapis.com"),
    "claude": ("ANTHROPIC_BASE_URL", "https://api.anthropic.com"),
    "nemotron": ("NVIDIA_BASE_URL", "https://integrate.api.nvidia.com/v1"),
}
# Seconds per call. Nemotron's tool calls take 11-45 s (ADR-006 §8); the others answer in seconds.
_TIMEOUT_DEFAULTS = {"ollama": 30.0, "gemini": 30.0, "claude": 30.0, "nemotron": 60.0}
_KEY_NAMES = {
    "gemini": "GEMINI_API_KEY",
    "claude": "ANTHROPIC_API_KEY",
    "nemotron": "NVIDIA_API_KEY",
}


def base_url(provider: str) -> str:
    """The base URL the provider's SDK is pointed at."""
    env, default = _BASE_URL_DEFAULTS[provider]
    return os.environ.get(env, default).rstrip("/")


def timeout_s(provider: str) -> float:
    """Per-call timeout for ``provider`` (``AIPOOL_TIMEOUT_<PROVIDER>``, seconds)."""
    return float(os.environ.get(f"AIPOOL_TIMEOUT_{provider.upper()}", _TIMEOUT_DEFAULTS[provider]))


def key_name(provider: str) -> str | None:
    """The environment variable (or secret file name) holding ``provider``'s API key, if any."""
    return _KEY_NAMES.get(provider)


def static_answer() -> str:
    return os.environ.get("AIPOOL_STATIC_ANSWER", STATIC_ANSWER_DEFAULT)


def refusal_message() -> str:
    return os.environ.get("AIPOOL_REFUSAL_MESSAGE", REFUSAL_DEFAULT)


DEFAULT_TIMEZONE = "Asia/Taipei"


def timezone(name: str | None = None) -> ZoneInfo:
    """The calendar of quotas, roll-ups, alerts and beat: ``name``, else ``AIPOOL_TIMEZONE``,
    else Asia/Taipei. Every part of the pool asks here, so they agree on when a day starts."""
    return ZoneInfo(name or os.environ.get("AIPOOL_TIMEZONE") or DEFAULT_TIMEZONE)


def log_prompts() -> bool:
    """Prompt text is kept out of logs unless an operator turns this on for debugging."""
    return os.environ.get("AIPOOL_LOG_PROMPTS", "").lower() in ("1", "true", "yes")


@dataclass(frozen=True)
class ProviderEndpoint:
    """Everything an adapter needs to build its SDK client (the key is read, never stored here)."""

    provider: str
    base_url: str
    timeout_s: float

    @classmethod
    def for_provider(cls, provider: str) -> ProviderEndpoint:
        return cls(provider=provider, base_url=base_url(provider), timeout_s=timeout_s(provider))
