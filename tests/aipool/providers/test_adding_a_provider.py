"""docs/adding-a-provider.md, followed with a sixth provider: one catalog entry and one adapter
module make it a provider the whole pool knows.

Run in a fresh interpreter, because the catalog is read once, when the pool's modules are imported.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]

#: The walkthrough's steps 1 and 2, then what the pool does with the new provider.
SCRIPT = r"""
import json, os
from aipool.providers import catalog

# Step 1: the catalog entry, at its place in the fallback order (after Gemini, before Claude).
echo = catalog.ProviderFacts(
    name="echo", display_name="Echo", vendor="ECHO", base_url="http://127.0.0.1:9",
    model="echo-1", timeout_s=10.0, adapter="tests.support.echo_provider:EchoProvider",
    sdk_module="json", paid=True, general=True, tools=False,
    quota=catalog.Quota(rpm=30, daily_tokens=10_000),
)
entries = list(catalog.CATALOG.items())
entries.insert([n for n, _ in entries].index("claude"), ("echo", echo))
catalog.CATALOG.clear()
catalog.CATALOG.update(entries)
catalog.PROVIDERS = tuple(catalog.CATALOG)

from aipool.budget.messages import display_name
from aipool.chains import GENERAL_CHAIN, build_chain
from aipool.contract.request import parse_request
from aipool.prices.table import load_prices
from aipool.providers import get_provider
from aipool.routing.router import decide
from aipool.settings import settings
from celeryconfig import QUEUES

s = settings()
request = parse_request({"prompt": "hello", "intent": "CHAT"})
print(json.dumps({
    "chain": list(GENERAL_CHAIN),
    "queues": list(QUEUES),
    "model": s.providers["echo"].model,
    "rpm": s.providers["echo"].quota.rpm,
    "base_url": s.providers["echo"].base_url,
    "daily_tokens": s.providers["echo"].quota.daily_tokens,
    "threshold": s.providers["echo"].breaker.failure_threshold,
    "answer": get_provider("echo").complete(request, "echo-1").text,
    "price": str(load_prices().price("echo", "echo-1").input_per_1k),
    "display": display_name("echo"),
    "route": [h.provider for h in decide(request).chain],
}))
"""


def test_a_sixth_provider_needs_only_its_catalog_entry_and_its_adapter(tmp_path: Path) -> None:
    routes = tmp_path / "routes.toml"
    routes.write_text(
        (ROOT / "aipool" / "routing" / "routes.toml")
        .read_text()
        .replace(
            "[[rules]]",
            '[[rules]]\nname = "chat_on_echo"\nintents = ["CHAT"]\nprovider = "echo"\n\n[[rules]]',
            1,
        )
    )
    prices = tmp_path / "prices.toml"
    prices.write_text('[echo]\ninput_per_1k = "0.002"\noutput_per_1k = "0.004"\n')
    env = {
        **os.environ,
        "AIPOOL_ECHO_RPM": "30",
        "ECHO_BASE_URL": "http://127.0.0.1:8099",
        "AIPOOL_ROUTES_FILE": str(routes),
        "AIPOOL_PRICES_FILE": str(prices),
    }
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["chain"] == ["ollama", "gemini", "echo", "claude"]
    assert "echo" in seen["queues"]
    assert (seen["model"], seen["rpm"], seen["daily_tokens"]) == ("echo-1", 30, 10_000)
    assert seen["base_url"] == "http://127.0.0.1:8099"
    assert seen["threshold"] == 5
    assert seen["answer"] == "echo-1 read 1 turn(s)"
    assert seen["price"] == "0.002"
    assert seen["display"] == "Echo"
    assert seen["route"][0] == "echo"
