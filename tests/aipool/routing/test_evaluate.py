"""``aipool route eval``: labelled files read as written, figures computed as documented."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

import pytest

from aipool.routing.evaluate import LabelledFileError, evaluate, read_labelled


def _jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    return path


def test_jsonl_and_tsv_give_the_same_rows(tmp_path: Path) -> None:
    # Given the same labelled requests as JSONL and as TSV (with a header and an escaped newline)
    jsonl = _jsonl(
        tmp_path / "a.jsonl",
        [
            {"text": "hi", "intent": "CHAT"},
            {"text": "line1\nline2", "label": "summary", "complexity": 2},
        ],
    )
    tsv = tmp_path / "a.tsv"
    tsv.write_text("text\tintent\tcomplexity\nhi\tCHAT\t\nline1\\nline2\tSUMMARY\t2\n")
    # When read
    a, b = read_labelled(jsonl), read_labelled(tsv)
    # Then the texts, intents and complexities agree
    assert [(r.request.last_user_text(), r.intent, r.complexity) for r in a] == [
        (r.request.last_user_text(), r.intent, r.complexity) for r in b
    ]


@pytest.mark.parametrize(
    ("content", "name", "says"),
    [
        ('{"text": "hi"}\n', "x.jsonl", "x.jsonl:1: 'intent' must be one of"),
        ('{"text": "hi", "intent": "CHAT"}\n{broken\n', "x.jsonl", "x.jsonl:2: not JSON"),
        ("hi\tCHAT\t9\n", "x.tsv", "x.tsv:1: 'complexity' must be an integer 1-5"),
        ("just text\n", "x.tsv", "x.tsv:1: expected"),
        ("", "x.tsv", "no labelled requests"),
        ('{"intent": "CHAT"}\n', "x.jsonl", "needs a non-empty 'text'"),
    ],
)
def test_a_bad_line_is_named(tmp_path: Path, content: str, name: str, says: str) -> None:
    path = tmp_path / name
    path.write_text(content)
    with pytest.raises(LabelledFileError, match=None) as caught:
        read_labelled(path)
    assert says in str(caught.value)


def test_figures_and_the_priced_tier_matrix(tmp_path: Path) -> None:
    # Given three requests: one right, one simple chat labelled as such that also is right, and a
    # multi-service incident labelled cloud
    rows = read_labelled(
        _jsonl(
            tmp_path / "l.jsonl",
            [
                {"id": "a", "text": "thanks!", "intent": "CHAT", "complexity": 1, "lang": "en"},
                {
                    "id": "b",
                    "text": "What is a PodDisruptionBudget?",
                    "intent": "QUERY",
                    "complexity": 1,
                    "lang": "en",
                },
                # Labelled cloud on purpose although it is a greeting: the router starts it local.
                {
                    "id": "c",
                    "text": "hello there",
                    "intent": "CHAT",
                    "complexity": 1,
                    "tier": "cloud",
                    "lang": "en",
                },
                # Labelled local although it correlates three services: the router goes cloud.
                {
                    "id": "d",
                    "text": "payments 5xx up 8%, ledger-db replication lag 40 s, and the "
                    "reconciliation job failing. Correlate these and find the root cause.",
                    "intent": "ALERT_TRIAGE",
                    "complexity": 4,
                    "tier": "local-small",
                    "lang": "en",
                },
            ],
        )
    )
    # When evaluated
    result = evaluate(rows)
    # Then intent figures over all four, tiers over the labelled ones
    assert result.intent_accuracy == 1.0 and result.macro_f1 == 1.0
    assert result.tier_pairs == [
        ("local-small", "local-small"), ("local-small", "local-small"),
        ("cloud", "local-small"), ("local-small", "cloud"),
    ]  # fmt: skip
    assert result.tier_accuracy == 0.5
    # And cloud-for-simple costs money (Gemini's price), local-for-complex is counted and listed
    assert result.tier_cost[("local-small", "cloud")] > Decimal(0)
    assert (
        result.per_thousand(("local-small", "cloud"))
        == result.tier_cost[("local-small", "cloud")] * 1000 / 4
    )
    assert result.tier_cost[("cloud", "local-small")] < Decimal(0)
    assert [case[0] for case in result.local_for_complex] == ["c"]
    assert result.simple_to_cloud == pytest.approx(1 / 3)
    assert result.complex_to_local == 1.0
