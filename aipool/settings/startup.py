"""What a worker, beat or command does with the settings before it starts: refuse them whole when
any is wrong (the route table and the price table included), and say once which quotas are set below ADR-006's
numbers (accepted: a site may want less than the free tier allows, but it should know why
requests move on sooner)."""

from __future__ import annotations

from aipool.errors import SettingsError
from aipool.prices.table import PriceFileError, load_prices
from aipool.routing.model import ModelError, load_model
from aipool.routing.table import RouteTableError, load_table
from aipool.settings import Settings, settings
from aipool.settings.names import NAME_OF
from aipool.settings.provider_limits import below_adr
from aipool.settings.time_limits import time_limit_problems


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


def route_table_problems() -> list[str]:
    """What is wrong with the route table in force (``AIPOOL_ROUTES_FILE``), if anything."""
    try:
        load_table()
    except RouteTableError as exc:
        return [f"AIPOOL_ROUTES_FILE: {exc}"]
    return []


def routing_model_problems() -> list[str]:
    """What is wrong with the intent model in force (``AIPOOL_ROUTING_MODEL_FILE``), if anything:
    a model that does not load is refused at start, naming its path, not at the first request."""
    try:
        load_model()
    except ModelError as exc:
        return [f"AIPOOL_ROUTING_MODEL_FILE: {exc}"]
    return []


def price_table_problems() -> list[str]:
    """What is wrong with the price table in force (``AIPOOL_PRICES_FILE`` merged over the
    packaged prices), if anything: one line naming the file and the key."""

    try:
        load_prices()
    except PriceFileError as exc:
        return [f"AIPOOL_PRICES_FILE: {exc}"]
    return []


def check_at_start() -> Settings:
    """The settings (provider timeouts under the soft limit included), the route table, the intent
    model and the price table, checked: raises :class:`SettingsError` naming every problem.
    Quotas below ADR-006's are accepted (see :func:`below_adr_notes`)."""
    current = settings()
    problems = time_limit_problems(current) + route_table_problems()
    problems += routing_model_problems() + price_table_problems()
    if problems:
        raise SettingsError(problems)
    return current
