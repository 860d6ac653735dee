"""Hostile input: whatever a producer sends, it gets a contract answer and the pool stays whole.

Two properties over generated requests: lone surrogates, NUL and other control characters in every
string field, deep and huge structures, values JSON cannot carry. The first checks the contract
alone (fast, many examples); the second sends thousands of poisoned requests through a real worker
and checks that each is answered as the producer's error, that no provider was called or charged,
that no breaker counted anything and that the worker lives on.
"""

from __future__ import annotations

import contextlib
import copy
import json
import math
import re
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, fields, is_dataclass
from typing import Any

import pytest
from celery.exceptions import TimeoutError as CeleryTimeout
from celery.result import AsyncResult
from hypothesis import HealthCheck, Phase, event, given, settings
from hypothesis import strategies as st

from aipool.breaker import breakers_for
from aipool.contract.request import (
    MAX_DEPTH,
    MAX_METADATA_SIZE,
    MAX_USER_ID_LENGTH,
    REQUEST_FIELDS,
    parse_request,
)
from aipool.errors import InvalidRequest
from aipool.ledger.usage_log import DEAD_KEY, PENDING_KEY
from aipool.settings import settings as pool_settings
from aipool.views.health import usage_report
from tests.support.sizes import sized

#: Characters no provider can take: lone surrogates and C0 controls other than tab, LF, CR.
UNSENDABLE = (
    "\x00",
    "\x01",
    "\x08",
    "\x0b",
    "\x0c",
    "\x0e",
    "\x1b",
    "\x1f",
    "\ud800",
    "\udbff",
    "\udc00",
    "\udfff",
)
#: Characters that look odd but every provider takes.
ODD_BUT_FINE = (
    "\t",
    "\n",
    "\r",
    "\x7f",
    "\x85",
    "\u200b",
    "\u2028",
    "\ufeff",
    "\uffff",
    "為",
    "😀",
)
_UNSENDABLE_RE = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff]")

# -- strategies --------------------------------------------------------------------------------


def _weighted(*choices: tuple[int, st.SearchStrategy[Any]]) -> st.SearchStrategy[Any]:
    # one_of flattens nested one_of into equal shares; this keeps the shares as given.
    pool = [strategy for weight, strategy in choices for _ in range(weight)]
    return st.sampled_from(pool).flatmap(lambda strategy: strategy)


_chars = st.one_of(st.characters(), st.sampled_from(UNSENDABLE + ODD_BUT_FINE))
texts = st.text(_chars, max_size=24)
# Long text costs one draw, not one per character.
long_texts = st.builds(lambda n, tail: "x" * n + tail, st.integers(1_000, 150_000), texts)


def _nest(levels: int, kind: str, leaf: Any) -> Any:
    value = leaf
    for _ in range(levels):
        value = {"k": value} if kind == "dict" else [value]
    return value


deep_values = st.builds(
    _nest, st.integers(MAX_DEPTH - 2, 3_000), st.sampled_from(["dict", "list"]), texts
)
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.integers(min_value=2**63),
    st.floats(),
    texts,
)
json_values = st.recursive(
    scalars,
    lambda kids: st.lists(kids, max_size=4) | st.dictionaries(texts, kids, max_size=4),
    max_leaves=12,
)
# What a Python producer calling submit() could hand over that JSON cannot carry.
python_only = st.one_of(
    st.sets(st.integers(), max_size=2),
    st.binary(max_size=4),
    st.tuples(texts),
    st.dictionaries(st.integers(), texts, max_size=2),
    st.just(object()),
    st.complex_numbers(),
)
anything = st.one_of(
    json_values,
    python_only,
    deep_values,
    long_texts,
    st.builds(json.dumps, json_values),
    st.builds(lambda n: '{"a":' * n + "1" + "}" * n, st.integers(1, 5_000)),
)

_TOOL = {
    "name": "restart_deployment",
    "description": "Restart a Kubernetes deployment",
    "parameters": {
        "type": "object",
        "properties": {
            "namespace": {"type": "string", "description": "the namespace"},
            "name": {"type": "string", "enum": ["api", "web"]},
        },
        "required": ["namespace", "name"],
    },
}
#: Valid requests of each shape; on the code before validation each starts at another provider.
TEMPLATES: tuple[dict[str, Any], ...] = (
    {"prompt": "What is a pod?", "user_id": "svc-7", "metadata": {"trace": "t-1"}},
    {"prompt": "Review this diff: - a + b", "intent": "CODE_REVIEW", "metadata": {"pr": 7}},
    {"prompt": "payment-api is down", "priority": "critical", "system": "Answer in zh-TW"},
    {
        "system": "Be brief",
        "messages": [
            {"role": "user", "content": "Restart api in prod"},
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {
                        "id": "call-1",
                        "name": "restart_deployment",
                        "arguments": {"namespace": "prod", "name": "api"},
                    }
                ],
            },
            {
                "role": "tool",
                "name": "restart_deployment",
                "tool_call_id": "call-1",
                "content": "restarted",
            },
            {"role": "user", "content": "Now check the web deployment"},
        ],
        "tools": [_TOOL],
        "user_id": "svc-9",
        "metadata": {"ticket": {"id": "OPS-1", "tags": ["k8s", "prod"]}},
    },
)
_FREE_FORM = ("metadata", "parameters", "arguments")

Path = tuple[Any, ...]
#: Deeper than any template: places are looked for no further (a mutation may nest thousands deep).
_PLACE_DEPTH = 10


def _string_places(value: Any, path: Path = (), free: bool = False) -> Iterator[Path]:
    """Paths of every string in ``value``; ``(..., ("key", k))`` names a key of a free-form object
    (metadata, tool parameters, tool-call arguments), where any key is the producer's own."""
    if len(path) > _PLACE_DEPTH:
        return
    if isinstance(value, str):
        yield path
    elif isinstance(value, dict):
        for key, item in value.items():
            if free:
                yield (*path, ("key", key))
            yield from _string_places(item, (*path, key), free or key in _FREE_FORM)
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _string_places(item, (*path, i), free)


def _object_places(value: Any, path: Path = ()) -> Iterator[Path]:
    """Paths of the free-form objects in ``value``."""
    if len(path) > _PLACE_DEPTH:
        return
    if isinstance(value, dict):
        for key, item in value.items():
            if key in _FREE_FORM and isinstance(item, dict):
                yield (*path, key)
            yield from _object_places(item, (*path, key))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _object_places(item, (*path, i))


def _update(payload: dict[str, Any], path: Path, change: Callable[[Any], Any]) -> None:
    *parents, last = path
    holder: Any = payload
    for step in parents:
        holder = holder[step]
    if isinstance(last, tuple):  # rename a key
        key = last[1]
        holder[change(key)] = holder.pop(key)
    else:
        holder[last] = change(holder[last])


def _insert(text: str, bad: str, at: int) -> str:
    at = at % (len(text) + 1)
    return text[:at] + bad + text[at:]


@st.composite
def poisoned(draw: st.DrawFn) -> dict[str, Any]:
    """A valid request with exactly one thing no producer may send: never acceptable."""
    payload = copy.deepcopy(draw(st.sampled_from(TEMPLATES)))
    kind = draw(
        st.sampled_from(
            ["char"] * 6 + ["deep", "deep_text", "long_user_id", "big_metadata", "number"]
        )
    )
    if kind == "char":
        place = draw(st.sampled_from(list(_string_places(payload))))
        # One character, maybe repeated: a high surrogate followed by a low one would be a valid
        # pair once JSON carries it (the worker's decoder joins "\\udbff\\udc00" into one character).
        bad = draw(st.sampled_from(UNSENDABLE)) * draw(st.integers(1, 3))
        at = draw(st.integers(0, 10_000))
        _update(payload, place, lambda text: _insert(text, bad, at))
    elif kind == "deep":
        payload.setdefault("metadata", {})
        place = draw(st.sampled_from(list(_object_places(payload))))
        levels = draw(st.integers(MAX_DEPTH, 300))
        _update(payload, place, lambda obj: {**obj, "deep": _nest(levels, "dict", "x")})
    elif kind == "deep_text":
        payload = copy.deepcopy(TEMPLATES[3])
        levels = draw(st.integers(MAX_DEPTH + 1, 2_000))
        call = payload["messages"][1]["tool_calls"][0]
        call["arguments"] = '{"a":' * levels + "1" + "}" * levels
    elif kind == "long_user_id":
        payload["user_id"] = "u" * draw(st.integers(MAX_USER_ID_LENGTH + 1, 5_000))
    elif kind == "big_metadata":
        payload["metadata"] = {"blob": "x" * draw(st.integers(MAX_METADATA_SIZE, 100_000))}
    else:
        payload["metadata"] = {
            "n": draw(st.sampled_from([math.nan, math.inf, -math.inf, 2**64, -(2**63) - 1]))
        }
    return payload


@st.composite
def sendable(draw: st.DrawFn) -> dict[str, Any]:
    """A valid request whose prose carries odd but sendable characters: always answerable."""
    payload = copy.deepcopy(draw(st.sampled_from(TEMPLATES)))
    odd = draw(st.text(st.sampled_from(ODD_BUT_FINE), min_size=1, max_size=4))
    if "prompt" in payload:
        payload["prompt"] += odd
    else:
        payload["messages"][0]["content"] += odd
    return payload


@st.composite
def mutated(draw: st.DrawFn) -> dict[str, Any]:
    """A valid request with zero to three fields replaced by anything at all."""
    payload = copy.deepcopy(draw(st.sampled_from(TEMPLATES)))
    for _ in range(draw(st.integers(0, 3))):
        strings = list(_string_places(payload))
        if strings and draw(st.booleans()):
            place = draw(st.sampled_from(strings))
        else:
            key = draw(st.sampled_from(REQUEST_FIELDS))
            payload.setdefault(key, None)
            place = (key,)
        value = draw(_weighted((1, texts), (1, anything)))
        # The place may have vanished under an earlier mutation.
        with contextlib.suppress(TypeError, KeyError, IndexError):
            _update(payload, place, lambda _old, v=value: v)
    return payload


requests = _weighted((6, mutated()), (2, poisoned()), (2, anything))


# -- what holds of every answer ----------------------------------------------------------------


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif is_dataclass(value) and not isinstance(value, type):
        for f in fields(value):
            yield from _strings(getattr(value, f.name))
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _strings(key)
            yield from _strings(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _strings(item)


def _assert_sendable(text: str) -> None:
    text.encode("utf-8")
    assert not _UNSENDABLE_RE.search(text), ascii(text)


# -- (a) the contract alone --------------------------------------------------------------------


@settings(
    max_examples=1000,
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(payload=requests)
def test_given_any_payload_when_parsed_then_a_sendable_request_or_an_invalid_request(
    payload: Any,
) -> None:
    # Given anything at all / When parsed
    try:
        request = parse_request(payload)
    except InvalidRequest as refused:
        event(f"refused: {refused.code}")
        # Then either the producer is told, in a message that can itself be sent back
        assert re.fullmatch(r"[a-z_]+", refused.code), refused.code
        _assert_sendable(refused.message)
        return
    event("accepted")
    # or every string of the request encodes, the whole request is strict JSON in UTF-8
    for text in _strings(request):
        _assert_sendable(text)
    as_json = json.dumps(asdict(request), ensure_ascii=False, allow_nan=False)
    assert json.loads(as_json.encode("utf-8")) == json.loads(as_json)
    assert request.estimated_total_tokens() > request.max_tokens


# -- (b) a real worker -------------------------------------------------------------------------

BATCH = 100
#: 1,000 poisoned requests in make test, 2,000 under make soak.
BATCHES = sized(10, 20)
#: How long a batch may take to be answered: a bound that says "the worker still answers" on a
#: busy machine, not a speed requirement.
TIMEOUT = 120
#: Attempt outcomes that called the provider (and so count against its quota).
CALLED = ("ok", "error")


def _collect(results: list[AsyncResult]) -> list[Any]:
    """Each result's value, or None for one not there within TIMEOUT of the first wait."""
    deadline = time.monotonic() + TIMEOUT
    answers: list[Any] = []
    for result in results:
        try:
            left = max(0.1, deadline - time.monotonic())
            answers.append(result.get(timeout=left, propagate=False))
        except CeleryTimeout:
            answers.append(None)
    return answers


def _quota_used(redis_client: Any) -> dict[str, Any]:
    report = usage_report(redis_client)
    return {
        provider: {name: q[name]["used"] for name in q if isinstance(q[name], dict)}
        for provider, entry in report.items()
        for q in [entry["quota"]]
    }


@pytest.mark.integration
# A failing batch is a hundred requests; Hypothesis warns that printing it is long, and that
# warning (an error here) would hide the assertion that failed.
@pytest.mark.filterwarnings("ignore:Generating overly large repr")
def test_given_thousands_of_poisoned_requests_when_sent_to_a_worker_then_each_is_refused_at_no_cost(
    celery_app, pool, healthy, clean_redis, ledger_url
) -> None:  # type: ignore[no-untyped-def]
    # Given healthy providers, closed breakers, empty quotas, an empty ledger spool and a worker
    providers = list(pool_settings().limits)
    assert clean_redis.llen(PENDING_KEY) == 0
    called = dict.fromkeys(providers, 0)
    tally = {"valid": 0, "poisoned": 0, "attempts": 0}

    @settings(
        max_examples=BATCHES,
        derandomize=True,
        database=None,
        deadline=None,
        phases=[Phase.explicit, Phase.generate],
        suppress_health_check=[
            HealthCheck.too_slow,
            HealthCheck.data_too_large,
            HealthCheck.function_scoped_fixture,
        ],
    )
    @given(
        batch=st.lists(
            _weighted(
                (19, st.tuples(st.just(False), poisoned())),
                (1, st.tuples(st.just(True), sendable())),
            ),
            min_size=BATCH,
            max_size=BATCH,
        )
    )
    def each_batch(batch: list[tuple[bool, dict[str, Any]]]) -> None:
        # When a batch is sent by name: mostly requests valid but for one poisoned field, and
        # some valid requests with odd but sendable characters among them
        results = [
            celery_app.send_task("ai.generate", kwargs={"request": payload}, queue="router")
            for _, payload in batch
        ]
        answers = _collect(results)
        unanswered = [ascii(p)[:200] for (_, p), a in zip(batch, answers, strict=True) if a is None]
        assert not unanswered, f"{len(unanswered)} requests got no answer, e.g. {unanswered[:3]}"
        for (valid, payload), result, answer in zip(batch, results, answers, strict=True):
            # Then each gets a contract answer for its own task id
            assert isinstance(answer, dict), (ascii(payload)[:300], answer)
            assert answer["request_id"] == result.id
            if valid:
                # a valid request is served as usual
                assert answer["status"] in ("ok", "fallback", "refused"), answer
                tally["valid"] += 1
                tally["attempts"] += len(answer["attempts"])
                for attempt in answer["attempts"]:
                    if attempt["outcome"] in CALLED:
                        called[attempt["provider"]] += 1
                continue
            # a poisoned one is the producer's error, with a code and a sendable message,
            # decided before any provider was considered
            assert answer["status"] == "error", (ascii(payload)[:300], answer["status"])
            assert re.fullmatch(r"[a-z_]+", answer["error"]["code"])
            _assert_sendable(answer["error"]["message"])
            assert answer["attempts"] == [] and answer["cost_usd"] == 0
            tally["poisoned"] += 1
        # and the worker process lives on
        assert pool.process.poll() is None

    each_batch()

    # Then thousands were sent, and every provider call, quota request and ledger record is one
    # a valid request made: the poisoned ones reached no provider and cost nothing
    assert tally["valid"] + tally["poisoned"] == BATCH * BATCHES
    assert tally["poisoned"] > 0.9 * BATCH * BATCHES and tally["valid"] > 0
    assert {p: healthy.calls(p) for p in providers} == called
    quota_after = _quota_used(clean_redis)
    for provider in providers:
        used = quota_after[provider]["daily_requests"]
        assert used is None or used == called[provider], (provider, used, called[provider])
    assert (clean_redis.llen(PENDING_KEY), clean_redis.llen(DEAD_KEY)) == (tally["attempts"], 0)
    # and no breaker counted anything against any provider
    snapshots = {p: b.snapshot() for p, b in breakers_for(clean_redis).items()}
    assert {
        p: (s["state"], s["consecutive_failures"]) for p, s in snapshots.items()
    } == dict.fromkeys(providers, ("closed", 0))
    assert pool.process.poll() is None
    assert celery_app.control.ping(destination=[pool.name], timeout=2)
