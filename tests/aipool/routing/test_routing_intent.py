"""Intent classification: explicit intents, tools, operations versus diagnosis, languages."""

from __future__ import annotations

import pytest

from aipool.contract.request import Message, Request, Tool
from aipool.routing import corpus
from aipool.routing.features import read
from aipool.routing.intent import Intent, classify, classify_text, names_an_act

TOOL = Tool(name="k8s_restart", description="restart", parameters={"type": "object"})


def _request(text: str, **kwargs: object) -> Request:
    return Request(messages=(Message(role="user", content=text),), **kwargs)  # type: ignore[arg-type]


def test_explicit_intent_wins_with_full_confidence() -> None:
    # Given a producer that says what the request is, and text that says something else
    request = _request("hi there", intent="SUMMARY")
    # When it is classified
    decision = classify(request)
    # Then the producer's intent wins, and the reason says so
    assert decision.intent == "SUMMARY"
    assert decision.confidence == 1.0
    assert "explicit" in decision.reasons[0]


def test_request_with_tools_is_tool_call_whatever_the_text() -> None:
    # Given small talk that carries a tool schema
    request = _request("hello!", tools=(TOOL,))
    # When it is classified
    decision = classify(request)
    # Then it is TOOL_CALL, and the reason names the signal (how many tools), not their names
    assert decision.intent == Intent.TOOL_CALL
    assert decision.confidence == 1.0
    assert decision.reasons[0] == "request carries 1 tool(s)"


@pytest.mark.parametrize(
    "text",
    [
        "幫我重啟 prod 的 payment-api deployment",
        "把 search-api 擴容到 6 個 replica",
        "請把 payment-gateway 回滾到上一個版本",
        "restart the checkout deployment in namespace prod",
        "Can you scale order-worker to 10 replicas?",
        "kubectl rollout restart deploy/web -n prod",
        "payment-api 一直 OOM，幫我重啟它",
    ],
)
def test_asking_for_an_operation_is_tool_call(text: str) -> None:
    # Given a request that asks for a Kubernetes action, When classified, Then it is TOOL_CALL
    assert classify_text(text).intent == Intent.TOOL_CALL


@pytest.mark.parametrize(
    "text",
    [
        "幫我看一下這個 pod 為什麼一直 CrashLoopBackOff",
        "payment-api 的 pod 一直重啟，是什麼原因？",
        "為什麼 cart-api 會一直被重啟？liveness probe 一直 fail",
        "The deployment keeps getting rolled back automatically. Why?",
        "Should I roll back payment-gateway or wait? Error rate is 4%.",
    ],
)
def test_asking_why_about_a_symptom_is_alert_triage_not_tool_call(text: str) -> None:
    # Given a symptom or a question about an operation, When classified, Then it is a diagnosis
    decision = classify_text(text)
    assert decision.intent == Intent.ALERT_TRIAGE, decision


@pytest.mark.parametrize(
    "text",
    ["How do I restart a deployment without downtime?", "要怎麼把 deployment 擴容？指令是什麼？"],
)
def test_how_to_an_operation_is_a_query(text: str) -> None:
    # Given a how-to question naming an operation, When classified, Then it is QUERY
    assert classify_text(text).intent == Intent.QUERY


def test_operation_inside_a_code_fence_is_not_an_ask() -> None:
    # Given a pasted command the user wants checked, not run
    text = "這個指令寫對了嗎？\n```bash\nkubectl delete pod web-1 -n prod --force\n```"
    # When classified, Then it is a review of the command
    assert classify_text(text).intent == Intent.CODE_REVIEW


@pytest.mark.parametrize(
    ("text", "intent"),
    [
        ("Can you review this?\n```python\ndef f(x):\n    return x\n```", Intent.CODE_REVIEW),
        ("幫我摘要一下今天 #incident-checkout 頻道的討論重點", Intent.SUMMARY),
        ("tl;dr of the last 24h of alerts please", Intent.SUMMARY),
        ("What is a PodDisruptionBudget?", Intent.QUERY),
        ("HPA 是什麼？", Intent.QUERY),
        ("謝謝你，幫了大忙", Intent.CHAT),
        ("good morning!", Intent.CHAT),
        (
            "Alert firing: KubePodCrashLooping for order-worker. What's going on?",
            Intent.ALERT_TRIAGE,
        ),
    ],
)
def test_each_intent_in_each_language(text: str, intent: Intent) -> None:
    # Given a typical request, When classified, Then it gets the intent a person would give it
    assert classify_text(text).intent == intent


def test_last_user_message_outweighs_earlier_turns() -> None:
    # Given a diagnosis conversation that ends in thanks
    request = Request(
        messages=(
            Message(role="user", content="payment-api 為什麼一直重啟？"),
            Message(role="assistant", content="看起來是 OOMKilled。"),
            Message(role="user", content="了解，感謝！"),
        )
    )
    # When classified, Then the last message decides
    assert classify(request).intent == Intent.CHAT


def test_earlier_why_question_does_not_cancel_a_later_ask_to_act() -> None:
    # Given a diagnosis, then an ask to act on it
    request = Request(
        messages=(
            Message(role="user", content="search-api 為什麼一直 OOMKilled？"),
            Message(role="assistant", content="heap 超過 limit。"),
            Message(role="user", content="好，那幫我把它重啟，然後擴容到 5 個"),
        )
    )
    # When classified, Then it is an operation
    assert classify(request).intent == Intent.TOOL_CALL


def test_nothing_recognisable_defaults_to_chat_with_low_confidence() -> None:
    # Given text with no signal, When classified, Then CHAT, unsure, with a reason
    decision = classify_text("zzz")
    assert decision.intent == Intent.CHAT
    assert decision.confidence < 0.5
    assert decision.reasons


def test_decisions_carry_reasons_and_bounded_confidence() -> None:
    # Given a clear request, When classified
    decision = classify_text("Why is checkout-7d9f8b6c5-x2k4q in CrashLoopBackOff?")
    # Then the reasons name the signals that matched, and quote none of the text (#21)
    assert 0.0 <= decision.confidence <= 1.0
    assert "asks why" in decision.reasons and "failure state" in decision.reasons
    assert not any("CrashLoopBackOff" in r or "checkout" in r for r in decision.reasons)


def test_classification_is_deterministic() -> None:
    # Given a mixed-language request
    text = "幫我看一下這個 pod 為什麼一直 CrashLoopBackOff，昨天 deploy 之後開始的"
    # When it is classified many times
    first = classify_text(text)
    # Then the answer never changes (its cost is measured by bench/run, not asserted here)
    for _ in range(20):
        assert classify_text(text) == first


_LOG_LINE = "2026-11-30T10:00:01Z WARN checkout-api latency p99 1.2s on /cart\n"


def test_a_long_paste_is_classified_by_the_ask_around_it_not_by_its_middle() -> None:
    # Given a 100 KB paste that asks for a summary first, and quotes old instructions in the middle
    middle = (
        "[ops chat] please restart checkout-api now\n[ops chat] 幫我重啟 checkout-api\n"
        "[ops chat] 把 checkout-api 擴容到 6 個\n$ kubectl rollout restart deploy/checkout-api\n"
    )
    text = (
        "Summarise this log for the status page:\n"
        + _LOG_LINE * 800
        + middle
        + _LOG_LINE * 800
        + "Thanks!"
    )
    assert len(text) > 100_000
    # When it is classified
    decision = classify_text(text)
    # Then the ask decides: routing reads the head and tail of a long message, not its middle
    assert decision.intent == Intent.SUMMARY
    assert not any("restart" in reason for reason in decision.reasons)


def test_the_question_after_a_long_paste_still_decides() -> None:
    # Given a 100 KB pasted log with the question at its very end
    text = _LOG_LINE * 1600 + "\n幫我重啟 checkout-api"
    # When it is classified, Then the ask at the end is read
    assert classify_text(text).intent == Intent.TOOL_CALL


@pytest.mark.parametrize(
    "text",
    [
        "a short rhyme about a node that refused to drain",
        "make up a funny name for our flaky staging cluster",
        "用 rap 的方式描述一次 rollback 的過程",
    ],
)
def test_creative_writing_asked_in_the_imperative_is_chat(text: str) -> None:
    # The guide: creative writing is CHAT, though it names operations ("drain", "rollback") and
    # is asked for in the imperative like one. The rules see it as small talk (a signal the model
    # reads, and `aipool route` names), not as nothing matched
    result = classify_text(text)
    assert result.intent == Intent.CHAT.value and "small talk" in result.reasons


def test_a_service_named_like_small_talk_is_still_operated_on() -> None:
    assert classify_text("restart the song-api deployment").intent == Intent.TOOL_CALL.value


def test_every_request_to_act_in_the_fitted_corpus_names_an_act() -> None:
    # Given every TOOL_CALL request of train and dev that carries no tools (the model decides those)
    acts = [
        row["text"]
        for split in ("train", "dev")
        for row in corpus.load(split)
        if row["intent"] == "TOOL_CALL" and not row.get("tools")
    ]
    # Then each holds a word of an act in the prose the router reads: the floor under the model's
    # TOOL_CALL (router.choose_intent) takes none of them from the tool chain
    assert len(acts) > 1000
    assert [text for text in acts if not names_an_act(read(text)[1].prose)] == []


@pytest.mark.parametrize(
    "text",
    ["A normal question after the broken ones", "The morning train", "今天天氣不錯", "一般的句子"],
)
def test_a_plain_sentence_names_no_act(text: str) -> None:
    assert not names_an_act(text)
