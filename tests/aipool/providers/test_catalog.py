"""The provider catalog is the one list of providers: every deploy file and table names exactly its
providers, and every fact in it leads somewhere real."""

from __future__ import annotations

import importlib
import shlex
import tomllib
from collections.abc import Iterator
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest
import yaml

from aipool.providers.base import Provider
from aipool.providers.catalog import CATALOG, PROVIDERS
from aipool.settings.names import ENVIRONMENT, SECRETS

ROOT = Path(__file__).resolve().parents[3]
#: Queues that are not a provider's: routing, beat's work, Celery's default.
NOT_PROVIDERS = {"router", "maintenance", "celery"}
_METHODS = [name for name in vars(Provider) if not name.startswith("_")]


def _providers_of(queues: set[str]) -> set[str]:
    # A provider may be served on more than one lane (its queue and, say, "<provider>.urgent").
    return {q.split(".", 1)[0] for q in queues} - NOT_PROVIDERS


def _queues_in(args: list[str]) -> Iterator[str]:
    for flag, value in pairwise(args):
        if flag in ("-Q", "--queues"):
            yield from value.split(",")
    for arg in args:
        if arg.startswith("--queues="):
            yield from arg.removeprefix("--queues=").split(",")


def _documents(folder: Path) -> Iterator[dict[str, Any]]:
    for path in sorted(folder.glob("*.yaml")):
        yield from (doc for doc in yaml.safe_load_all(path.read_text()) if doc)


def test_compose_runs_a_worker_for_every_provider_and_for_no_other() -> None:
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    queues: set[str] = set()
    for service in compose["services"].values():
        command = service.get("command") or []
        args = shlex.split(command) if isinstance(command, str) else [str(a) for a in command]
        queues.update(_queues_in(args))
    assert _providers_of(queues) == set(PROVIDERS)


def test_kubernetes_deploys_a_worker_for_every_provider_and_for_no_other() -> None:
    queues: set[str] = set()
    for doc in _documents(ROOT / "k8s" / "workers"):
        if doc.get("kind") != "Deployment":
            continue
        for container in doc["spec"]["template"]["spec"]["containers"]:
            queues.update(_queues_in([str(a) for a in container.get("args", [])]))
    assert _providers_of(queues) == set(PROVIDERS)


def test_keda_scales_every_providers_queue_and_no_other() -> None:
    queues = {
        trigger["metadata"]["listName"]
        for doc in _documents(ROOT / "k8s" / "keda")
        if doc.get("kind") == "ScaledObject"
        for trigger in doc["spec"]["triggers"]
        if "listName" in trigger.get("metadata", {})
    }
    assert _providers_of(queues) == set(PROVIDERS)


def test_the_price_table_prices_every_provider_and_no_other() -> None:
    prices = tomllib.loads((ROOT / "aipool" / "prices" / "prices.toml").read_text())
    assert set(prices) == set(PROVIDERS)


def test_the_route_table_starts_requests_only_at_catalog_providers_and_uses_each() -> None:
    routes = tomllib.loads((ROOT / "aipool" / "routing" / "routes.toml").read_text())
    named = {rule["provider"] for rule in routes["rules"]}
    # A context window is keyed by provider or by "provider:model".
    named |= {key.split(":", 1)[0] for key in routes.get("context_windows", {})}
    assert named == set(PROVIDERS)


@pytest.mark.parametrize("name", PROVIDERS)
def test_each_providers_adapter_and_sdk_exist_and_its_settings_are_read(name: str) -> None:
    facts = CATALOG[name]
    module, _, cls = facts.adapter.partition(":")
    adapter = getattr(importlib.import_module(module), cls)
    # Provider is a protocol: the adapter has its methods.
    assert _METHODS
    assert all(callable(getattr(adapter, method, None)) for method in _METHODS)
    importlib.import_module(facts.sdk_module)
    assert ENVIRONMENT[facts.base_url_variable] == ("providers", name, "base_url")
    assert SECRETS[facts.api_key_variable] == ("providers", name, "api_key")
    assert ENVIRONMENT[f"AIPOOL_MODEL_{name.upper()}"] == ("providers", name, "model")
