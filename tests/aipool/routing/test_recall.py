"""The worker's own route, remembered: always the decision ``decide`` makes, never the prompt."""

from __future__ import annotations

import os
from dataclasses import fields, replace
from pathlib import Path
from typing import Any

import pytest

from aipool.contract.request import Message, Request, Tool, parse_request
from aipool.routing import corpus
from aipool.routing.recall import Recall, decision_inputs
from aipool.routing.router import decide
from aipool.routing.table import DEFAULT_ROUTES_FILE

TOOL = Tool(name="k8s_restart", description="restart", parameters={"type": "object"})


def _request(text: str, **kwargs: Any) -> Request:
    return Request(messages=(Message(role="user", content=text),), **kwargs)


def _frozen_set() -> list[Request]:
    """The corpus's frozen test split, and each of its first rows with every declared field the
    router reads set (a system prompt, earlier turns, tools, an intent, a priority, a service)."""
    requests = [parse_request({"prompt": row["text"]}) for row in corpus.load("test")]
    for base in requests[:40]:
        text = base.last_user_text()
        requests += [
            replace(base, system="You are the on-call assistant for payments."),
            replace(base, messages=(Message("user", "earlier: the db is slow"), *base.messages)),
            replace(base, tools=(TOOL,)),
            replace(base, intent="CODE_REVIEW"),
            replace(base, priority="critical"),
            replace(base, priority="low", service="copilot"),
            _request(text + " Correlate with the checkout-service alerts."),
        ]
    return requests


def test_the_remembered_route_is_the_decision_on_a_frozen_set() -> None:
    recall = Recall()
    requests = _frozen_set()
    # When each request of the frozen set is routed, and then routed again from memory
    first = [recall.route(r) for r in requests]
    again = [recall.route(r) for r in requests]
    # Then both equal deciding it afresh, route for route (chain, intent, reason, all of it)
    decided = [decide(r) for r in requests]
    assert first == decided
    assert again == decided


def test_a_request_that_differs_in_anything_the_router_reads_is_decided_apart() -> None:
    recall = Recall()
    base = _request("Review this diff please: ```\n+ x = 1\n```")
    variants = [
        replace(base, intent="ALERT_TRIAGE"),
        replace(base, tools=(TOOL,)),
        replace(base, priority="critical"),
        replace(base, service="copilot"),
        replace(base, system="Review nothing."),
        replace(base, messages=(Message("user", "restart the api"),)),
        replace(base, messages=(*base.messages, Message("assistant", "ok"))),
    ]
    recall.route(base)
    for variant in variants:
        # When a request differs from one decided before only in one value the router reads
        # Then it gets its own decision, not the remembered one
        assert recall.route(variant) == decide(variant)
    assert len({recall.route(v).reason for v in [base, *variants]}) > 1


class _Watched(Request):
    """A request that notes which of its fields are read."""

    read: set[str]

    def __getattribute__(self, name: str) -> Any:
        if name in _FIELDS:
            object.__getattribute__(self, "read").add(name)
        return object.__getattribute__(self, name)


_FIELDS = {f.name for f in fields(Request)}


def _watched(request: Request) -> _Watched:
    watched = _Watched(**{f.name: getattr(request, f.name) for f in fields(Request)})
    object.__setattr__(watched, "read", set())
    return watched


@pytest.mark.parametrize(
    "request_",
    [
        _request("What is a pod?"),
        _request("restart payment-api", tools=(TOOL,), system="ops", service="billing"),
        _request("Summarise the incident", priority="critical", intent="ALERT_TRIAGE"),
    ],
)
def test_the_key_holds_every_field_the_router_reads(request_: Request) -> None:
    # When the router decides a request, and when the key is made of it
    deciding, keyed = _watched(request_), _watched(request_)
    decide(deciding)
    list(decision_inputs(keyed))
    # Then the key reads every field the decision read (the rest cannot change the route)
    assert deciding.read <= keyed.read, deciding.read - keyed.read


def test_what_the_key_leaves_out_never_changes_the_route() -> None:
    base = _request("restart payment-api", tools=(TOOL,))
    others = [
        replace(base, max_tokens=64, temperature=0.1, deadline_s=3.0, user_id="u-1"),
        replace(base, metadata={"ticket": "INC-1"}),
        replace(base, tools=(Tool(name="other", description="else", parameters={}),)),
    ]
    # Fields the key leaves out, and tools' contents (only their count is read)
    assert all(decide(other) == decide(base) for other in others)


def test_a_new_route_table_is_decided_again(tmp_path: Path, monkeypatch: Any) -> None:
    routes = tmp_path / "routes.toml"
    routes.write_text(DEFAULT_ROUTES_FILE.read_text(encoding="utf-8"), encoding="utf-8")
    monkeypatch.setenv("AIPOOL_ROUTES_FILE", str(routes))
    recall = Recall()
    critical = _request("Summarise the incident", priority="critical")
    assert recall.route(critical).chain[0].provider == "claude"
    # When the table changes (a critical request now starts at Gemini)
    text = routes.read_text(encoding="utf-8")
    changed = text.replace(
        'priorities = ["critical"]\nprovider = "claude"',
        'priorities = ["critical"]\nprovider = "gemini"',
    )
    assert changed != text
    routes.write_text(changed, encoding="utf-8")
    stat = routes.stat()
    os.utime(routes, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))
    # Then the same request gets the new table's route, not the one remembered
    assert recall.route(critical).chain[0].provider == "gemini"
    assert recall.route(critical) == decide(critical)


def test_no_prompt_text_is_kept_and_each_process_keys_its_own() -> None:
    word = "zebra-7f3a"
    request = _request(f"What is a pod? {word}")
    recall, other = Recall(), Recall()
    recall.route(request)
    other.route(request)
    # Then what is kept is a digest and the route, which holds no word of the prompt
    (digest,) = recall._routes
    assert len(digest) == 16 and word.encode() not in digest
    assert word not in repr(recall._routes)
    # And another process's key digests the same request otherwise: a digest cannot be matched
    # against guessed prompts without the key, which never leaves the process
    assert set(recall._routes) != set(other._routes)
    # And forgetting (as a forked child does) draws a new key and keeps nothing
    before = recall._key
    recall.forget()
    assert recall._key != before and not recall._routes
