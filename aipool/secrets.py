"""API keys, read from the environment or from mounted secret files, never from task arguments.

Lookup order for a name such as ``GEMINI_API_KEY``: the variable itself; a file named by
``GEMINI_API_KEY_FILE``; ``$AIPOOL_SECRETS_DIR/gemini_api_key`` (default ``/run/secrets``, where
Docker and Kubernetes mount secrets).
"""

from __future__ import annotations

import os
from pathlib import Path


def read_secret(name: str) -> str | None:
    """Return the secret ``name`` or ``None`` when it is not configured anywhere."""
    value = os.environ.get(name)
    if value:
        return value.strip()
    candidates = []
    if os.environ.get(f"{name}_FILE"):
        candidates.append(Path(os.environ[f"{name}_FILE"]))
    candidates.append(Path(os.environ.get("AIPOOL_SECRETS_DIR", "/run/secrets")) / name.lower())
    for path in candidates:
        try:
            text = path.read_text(encoding="utf-8").strip()
        except OSError:
            continue
        if text:
            return text
    return None
