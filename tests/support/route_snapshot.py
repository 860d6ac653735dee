"""The route decisions of the labelled corpus and of long and odd texts, as a snapshot to hold
``decide`` to while it is made cheaper (issue #44).

Every request of the corpus's splits (train, dev, the frozen test) and of the router tests'
labelled file, plus :func:`odd_requests` (100 KB prompts, texts around the head/tail cut, fences
cut in two, case folding beyond ASCII, system prompts, several turns, tools, declared fields), is
decided with the shipped route table and model; the snapshot keeps, per request, the whole
:class:`~aipool.contract.route.Route` (``to_dict``: intent, complexity, chain, tier, rule, source,
confidence and the ``reason`` that carries the intent's and the complexity's whys), the keyword
rules' answer (``classify``), the keyword scorer's (``score``) and a digest of the model's
features. No prompt text is kept: routes and reasons name labels and counts only (issue #21),
and the features are a digest.

Regenerate it only when a decision is meant to change (the model retrained, a threshold or a rule
moved on purpose), from the commit that makes that change, and say so in its message::

    .venv/bin/python -m tests.support.route_snapshot --write

A change meant to leave decisions alone (making ``decide`` faster) must pass
``tests/aipool/routing/test_route_snapshot.py`` against the snapshot as it is.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from aipool.contract.request import Request, parse_request
from aipool.routing import corpus
from aipool.routing.complexity import score
from aipool.routing.evaluate import read_labelled
from aipool.routing.features import features
from aipool.routing.intent import classify
from aipool.routing.router import decide

ROOT = Path(__file__).resolve().parents[2]
SNAPSHOT = ROOT / "tests" / "aipool" / "routing" / "route_snapshot.jsonl.gz"
LABELLED = ROOT / "tests" / "aipool" / "routing" / "labelled_requests.jsonl"

_LOG = (
    "2026-11-30T10:00:01Z ERROR payment-api-7d9f pod OOMKilled, restarting container (exit 137)\n"
)
_PROSE = "The payment service has been slow since this morning and customers see timeouts. "
_ASK = "Why does payment-api keep crashing? Please restart it and then summarise the logs."
_ZH = "為什麼 payment-api 一直 CrashLoopBackOff？幫我看一下這個告警，跟資料庫有關嗎？"


def _long_texts() -> Iterator[tuple[str, str]]:
    """Prompts of about 100 KB (the bench's shapes) and texts around each cut routing makes."""
    from bench.cpu import PROMPTS

    for shape, text in PROMPTS.items():
        yield f"100k {shape}", text
        yield f"100k {shape} asked at the end", text + "\n" + _ASK
    # The cuts: text.bounded's 2048 + 1024 and features' 1536 + 512, one either side.
    for total in (2047, 2048, 2049, 3071, 3072, 3073, 3100, 8000):
        filler = (_PROSE * (total // len(_PROSE) + 1))[: total - len(_ASK) - 1]
        yield f"{total} ask first", _ASK + "\n" + filler
        yield f"{total} ask last", filler + "\n" + _ASK
        zh = (_ZH * (total // len(_ZH) + 1))[:total]
        yield f"{total} zh", zh
    # Fences opened before a cut and closed after it, and the reverse, and one never closed.
    block = "```python\n" + "def handler(event):\n    return event['x']\n" * 120 + "```\n"
    yield "fence across the head cut", _PROSE * 20 + block + _PROSE * 40 + "Review this please."
    yield "fence across the tail cut", "Review this diff?\n" + _PROSE * 40 + block
    yield "unclosed fence", "Check this:\n```\n" + _LOG * 200
    yield "fence marks in the middle", _ASK + "\n" + ("```\nx\n```\n" * 500) + "```\n" + _LOG * 30
    yield "many fences", ("Summarise:\n```\n" + _LOG * 3 + "```\n") * 200


def _odd_texts() -> Iterator[tuple[str, str]]:
    """Short texts that exercise folding, scripts and the rules' edges."""
    yield "one word", "restart"
    yield "punctuation", "?!?!"
    yield "whitespace inside", "  restart \t the\n\n api  "
    yield "upper case", "PLEASE RESTART THE PAYMENT-API DEPLOYMENT NOW"
    yield "non-ASCII capitals", "İstanbul ÉQUIPE ß Σίσυφος KELVIN-SIGN \u212a restart the api"
    yield "fullwidth", "ＲＥＳＴＡＲＴ ｔｈｅ ａｐｉ？"
    yield "emoji", "🔥🔥 prod is down 🔥 why?? 😭"
    yield "alert names", "KubePodCrashLooping and NodeFilesystemAlmostFull on HighLatencyP99"
    yield "json", '{"alert": "KubePodCrashLooping", "service": "checkout-api", "severity": "P1"}'
    yield "diff", "review:\n--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-a = 1\n+a = 2\n"
    yield "combining marks", "cafe\u0301 re\u0301sume\u0301 restart"
    yield "zh tool", "幫我把 payment-api 重啟一下"
    yield "zh why", "為什麼 payment-api 一直重啟？"
    yield "mixed correlate", "checkout-api、ledger-db、payments-worker 同時變慢，是同一個問題嗎？"
    yield "timeline", "\n".join(f"09:0{i} checkout-api error" for i in range(6)) + "\nroot cause?"


def odd_requests() -> Iterator[tuple[str, Request]]:
    """Requests beyond the corpus: long texts, odd texts, and the fields besides the text."""
    for name, text in [*_long_texts(), *_odd_texts()]:
        yield f"odd:{name}", parse_request({"prompt": text})
    yield (
        "odd:system and turns",
        parse_request(
            {
                "system": "You are an SRE assistant. Always answer in English.",
                "messages": [
                    {"role": "user", "content": "checkout-api is slow"},
                    {"role": "assistant", "content": "Since when?"},
                    {"role": "user", "content": "since the deploy, should I roll back?"},
                    {"role": "assistant", "content": "Maybe."},
                    {"role": "user", "content": "ok go ahead and roll back"},
                ],
            }
        ),
    )
    yield (
        "odd:long system",
        parse_request(
            {"system": _PROSE * 600, "messages": [{"role": "user", "content": "Summarise this."}]}
        ),
    )
    yield (
        "odd:assistant last",
        parse_request(
            {
                "messages": [
                    {"role": "user", "content": _ZH},
                    {"role": "assistant", "content": "I will look."},
                ]
            }
        ),
    )
    tool = {"name": "restart", "description": "restart a deployment", "parameters": {}}
    yield "odd:tools", parse_request({"prompt": "why is it slow?", "tools": [tool]})
    yield "odd:explicit intent", parse_request({"prompt": _ASK, "intent": "summary"})
    yield "odd:critical", parse_request({"prompt": _ASK, "priority": "critical"})
    yield "odd:service", parse_request({"prompt": _ASK, "priority": "high", "service": "billing"})


def requests() -> Iterator[tuple[str, Request]]:
    """Every request the snapshot holds, by a key unique among them."""
    for split in corpus.SPLITS:
        for row in read_labelled(corpus.path(split)):
            yield f"{split}:{row.id}", row.request
    for row in read_labelled(LABELLED):
        yield f"labelled:{row.id}", row.request
    yield from odd_requests()


def decision(request: Request) -> dict[str, Any]:
    """What the snapshot holds of one request's decision (no prompt text)."""
    rules = classify(request)
    scored = score(request)
    text = request.last_user_text() or request.text()
    named = "\n".join(sorted(features(text)))
    return {
        "route": decide(request).to_dict(),
        "rules": [rules.intent, rules.confidence, list(rules.reasons)],
        "score": [scored.score, scored.floor, list(scored.reasons)],
        "features": hashlib.sha256(named.encode("utf-8", "surrogatepass")).hexdigest()[:16],
    }


def decisions() -> dict[str, dict[str, Any]]:
    """Every request's decision, by key."""
    out: dict[str, dict[str, Any]] = {}
    for key, request in requests():
        if key in out:
            raise ValueError(f"two requests named {key}")
        out[key] = decision(request)
    return out


def read_snapshot(path: Path = SNAPSHOT) -> dict[str, dict[str, Any]]:
    """The snapshot as written: decision by key."""
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        rows = [json.loads(line) for line in handle]
    return {row["key"]: row["decision"] for row in rows}


def write_snapshot(path: Path = SNAPSHOT) -> int:
    """Write every decision to ``path`` (gzip-compressed JSONL, stable bytes); the count."""
    lines = [
        json.dumps({"key": key, "decision": value}, ensure_ascii=False, sort_keys=True)
        for key, value in decisions().items()
    ]
    data = ("\n".join(lines) + "\n").encode("utf-8")
    # mtime=0: the same decisions write the same bytes.
    path.write_bytes(gzip.compress(data, compresslevel=9, mtime=0))
    return len(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--write", action="store_true", help=f"write {SNAPSHOT.name}")
    args = parser.parse_args()
    if args.write:
        print(f"{write_snapshot()} decisions written to {SNAPSHOT.relative_to(ROOT)}")
    else:
        snapshot = read_snapshot()
        changed = [k for k, v in decisions().items() if snapshot.get(k) != v]
        print(f"{len(changed)} decisions differ from the snapshot: {changed[:20]}")


if __name__ == "__main__":
    main()
