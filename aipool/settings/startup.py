"""What a worker, beat or command does with the settings before it starts: refuse them whole when
any is wrong, and say once which quotas are set below ADR-006's numbers (accepted: a site may
want less than the free tier allows, but it should know why requests move on sooner)."""

from __future__ import annotations

import logging

from aipool.settings import Settings, settings
from aipool.settings.names import NAME_OF
from aipool.settings.provider_limits import below_adr


def below_adr_notes(current: Settings) -> list[str]:
    """One line per quota limit set below ADR-006's, naming its variable and both numbers."""
    notes = []
    for provider, configured in current.providers.items():
        for name, value, adr in below_adr(provider, configured.quota):
            variable = NAME_OF[("providers", provider, "quota", name)]
            notes.append(
                f"{variable}={value} is below ADR-006's {adr} for {provider}: accepted; "
                f"{provider} runs out sooner than the ADR plans for"
            )
    return notes


def check_at_start(log: logging.Logger) -> Settings:
    """The settings, checked (raises :class:`~aipool.errors.SettingsError`), with each quota
    below ADR-006's logged once as a warning on ``log``."""
    current = settings()
    for note in below_adr_notes(current):
        log.warning(note)
    return current
