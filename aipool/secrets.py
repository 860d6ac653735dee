"""API keys, read from the environment or from mounted secret files, never from task arguments.

Lookup order for a name such as ``GEMINI_API_KEY``: the variable itself; a file named by
``GEMINI_API_KEY_FILE``; ``$AIPOOL_SECRETS_DIR/gemini_api_key`` (default ``/run/secrets``, where
Docker and Kubernetes mount secrets).
"""

from __future__ import annotations

import os
from pathlib import Path

#: The provider keys the adapters send (the ollama client sends ``OLLAMA_API_KEY`` on its own when
#: an Ollama server sits behind an authenticating proxy).
PROVIDER_KEYS: tuple[str, ...] = (
    "GEMINI_API_KEY",
    "ANTHROPIC_API_KEY",
    "NVIDIA_API_KEY",
    "OLLAMA_API_KEY",
)
#: Every configured value that must never be written anywhere: the provider keys and the
#: credentials of the alert channels (a Slack webhook URL is its own secret).
SECRET_NAMES: tuple[str, ...] = (
    *PROVIDER_KEYS,
    "AIPOOL_SMTP_PASSWORD",
    "AIPOOL_SLACK_WEBHOOK_URL",
    "AIPOOL_ALERT_WEBHOOK_URL",
)


def secrets_dir() -> Path:
    """Where mounted secret files live (``AIPOOL_SECRETS_DIR``, default ``/run/secrets``)."""
    return Path(os.environ.get("AIPOOL_SECRETS_DIR", "/run/secrets"))


def read_secret(name: str) -> str | None:
    """Return the secret ``name`` or ``None`` when it is not configured anywhere."""
    value = os.environ.get(name)
    if value:
        return value.strip()
    candidates = []
    if os.environ.get(f"{name}_FILE"):
        candidates.append(Path(os.environ[f"{name}_FILE"]))
    candidates.append(secrets_dir() / name.lower())
    for path in candidates:
        try:
            text = path.read_text(encoding="utf-8").strip()
        except OSError:
            continue
        if text:
            return text
    return None


def configured_secrets(names: tuple[str, ...] = SECRET_NAMES) -> list[str]:
    """The values of ``names`` that are configured, wherever each one comes from."""
    return [value for name in names if (value := read_secret(name))]
