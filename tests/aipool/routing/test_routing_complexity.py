"""Complexity scoring: 1-5 from what the request shows, with a reason for every point."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aipool.contract.request import Message, Request, Tool, parse_request
from aipool.routing.complexity import MAX_SCORE, score
from aipool.routing.text import fold
from aipool.tokens import estimate_tokens


def _request(text: str, **kwargs: object) -> Request:
    return Request(messages=(Message(role="user", content=text),), **kwargs)  # type: ignore[arg-type]


def test_greeting_scores_one() -> None:
    # Given a greeting, When scored, Then it is the lowest score with a reason
    result = score(_request("hi"))
    assert result.score == 1
    assert result.reasons


def test_short_question_scores_two() -> None:
    # Given one short diagnostic question, When scored, Then 2 (length only)
    assert score(_request("Why is checkout-7d9f8b6c5-x2k4q in CrashLoopBackOff?")).score == 2


def test_cjk_length_counts_per_character() -> None:
    # Given the same ask in Chinese and in English, When scored, Then CJK is not under-counted
    zh = score(_request("幫我看一下這個服務為什麼最近一直很慢，延遲從兩百毫秒變成兩秒"))
    assert any("tokens" in r for r in zh.reasons)
    assert zh.score >= 2


def test_multi_service_root_cause_scores_high() -> None:
    # Given several services, a multi-step ask and a root-cause ask
    text = (
        "We have an incident: payment-gateway error rate 8%, inventory-service latency p99 3s, "
        "and redis-cache evictions spiking. Correlate these, find the root cause, then tell me "
        "what to check first."
    )
    # When scored
    result = score(_request(text))
    # Then it lands in cloud territory, and each contribution is named
    assert result.score >= 4
    joined = " ".join(result.reasons)
    assert "correlate 3 services/components" in joined
    assert "multi-step" in joined


def test_chinese_multi_step_markers_count() -> None:
    # Given a Chinese ask with 先…然後…最後
    text = "請先查 checkout 的 error rate，然後看 payment-gateway 的 log，最後判斷要不要回滾"
    # When scored, Then the steps are recognised
    result = score(_request(text))
    assert any("multi-step" in r for r in result.reasons)


def test_pasted_code_history_and_tools_add_points() -> None:
    # Given a code block, a long conversation and tools
    code = "review\n```python\n" + "\n".join(f"x{i} = {i}" for i in range(30)) + "\n```"
    history = tuple(
        Message(role="user" if i % 2 == 0 else "assistant", content=f"turn {i}") for i in range(6)
    )
    request = Request(
        messages=(*history, Message(role="user", content=code)),
        tools=(Tool(name="t", description="", parameters={"type": "object"}),),
    )
    # When scored
    result = score(request)
    # Then each shows up in the reasons, and the score is capped at 5
    joined = " ".join(result.reasons)
    assert "pasted block" in joined
    assert "user turns" in joined
    assert "tool(s)" in joined
    assert result.score == MAX_SCORE


def test_one_line_block_is_just_text() -> None:
    # Given a one-line fenced block, When scored, Then it earns no block point
    result = score(_request("is this right?\n```\n0 9 * * *\n```"))
    assert not any("pasted block" in r for r in result.reasons)


def test_scores_are_deterministic() -> None:
    # Given one request, When scored twice, Then the same score and reasons
    request = _request("先把 payment-gateway 回滾，然後重啟 checkout-service 並確認狀態")
    assert score(request) == score(request)


def test_services_named_without_a_service_suffix_count_when_asked_to_correlate() -> None:
    # Teams name services "pdf-export" and "face-match", not only "*-api" or "*-service"
    english = score(
        _request(
            "doc-renderer latency is up, pdf-export keeps timing out and statement-gen fails "
            "since 16:00. Do they share a root cause?"
        )
    )
    chinese = score(
        _request("face-match 錯誤率升高、ocr-batch 開始逾時，兩個同時發生，請找共同的根因")
    )
    assert english.score >= 4 and english.floor >= 4, english.reasons
    assert chinese.score >= 4 and chinese.floor >= 4, chinese.reasons


@pytest.mark.parametrize(
    "text",
    [
        "Are the checkout-api 5xx and the ledger-db replication lag the same incident?",
        "is the cart-service OOM the same problem as the session-cache evictions?",
        "billing-worker 的重試暴增跟 user-db 的連線數滿了，是不是同一件事？",
        "order-worker 逾時和 payment-api 的 502 有沒有關係？",
        "search-api 變慢跟 catalog-api 的錯誤是同一個事件嗎？",
    ],
)
def test_asking_whether_two_services_symptoms_are_one_incident_is_a_correlation(text: str) -> None:
    # The guide's level 4 names "are these the same incident?": two services, one question
    scored = score(_request(text))
    assert scored.floor >= 4, scored.reasons


def test_asking_whether_one_thing_happened_before_is_not_a_correlation() -> None:
    # One service (or none) compared with its own past is no cross-service correlation
    for text in (
        "is this the same issue as yesterday?",
        "cart-service 又 OOM 了，跟上次是同一件事嗎？",
    ):
        assert score(_request(text)).floor == 0, text


@pytest.mark.parametrize(
    "text",
    [
        "Write a post-mortem from these notes: timeline, impact, root cause, action items.\n"
        "- 02:14 KubeJobFailed nightly-etl\n- 02:20 ledger-db replication lag 40s\n"
        "- 02:45 billing-worker rerun ok",
        "請根據以下筆記寫一份事故檢討，包含時間軸、影響範圍、根本原因、改善事項：\n"
        "- 10:05 push-api iOS 推播成功率告警\n- 10:30 發現 cert-rotator 昨天輪換憑證後有三台沒更新",
        # The colon lists the sections; the notes follow the blank line.
        "幫我寫這次事故的完整檢討，章節：摘要、影響、時間軸、根本原因、行動項目。\n\n筆記：\n"
        "- 17:40 有人在正式環境手動跑 SQL，少了 WHERE\n- 17:52 moth-api 開始回 500\n"
        "- 18:05 gull-db 從備份還原，moth-api 恢復",
        # The vendor's RCA is material to summarise, not a root cause to find.
        "vendor 給的 RCA 幫我摘要成內部版本，分成：what happened、影響、改善\n\n"
        "Root Cause Analysis: edge nodes in the lynx-pop and puma-pop served stale TLS certificates "
        "after a config push; lynx-cdn and puma-cdn were affected for 81 minutes.",
    ],
)
def test_a_write_up_of_given_notes_is_not_a_correlation_ask(text: str) -> None:
    # The guide: a write-up of one incident from given notes is 3, however many sections it asks
    # for; its notes name several components, and "root cause" is one of the sections, or the
    # name of the material (a vendor's RCA) rather than an ask to find one
    scored = score(_request(text))
    assert scored.floor == 0, scored.reasons


def test_finding_a_root_cause_across_services_before_a_post_mortem_still_correlates() -> None:
    # Asked to find the cause across two services first, the write-up comes after the analysis
    scored = score(
        _request(
            "checkout-api 5xx and ledger-db lag at the same time: find the root cause, "
            "then write the post-mortem"
        )
    )
    assert scored.floor >= 4, scored.reasons


def test_hyphenated_words_of_the_language_are_not_services() -> None:
    # "on-call", "read-only", "real-time", "dead-letter" name no service: no correlation floor
    scored = score(
        _request("Is the on-call read-only view real-time, and is the dead-letter count related?")
    )
    assert scored.floor == 0, scored.reasons


@pytest.mark.parametrize(
    "text",
    [
        # The material's "關聯查詢" is an ORM term, its services what the text is about.
        "幫我把下面這段整理成三點重點：這次 consent-api 效能退化的原因是 ORM 升級後關聯查詢預設改成 "
        "lazy loading，列表頁每一筆都會再查一次資料庫，造成 N+1。修正後 p99 從 900ms 回到 130ms。",
        "TL;DR for the channel: wallet-api and ledger-sync were related by a shared cron, and the "
        "root cause was the cron-runner's clock. Steps: first paused the cron, then resynced.",
    ],
)
def test_what_material_to_summarise_says_asks_nothing_more(text: str) -> None:
    # The guide: a summary or rewrite of given material is weighed by the material's length and
    # the parts asked for; the correlations, steps and services the material itself describes
    # are not asks of the pool (they made dev's summaries of a paragraph start in the cloud)
    scored = score(_request(text))
    assert scored.floor == 0, scored.reasons
    assert scored.score <= 2, scored.reasons


def test_an_ask_before_the_material_still_counts() -> None:
    # "整理一下這三個告警的關聯" asks to correlate what follows: the ask before the colon is read
    scored = score(
        _request(
            "整理一下這三個告警的關聯，找出根因：payout-worker 佇列堆積、pg-replica-2 replication "
            "lag、merchant-portal 登入變慢，都在 22:10 之後開始。"
        )
    )
    assert scored.floor >= 4, scored.reasons


@pytest.mark.parametrize(
    "text",
    [
        "kiwi-auth 的 p99 飆高跟 plum-billing 的錯誤率上升時間點一樣，誰是因誰是果？",
        "yak-sync 和 elk-report 都連不到 NFS，其他服務正常，可能的共同原因是什麼？",
        "hx-east 和 hx-west 兩個叢集的 DNS 延遲同時上升，兩邊有什麼共同點可以查？",
        "owl-cron 跟 bee-batch 都在 03:00 fail，error 一樣，是 node 的問題還是 code 的問題？",
        "這兩個 alert 有關聯嗎\n"
        '{"alerts":[{"labels":{"alertname":"TargetDown","job":"fox-scraper"}},\n'
        '{"labels":{"alertname":"HighLatencyP99","service":"fox-api"}}]}',
        "gnu-api and elk-db both degraded at 02:10. What do they have in common?",
    ],
)
def test_correlations_asked_as_a_shared_cause_or_cause_and_effect(text: str) -> None:
    # The guide's level 4: two or more components whose symptoms are to be related, in the words
    # round 8's writer used (a shared cause, which is cause and which effect, a choice of cause
    # for both, "these two alerts")
    scored = score(_request(text))
    assert scored.floor >= 4, scored.reasons


@pytest.mark.parametrize(
    ("text", "design"),
    [
        ("Redis Sentinel 和 Redis Cluster 在故障轉移、分片上的差異，請比較，不用給建議。", False),
        ("Compare Linkerd vs Istio mTLS cert rotation. No need to recommend anything.", False),
        ("queue worker 想 scale to zero，用 KEDA 還是 HPA + adapter？請給推薦跟理由", True),
        (
            "Should our DB move to an operator on k8s or stay on VMs? RPO 0. What do you recommend?",
            True,
        ),
    ],
)
def test_a_recommendation_is_asked_or_declined(text: str, design: bool) -> None:
    # The guide: a comparison with a recommendation asked for is 4, a plain difference 2
    scored = score(_request(text))
    assert any("design comparison" in r for r in scored.reasons) is design, scored.reasons


def test_a_log_names_its_own_modules_not_more_services() -> None:
    # One service and its log: the pool of connections the log names is not a second component
    scored = score(
        _request(
            "rook-api started failing writes at 09:14. log below, what's the root cause?\n\n"
            "2025-05-21 09:14:03.221 ERROR [rook-api] o.h.SqlExceptionHelper : HikariPool-1 - "
            "Connection is not available\n"
            "org.springframework.dao.DataAccessResourceFailureException: no JDBC Connection\n"
            "Caused by: java.sql.SQLTransientConnectionException: HikariPool-1 - timed out\n"
            "2025-05-21 09:14:04.002 WARN  [rook-api] pool stats (total=10, active=10, idle=0)"
        )
    )
    assert scored.floor == 0, scored.reasons


def test_a_report_over_a_period_counts_its_period_with_pasted_items() -> None:
    # The guide: a report over a period is 4, whether its items come as prose or as a list
    scored = score(
        _request(
            "write the weekly platform update from these items, group into shipped / incidents\n\n"
            "- k8s 1.30 upgrade done on staging\n- ingress migration: 17/22 services moved\n"
            "- incident 9/23: snapshot partial failure\n- incident 9/25: sso latency 12 min"
        )
    )
    assert any("over a period" in r for r in scored.reasons), scored.reasons


@pytest.mark.parametrize(
    "text",
    [
        "kumo-points 和 sora-promo 的錯誤率從中午開始一起上升，都卡在呼叫 hoshi-fx 的時候。"
        "這三個服務之間到底是哪裡出問題？",
        "tarn-settle p99 spikes exactly when the fell-batch job kicks off at 01:00, and both hit "
        "beck-mysql. Is the batch starving the API?",
        "deploy crag-authz 之後，moor-wallet 跟 heath-orders 的 401 都變多，但 dale-gateway 沒有，為什麼？",
        "why are several services degraded at once?\n\n$ kubectl get events -A | tail -3\n"
        "content  12m  Warning  BackOff  pod/fen-feed-1  Back-off restarting\n"
        "search   11m  Warning  BackOff  pod/mire-idx-2  Back-off restarting",
        "glen-cms and scar-docs started failing DNS lookups an hour after CoreDNS was scaled "
        "down. Is the CoreDNS change the cause or a coincidence?",
    ],
)
def test_symptoms_that_came_together_are_a_correlation(text: str) -> None:
    # The guide's level 4, described rather than named: symptoms of several components that
    # came together, or a cause asked of one component for another's symptom (round 9's misses)
    scored = score(_request(text))
    assert scored.floor >= 4, scored.reasons


@pytest.mark.parametrize(
    "text",
    [
        "lol I just watched 40 pods come up green at once, oddly satisfying",
        "How do we avoid two pods of kiln-api running the migrations at once?",
        "wold-sched 的 cron job 這兩天都晚了 10 分鐘，我們前天改了 startingDeadlineSeconds，是這個造成的嗎？",
    ],
)
def test_things_at_once_or_one_cause_of_one_service_are_not(text: str) -> None:
    # Nothing failed together, or one service's symptom and what changed in it: 1 to 3
    scored = score(_request(text))
    assert scored.floor == 0, scored.reasons


def test_a_report_over_a_quarter_or_the_last_days_counts_its_period() -> None:
    scored = score(
        _request(
            "過去 30 天的 incidents 幫我整理成 trend analysis：哪類問題最多、MTTR 有沒有變好\n\n"
            "06-05 SEV3 tor-cart cache key\n06-11 SEV2 lea-orders migration lock"
        )
    )
    assert any("over a period" in r for r in scored.reasons), scored.reasons


def test_a_parsed_requests_length_points_read_no_text_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Given a long request as a hop parses it (validation estimates its tokens once, #44)
    import aipool.contract.request as contract
    import aipool.routing.complexity as complexity

    request = parse_request({"prompt": "The payment service is slow. " * 4_000})
    reads: list[int] = []

    def counting(text: str) -> int:
        reads.append(len(text))
        return estimate_tokens(text)

    monkeypatch.setattr(contract, "estimate_tokens", counting)
    monkeypatch.setattr(complexity, "estimate_tokens", counting, raising=False)
    # When it is scored
    scored = score(request)
    # Then its length points come from the request's own estimate: the text is not read again
    assert reads == []
    assert "~29000 tokens (+3)" in scored.reasons


_PIECES = st.sampled_from(
    ["payments", "ledger-db", "checkout-api", "redis", "kafka", "load balancer", "the", "its",
     "reconciliation", "service", "services", "job", "worker", "queue", "cluster", "gateway",
     "three", "two", "several", "12", "3", "alerts", "pods", "nodes", "things", "個", "者", "服務",
     "三", "兩", "資料庫", "快取", "on-call", "-", " ", "  ", "\n", ",", "s", "é"]
)  # fmt: skip


@settings(max_examples=400, deadline=None)
@given(st.lists(_PIECES, max_size=20).map("".join))
def test_the_components_and_counts_skipped_by_a_missing_word_are_none(text: str) -> None:
    # Given a folded text made of components, kinds, counts and noise
    from aipool.routing import complexity

    folded = fold(text)
    # Then without a kind after a space, the components found without "<name> service" are all
    # of them; without a hyphen there is no kebab-case name; without a counted word, no count
    everything = [m.span() for m in complexity._COMPONENT.finditer(folded)]
    if not any(kind in folded for kind in complexity._KIND_AFTER_SPACE):
        assert [m.span() for m in complexity._COMPONENT_UNNAMED.finditer(folded)] == everything
    if "-" not in folded:
        assert not complexity._KEBAB.findall(folded)
    if not any(word in folded for word in complexity._COUNT_WORDS):
        assert not complexity._STATED_COUNT.findall(folded)


_NAME_PIECES = st.sampled_from(
    ["Kube", "Node", "Etcd", "CoreDNS", "SLO", "CPU", "High", "Pod", "Crash", "Looping", "X",
     "kube", "payments", "ledger", "db", "api", "k8s", "v2", "7d9f", "-", "_", " ", "\n", ".",
     "Ñ", "é", "1"]
)  # fmt: skip


@settings(max_examples=400, deadline=None)
@given(st.lists(_NAME_PIECES, max_size=16).map("".join))
def test_alert_and_kebab_case_names_are_found_as_their_patterns_are_written(text: str) -> None:
    # Given a text of alert-name parts, kebab-case parts and noise
    import re

    from aipool.routing import complexity

    # Then the alert-name pattern, spread to start with capitals, finds what it is written as
    written = re.compile(complexity._ALERT_NAME_PATTERN)
    assert complexity._ALERT_NAME.findall(text) == written.findall(text)
    # And the kebab-case pattern with possessive runs finds what its backtracking form finds
    folded = fold(text)
    backtracking = re.compile(r"\b[a-z][a-z0-9]*(?:-[a-z0-9]+)+\b")
    assert complexity._KEBAB.findall(folded) == backtracking.findall(folded)
