"""API keys and alert credentials: read by :mod:`aipool.settings`, never from task arguments.

Lookup order for a name such as ``GEMINI_API_KEY``: the variable itself; a file named by
``GEMINI_API_KEY_FILE``; ``$AIPOOL_SECRETS_DIR/gemini_api_key`` (default ``/run/secrets``, where
Docker and Kubernetes mount secrets). Values are kept as secrets in the settings, so no repr or
log line shows them; :mod:`aipool.scrub` removes them from anything the pool writes.
"""

from __future__ import annotations

from pathlib import Path

from aipool.settings import settings
from aipool.settings.names import SECRETS

#: Every configured value that must never be written anywhere: the provider keys and the
#: credentials of the alert channels (a Slack webhook URL is its own secret).
SECRET_NAMES: tuple[str, ...] = tuple(SECRETS)


def secrets_dir() -> Path:
    """Where mounted secret files live (``AIPOOL_SECRETS_DIR``, default ``/run/secrets``)."""
    return settings().secrets_dir


def read_secret(name: str) -> str | None:
    """Return the secret ``name`` or ``None`` when it is not configured anywhere."""
    return settings().secret(name)


def configured_secrets(names: tuple[str, ...] = SECRET_NAMES) -> list[str]:
    """The values of ``names`` that are configured, wherever each one comes from."""
    return [value for name in names if (value := read_secret(name))]
