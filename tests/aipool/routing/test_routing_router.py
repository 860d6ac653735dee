"""The router: rules in order, the ADR chain after the first hop, routes as JSON."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aipool.chains import default_model
from aipool.contract.request import Message, Request, Tool, parse_request
from aipool.contract.route import Hop, Route
from aipool.routing.intent import names_an_act
from aipool.routing.model import Prediction
from aipool.routing.router import choose_complexity, choose_intent, decide, explain
from aipool.routing.table import parse_table

TOOL = Tool(name="k8s_restart", description="restart", parameters={"type": "object"})
CORRELATE = (
    "同時收到三個告警：HighErrorRate on checkout-service、PostgresReplicationLag on pg-replica-2、"
    "KafkaConsumerLag on order-events。幫我分析這些告警之間的關聯，找出根因，然後建議處理順序。"
)


def _request(text: str, **kwargs: object) -> Request:
    return Request(messages=(Message(role="user", content=text),), **kwargs)  # type: ignore[arg-type]


def _providers(route: Route) -> list[str]:
    return [hop.provider for hop in route.chain]


def test_tools_get_the_nemotron_tool_chain() -> None:
    # Given a request carrying tools
    route = decide(_request("restart payment-api", tools=(TOOL,)))
    # Then it starts at nemotron and ends in a refusal, never a static answer
    assert route.intent == "TOOL_CALL"
    assert _providers(route) == ["nemotron", "gemini", "claude", "refuse"]
    assert route.rule == "tools"


def test_operation_in_words_goes_to_nemotron() -> None:
    # Given an operation asked for in Chinese, without tools
    route = decide(_request("幫我把 cart-api 縮容到 2 個"))
    # Then the tool chain, starting at nemotron's default model
    assert route.chain[0] == Hop("nemotron", default_model("nemotron"))
    assert route.chain[-1].provider == "refuse"


@pytest.mark.parametrize(
    "text",
    [
        "A normal question after the broken ones",  # issue #40: TOOL_CALL, model 0.62
        "the",
        "The morning train",
        "The quick brown fox jumps over the lazy dog",
        "它 the window",
        "一般的句子 after the broken ones",
        "這是一個普通的句子，沒有什麼特別的意思",
        "The garden behind the old house was quiet in the evening. A bird sat on the fence, the "
        "neighbours talked about the weather, and the river ran slowly past the bridge. Nobody "
        "was in a hurry, and the light stayed warm until late.",
    ],
)
def test_a_plain_sentence_that_asks_nothing_is_not_sent_to_the_tool_chain(text: str) -> None:
    # Given a sentence that asks no operation of anyone, of some length, in some script
    # When it is routed
    route = decide(_request(text))
    # Then it is not a tool call, and its chain ends in an answer, not a refusal
    assert route.intent != "TOOL_CALL", route.reason
    assert _providers(route)[-1] == "static"


# Words that name no operation and give no go-ahead, in both scripts.
_PLAIN_EN_TEXT = (
    "a the an one some another this that these those my our their his her its normal plain "
    "ordinary usual quiet blue red green small big old new long short first last other same "
    "question sentence word line note story morning afternoon evening weekend window table chair "
    "garden river mountain city train bus coffee tea lunch dinner letter picture song music "
    "weather rain sun cloud friend family teacher neighbour dog cat bird tree flower house room "
    "after before during with without about over under near behind between from of in on at "
    "and or but so because while when then also again still very quite rather really just "
    "is was are were has had seems looked felt sounded came went walked talked smiled slept "
    "today yesterday tomorrow here there nothing something everything anything nobody everyone "
    "broken ones thing things nice fine good bad warm cold bright dark happy tired"
)
_PLAIN_ZH_TEXT = (
    "今天 昨天 明天 早上 下午 晚上 週末 天氣 很 不錯 普通 一般 的 句子 話 貓 狗 鳥 樹 花 山 河 "
    "風景 漂亮 窗邊 午餐 晚餐 咖啡 茶 書 信 歌 音樂 朋友 家人 老師 鄰居 房子 房間 城市 公園 "
    "安靜 溫暖 寒冷 明亮 快樂 累 這 那 一個 一些 另一個 我 你 他 她 我們 他們 也 還 又 都 "
    "已經 常常 有時候 雲 雨 太陽 早餐 故事 相片 花園 火車 公車 路 橋 海 沙灘 小鎮 喜歡 覺得 看到 "
    "走 聊天 睡覺"
)
PLAIN_EN = _PLAIN_EN_TEXT.split()
PLAIN_ZH = _PLAIN_ZH_TEXT.split()
#: Words apart, as each script writes them: Chinese may run its words together, English may not
#: ("good" and "rain" run together are "goodrain", which holds "drain", an act).
_APART = st.sampled_from([" ", "\n", ", "])
PLAIN_TEXTS = st.one_of(
    st.tuples(st.lists(st.sampled_from(PLAIN_EN), min_size=1, max_size=400), _APART),
    st.tuples(
        st.lists(st.sampled_from(PLAIN_ZH), min_size=1, max_size=600),
        st.sampled_from([" ", "", "\n", ", ", "。"]),
    ),
    st.tuples(st.lists(st.sampled_from(PLAIN_EN + PLAIN_ZH), min_size=1, max_size=400), _APART),
)


@settings(max_examples=200, deadline=None)
@given(PLAIN_TEXTS)
def test_length_and_script_alone_never_reach_the_tool_chain(
    words_and_joint: tuple[list[str], str],
) -> None:
    # Given a text of any length, English, Chinese or both, whose words name no act
    words, joint = words_and_joint
    text = joint.join(words)
    assert not names_an_act(text), text
    # When it is routed
    route = decide(_request(text))
    # Then it does not go to the tool chain, whatever the model made of its length and script
    assert route.intent != "TOOL_CALL", (text, route.reason)
    assert _providers(route)[-1] == "static"


class _SureOf:
    """A model that reads every text as ``intent``, 0.99 sure."""

    threshold = 0.5

    def __init__(self, intent: str) -> None:
        self.intent = intent

    def predict(self, text: str, reading: object = None) -> Prediction:
        return Prediction(self.intent, 0.99, {self.intent: 0.99})


def test_the_models_tool_call_needs_a_word_of_an_act() -> None:
    # Given a model sure that every text is a tool call
    model = _SureOf("TOOL_CALL")
    # When it reads the sentence of issue #40, Then the keyword rules decide instead, and the
    # reason says why (numbers and fixed words only)
    plain = choose_intent(_request("A normal question after the broken ones"), model)  # type: ignore[arg-type]
    assert plain.intent != "TOOL_CALL" and plain.source == "rules"
    assert plain.why.startswith("model TOOL_CALL 0.99 without a word of an act; ")
    # And a request to act that no keyword rule knows still takes the model's word
    for text in ("snooze it for another hour", "好 執行", "幫我把會員中心重起一下"):
        acted = choose_intent(_request(text), model)  # type: ignore[arg-type]
        assert (acted.intent, acted.source) == ("TOOL_CALL", "model"), text


def test_critical_goes_to_claude_first() -> None:
    # Given a critical request
    route = decide(_request("hi", priority="critical"))
    # Then claude first, and the other providers still before the static answer
    assert _providers(route) == ["claude", "ollama", "gemini", "static"]
    assert route.rule == "critical"


def test_critical_with_tools_stays_on_a_tool_chain() -> None:
    # Given a critical request carrying tools
    route = decide(_request("restart it now", priority="critical", tools=(TOOL,)))
    # Then claude first, but on the tool chain (ends in refusal, no ollama)
    assert _providers(route) == ["claude", "nemotron", "gemini", "refuse"]


def test_code_review_goes_to_qwen_7b() -> None:
    # Given a diff to review
    text = "Can you review this diff?\n```diff\n-    timeout = 30\n+    timeout = 60\n```"
    route = decide(_request(text))
    # Then ollama qwen2.5:7b first, then the ADR order
    assert route.intent == "CODE_REVIEW"
    assert route.chain[0] == Hop("ollama", "qwen2.5:7b")
    assert _providers(route) == ["ollama", "gemini", "claude", "static"]
    assert "rule code_review → ollama:qwen2.5:7b" in route.reason


def test_complex_alert_triage_goes_to_gemini() -> None:
    # Given a multi-alert correlation ask
    route = decide(_request(CORRELATE))
    # Then it is cloud work, gemini first then claude
    assert route.intent == "ALERT_TRIAGE"
    assert route.complexity >= 4
    assert _providers(route)[:2] == ["gemini", "claude"]
    assert route.rule == "complex_alert_triage"


def test_simple_alert_triage_stays_local() -> None:
    # Given a single-pod diagnosis
    route = decide(_request("幫我看一下這個 pod 為什麼一直 CrashLoopBackOff"))
    # Then a local model answers first
    assert route.intent == "ALERT_TRIAGE"
    assert route.chain[0].provider == "ollama"


def test_simple_query_goes_to_llama_3b() -> None:
    # Given a simple question
    route = decide(
        _request("What's the difference between a liveness probe and a readiness probe?")
    )
    # Then llama3.2:3b through the simple_query rule
    assert route.chain[0] == Hop("ollama", "llama3.2:3b")
    assert route.rule == "simple_query"


def test_medium_complexity_goes_to_qwen_instruct() -> None:
    # Given a request of complexity 3 by the guide (the post-mortem of one incident from notes)
    text = (
        "Write the post-mortem of last night's incident from my notes, with timeline, impact and "
        "action items:\n- 01:10 deploy of the feed-api\n- 01:14 error rate 30%\n"
        "- 01:25 rollback, recovered at 01:31"
    )
    route = decide(_request(text))
    # Then the medium band picks qwen2.5:7b-instruct
    assert route.complexity == 3
    assert route.chain[0] == Hop("ollama", "qwen2.5:7b-instruct")


def test_route_file_override_changes_the_decision(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # Given a route file that sends everything to gemini with a pinned model
    path = tmp_path / "routes.toml"
    path.write_text(
        '[[rules]]\nname = "everything"\nprovider = "gemini"\nmodel = "gemini-pinned"\n',
        encoding="utf-8",
    )
    monkeypatch.setenv("AIPOOL_ROUTES_FILE", str(path))
    # When a simple request is routed
    route = decide(_request("hi"))
    # Then the override decides
    assert route.chain[0] == Hop("gemini", "gemini-pinned")
    assert route.rule == "everything"


def test_tools_skip_rules_whose_provider_cannot_call_tools() -> None:
    # Given a table whose only first-matching rule would send everything to ollama
    table = parse_table(
        {
            "rules": [
                {"name": "local", "provider": "ollama"},
                {"name": "cloud", "provider": "gemini"},
            ]
        }
    )
    # When a request with tools is routed
    route = decide(_request("restart it", tools=(TOOL,)), table)
    # Then the ollama rule is skipped and the chain is the tool chain
    assert route.rule == "cloud"
    assert _providers(route) == ["gemini", "claude", "nemotron", "refuse"]


def test_no_matching_rule_falls_back_to_the_adr_chain() -> None:
    # Given a table with only a critical rule
    table = parse_table(
        {"rules": [{"name": "c", "provider": "claude", "priorities": ["critical"]}]}
    )
    # When a normal request is routed, Then the ADR default chain
    route = decide(_request("hi"), table)
    assert route.rule == "default"
    assert _providers(route) == ["ollama", "gemini", "claude", "static"]


def test_cloud_hops_follow_the_model_env(monkeypatch: pytest.MonkeyPatch) -> None:
    # Given a configured gemini model
    monkeypatch.setenv("AIPOOL_MODEL_GEMINI", "gemini-test-model")
    # When a complex request is routed, Then gemini uses it
    assert decide(_request(CORRELATE)).chain[0] == Hop("gemini", "gemini-test-model")


def test_route_round_trips_through_json() -> None:
    # Given a route
    route = decide(_request("Can you review this?\n```python\ndef f():\n    return 1\n```"))
    # When it travels as JSON (task kwargs, results)
    data = json.loads(json.dumps(route.to_dict()))
    # Then it comes back equal, with the documented keys
    assert set(data) >= {"intent", "complexity", "chain", "reason", "confidence"}
    assert data["chain"][0] == {"provider": "ollama", "model": "qwen2.5:7b"}
    assert Route.from_dict(data) == route


def test_from_dict_accepts_hop_strings_with_colons_in_model_ids() -> None:
    # Given a route whose chain is written as "provider:model" strings
    data = {
        "intent": "QUERY",
        "complexity": 2,
        "chain": ["ollama:qwen2.5:7b", "gemini:gemini-2.5-flash", "static"],
        "reason": "r",
    }
    # When parsed, Then the provider is split at the first colon only
    route = Route.from_dict(data)
    assert route.chain == (
        Hop("ollama", "qwen2.5:7b"),
        Hop("gemini", "gemini-2.5-flash"),
        Hop("static", "static"),
    )


def test_same_request_same_route() -> None:
    # Given a request routed from the producer contract twice (producer and router task)
    payload = {"messages": [{"role": "user", "content": "把 search-api 擴容到 6 個 replica"}]}
    # When decided twice from separately parsed requests, Then identical routes
    assert decide(parse_request(payload)) == decide(parse_request(payload))


def test_reason_names_intent_complexity_and_rule() -> None:
    # Given any route, Then its reason explains all three parts
    route = explain("What is a PodDisruptionBudget?")
    assert route.reason.startswith("intent QUERY: ")
    assert "; complexity " in route.reason
    assert "; rule simple_query → ollama:llama3.2:3b" in route.reason


def test_render_route_prints_the_decision() -> None:
    # Given a route and a recording console
    from rich.console import Console

    from aipool.routing.render import render_route

    console = Console(record=True, width=120)
    # When rendered
    render_route(explain("幫我重啟 prod 的 payment-api deployment"), console)
    # Then the intent, the chain and the rule appear
    out = console.export_text()
    assert "TOOL_CALL" in out
    assert "nemotron" in out
    assert "tool_call" in out


def test_a_decision_keeps_no_reference_to_the_prompt() -> None:
    # Given a prompt built at run time (not an interned constant) and the shipped model loaded
    decide(parse_request({"prompt": "warm-up"}))
    prompt = "".join(["canary ", "7f3a9 ", "why is ledger-db slow?"])
    request = parse_request({"prompt": prompt})
    content = request.last_user_text()
    held = sys.getrefcount(content)
    # When it is routed
    decide(request)
    # Then nothing the router keeps between decisions (the model's memo, caches) holds it
    assert sys.getrefcount(content) == held


class _Shares:
    """A complexity head that gives every text the same probabilities over levels 1-5."""

    def __init__(self, *shares: float) -> None:
        self.shares = list(shares)

    def level_shares(self, text: str, points: int) -> list[float]:
        return self.shares


@pytest.mark.parametrize(
    ("shares", "level"),
    [
        # 3 is the likeliest level, but 0.40 of the probability says complex: the cloud
        ((0.05, 0.25, 0.30, 0.25, 0.15), 4),
        ((0.05, 0.15, 0.30, 0.10, 0.40), 5),
        # levels 4-5 below 0.40: 3 when it holds half of what is left, else 2 or 1
        ((0.10, 0.25, 0.35, 0.20, 0.10), 3),
        ((0.20, 0.30, 0.20, 0.20, 0.10), 2),
        ((0.45, 0.30, 0.05, 0.15, 0.05), 1),
    ],
)
def test_complexity_is_read_where_a_level_moves_the_tier(
    shares: tuple[float, ...], level: int
) -> None:
    chosen = choose_complexity(_request("What is a pod?"), _Shares(*shares))  # type: ignore[arg-type]
    assert chosen.level == level
    assert "What" not in chosen.why and "pod" not in chosen.why


def test_the_scorers_correlation_floor_holds_whatever_the_head_says() -> None:
    chosen = choose_complexity(_request(CORRELATE), _Shares(0.9, 0.1, 0.0, 0.0, 0.0))  # type: ignore[arg-type]
    assert chosen.level >= 4


def test_a_tool_chain_ends_on_a_refusal_and_its_models_do_not_think() -> None:
    route = decide(_request("restart payment-api", tools=(TOOL,)))
    assert (route.refusal_ends, route.thinking) == (True, 0.0)


def test_a_cloud_route_goes_on_after_a_refusal_and_may_think_half_its_output() -> None:
    route = decide(_request(CORRELATE))
    assert route.tier == "cloud"
    assert (route.refusal_ends, route.thinking) == (False, 0.5)
    assert route.thinking_budget(1000) == 500


def test_a_local_route_falling_back_to_the_cloud_does_not_think() -> None:
    route = decide(_request("What is a pod?"))
    assert route.tier == "local-small" and route.thinking == 0.0
    assert route.thinking_budget(1000) == 0


def test_a_rule_sets_its_own_thinking_share_and_refusal() -> None:
    table = parse_table(
        {
            "rules": [
                {
                    "name": "all_gemini",
                    "provider": "gemini",
                    "thinking": 0.25,
                    "on_refusal": "end",
                }
            ]
        }
    )
    route = decide(_request("What is a pod?"), table)
    assert (route.thinking, route.refusal_ends) == (0.25, True)
    # and both travel with the route
    assert Route.from_dict(json.loads(json.dumps(route.to_dict()))) == route
