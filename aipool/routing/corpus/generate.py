"""Build the routing corpus: hand-written requests plus template families, split before any tuning.

Run ``python -m aipool.routing.corpus.generate`` to write ``train.jsonl``, ``dev.jsonl`` and
``test.jsonl`` beside this file. The output is a pure function of this file, ``payloads.py`` and
``handwritten.tsv`` (one seeded random generator), so the frozen test split can be checked against
``test.sha256``; regenerating after a change that moves the test split is refused unless
``--refreeze`` is given (and a refreeze is a new test set: say so in the commit).

How a split is drawn, so that nothing fitted teaches its own test:

* every template *family* is a group: all its members land in one split (60/20/20 per intent,
  by a seeded shuffle of the families, drawn before any model existed);
* each hand-written line of ``handwritten.tsv`` is a group of its own, split 60/20/20 per intent
  the same way; ``handwritten_train.tsv`` was written after the split, after reading the dev
  split's misses, and goes to train only;
* that first test split was read once (2026-12-02) and is training data since: its rows go to
  train, and its families still fill their service names from the pool no other family uses;
* the files of ``WRITTEN_FIT``, written by hand, are split 80/20 per intent between train and
  dev, line by line: ``written_fit.jsonl`` (649 requests for the kinds the first test split
  showed missing, and more), ``written_read.jsonl`` (the second test split: 302 requests written
  blind, read once on 2026-12-03, fitted on since) and ``written_boundary.jsonl`` (complexity
  boundaries and the phrasings the second test split missed);
* the test split is ``written_test.jsonl`` alone: requests written by hand by someone who saw
  neither the corpus nor the router, naming no service the templates use; a text that is also
  in it is dropped from train and dev.

Every row carries ``intent``, ``complexity`` (1-5, the rubric in ``docs/routing.md``), ``lang``
(``en``, ``zh`` for Traditional Chinese, ``mixed``), ``source`` (``hand`` or ``template:<family>``)
and ``tier``: where ADR-006's table (``routes.toml``) starts a request with that intent and
complexity (see :func:`aipool.routing.tiers.tier_for`).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aipool.routing.corpus import payloads as P
from aipool.routing.tiers import tier_for

HERE = Path(__file__).resolve().parent
SEED = 20260302
SPLITS = ("train", "dev", "test")

# Service names: train and dev families draw from the first pool, test families from the second.
FIT_SERVICES = (
    "checkout-api", "payment-api", "cart-service", "order-worker", "search-api", "auth-service",
    "billing-worker", "inventory-service", "user-db", "session-cache", "notification-worker",
    "report-service", "pricing-service", "catalog-api", "shipping-worker", "ledger-db",
)  # fmt: skip
TEST_SERVICES = (
    "invoice-api", "member-service", "coupon-worker", "media-gateway", "profile-db",
    "recommend-service", "fraud-engine", "refund-worker", "geo-api", "loyalty-service",
    "chat-gateway", "stock-db", "quote-service", "audit-worker",
)  # fmt: skip
ALERTS = (
    "KubePodCrashLooping", "KubePodNotReady", "NodeFilesystemAlmostFull", "HighErrorRate",
    "CPUThrottlingHigh", "KubeHpaMaxedOut", "PostgresReplicationLag", "KafkaConsumerLag",
    "RedisMemoryHigh", "TargetDown", "KubeJobFailed", "NodeMemoryPressure", "HighLatencyP99",
    "CertificateExpiringSoon", "KubeDeploymentReplicasMismatch",
)  # fmt: skip
NAMESPACES = ("prod", "staging", "payments", "batch", "dev", "core")
NODES = ("node-3", "gpu-7", "db-2", "worker-11", "ip-10-2-3-4", "node-a5")
SYMPTOMS_EN = (
    "5xx up 6%", "p99 latency at 2.4s", "error rate 12%", "connection pool exhausted",
    "replication lag 40 s", "consumer lag 90k", "memory at 95%", "timeouts to its database",
    "restarts every 5 minutes", "queue depth 30k", "CPU throttled 80%", "success rate down to 70%",
)  # fmt: skip
SYMPTOMS_ZH = (
    "5xx 上升到 6%", "p99 延遲 2.4 秒", "錯誤率 12%", "連線池用完", "複寫延遲 40 秒",
    "consumer lag 九萬", "記憶體 95%", "連資料庫逾時", "每五分鐘重啟一次", "佇列堆積三萬筆",
    "CPU 被限流 80%", "成功率掉到 70%",
)  # fmt: skip


@dataclass(frozen=True)
class Family:
    """A template family: one intent, one language, phrasings filled from pools."""

    name: str
    intent: str
    lang: str
    make: Callable[[random.Random, tuple[str, ...]], tuple[str, int]]
    count: int = 13
    extra: Callable[[random.Random], dict[str, Any]] | None = None


def _fence(rng: random.Random, body: str, lang: str = "") -> str:
    return f"```{lang}\n{body}\n```" if rng.random() < 0.6 else body


FAMILIES: list[Family] = []


def family(
    intent: str,
    lang: str,
    count: int = 13,
    extra: Callable[[random.Random], dict[str, Any]] | None = None,
) -> Callable[[Callable[[random.Random, tuple[str, ...]], tuple[str, int]]], None]:
    """Register a template family; the function's name is the family's name."""

    def register(make: Callable[[random.Random, tuple[str, ...]], tuple[str, int]]) -> None:
        FAMILIES.append(Family(make.__name__, intent, lang, make, count, extra))

    return register


def pick(rng: random.Random, pool: tuple[str, ...], n: int) -> list[str]:
    return rng.sample(list(pool), n)


# ---------------------------------------------------------------------------- ALERT_TRIAGE
@family("ALERT_TRIAGE", "en")
def alert_meaning_en(rng: random.Random, svc: tuple[str, ...]) -> tuple[str, int]:
    s, a = rng.choice(svc), rng.choice(ALERTS)
    return rng.choice([
        f"{a} is firing on {s}. What does it mean and should I worry?",
        f"Got paged: {a} for {s}. Is this serious?",
        f"{a} alert on {s} again. what's going on?",
        f"Why would {a} fire for {s} right after a deploy?",
        f"Can you help me understand why {s} triggers {a} every night around 2am?",
    ]), 2  # fmt: skip


@family("ALERT_TRIAGE", "zh")
def alert_meaning_zh(rng: random.Random, svc: tuple[str, ...]) -> tuple[str, int]:
    s, a = rng.choice(svc), rng.choice(ALERTS)
    return rng.choice([
        f"{s} 出現 {a} 告警，這代表什麼？要處理嗎？",
        f"半夜收到 {a}，服務是 {s}，嚴重嗎？",
        f"{s} 的 {a} 又響了，是怎麼回事？",
        f"為什麼 {s} 每次部署完都會觸發 {a}？",
        f"請問 {s} 這個 {a} 告警是不是誤報？",
    ]), 2  # fmt: skip


@family("ALERT_TRIAGE", "en")
def alertmanager_payload_en(rng: random.Random, svc: tuple[str, ...]) -> tuple[str, int]:
    s, a = rng.choice(svc), rng.choice(ALERTS)
    body = _fence(rng, P.alertmanager(rng, s, a), "json")
    ask = rng.choice(["what do I do", "Is this serious?", "triage this for me", "what's the likely cause?",
                      "should I wake someone up?", "where do I start?"])  # fmt: skip
    return (f"{body}\n{ask}" if rng.random() < 0.7 else f"{ask}\n{body}"), 2


@family("ALERT_TRIAGE", "zh")
def alertmanager_payload_zh(rng: random.Random, svc: tuple[str, ...]) -> tuple[str, int]:
    s, a = rng.choice(svc), rng.choice(ALERTS)
    body = _fence(rng, P.alertmanager(rng, s, a), "json")
    ask = rng.choice(["這個告警要怎麼處理？", "幫我判斷嚴不嚴重", "可能的原因是什麼？", "要叫醒誰嗎？",
                      "先查哪裡比較好？"])  # fmt: skip
    return (f"{body}\n{ask}" if rng.random() < 0.6 else f"{ask}\n{body}"), 2


@family("ALERT_TRIAGE", "en")
def pagerduty_payload_en(rng: random.Random, svc: tuple[str, ...]) -> tuple[str, int]:
    s = rng.choice(svc)
    title = rng.choice([f"{s} error rate above 5%", f"{s} is down", f"High latency on {s}"])
    body = _fence(rng, P.pagerduty(rng, s, title), "json")
    ask = rng.choice(["what's going on here?", "PagerDuty just sent this, how bad is it?",
                      "help me triage", "first steps?"])  # fmt: skip
    return f"{ask}\n{body}", 2


@family("ALERT_TRIAGE", "mixed")
def grafana_payload_mixed(rng: random.Random, svc: tuple[str, ...]) -> tuple[str, int]:
    s = rng.choice(svc)
    metric, value = rng.choice(
        [("error ratio", "0.08"), ("p99 latency", "2.7s"), ("disk used", "93%")]
    )
    body = _fence(rng, P.grafana(rng, s, metric, value), "json")
    ask = rng.choice(["幫我看一下這個 alert", "Grafana 跳這個，要處理嗎？", "這個 alert 是什麼意思？",
                      "這個 firing 的原因可能是什麼？"])  # fmt: skip
    return f"{body}\n{ask}", 2


@family("ALERT_TRIAGE", "en")
def logs_why_en(rng: random.Random, svc: tuple[str, ...]) -> tuple[str, int]:
    s = rng.choice(svc)
    body = _fence(rng, P.log_excerpt(rng, s, rng.randint(4, 9)))
    ask = rng.choice([f"why is {s} failing?", "what's wrong here?", f"{s} started throwing these, why?",
                      "any idea what's causing this?"])  # fmt: skip
    return f"{ask}\n{body}", 3


@family("ALERT_TRIAGE", "zh")
def logs_why_zh(rng: random.Random, svc: tuple[str, ...]) -> tuple[str, int]:
    s = rng.choice(svc)
    body = _fence(rng, P.log_excerpt(rng, s, rng.randint(4, 9)))
    ask = rng.choice([f"{s} 一直報這個錯，為什麼？", "這些 log 是什麼問題？", "幫我看一下是哪裡出問題",
                      "這個錯誤的原因是什麼？"])  # fmt: skip
    return f"{ask}\n{body}", 3


@family("ALERT_TRIAGE", "en")
def stacktrace_en(rng: random.Random, svc: tuple[str, ...]) -> tuple[str, int]:
    s = rng.choice(svc)
    trace = rng.choice([P.python_traceback, P.java_stacktrace, P.go_panic])(rng, s)
    ask = rng.choice([f"{s} is crashing in prod with this, why?", "Production error, what's causing it?",
                      "this started after the 14:00 deploy, what broke?", "help, pods crashing:"])  # fmt: skip
    return f"{ask}\n{_fence(rng, trace)}", 3


@family("ALERT_TRIAGE", "mixed")
def stacktrace_mixed(rng: random.Random, svc: tuple[str, ...]) -> tuple[str, int]:
    s = rng.choice(svc)
    trace = rng.choice([P.python_traceback, P.java_stacktrace, P.go_panic])(rng, s)
    ask = rng.choice([f"{s} 在 prod 一直噴這個 exception，為什麼？", "deploy 之後開始出現這個 error，是什麼原因？",
                      "這個 crash 要從哪裡查起？"])  # fmt: skip
    return f"{ask}\n{_fence(rng, trace)}", 3


@family("ALERT_TRIAGE", "en")
def describe_pod_en(rng: random.Random, svc: tuple[str, ...]) -> tuple[str, int]:
    s = rng.choice(svc)
    return f"{rng.choice(['what is wrong with this pod?', 'why is it not starting?', 'explain these events'])}\n" \
        f"{_fence(rng, P.kubectl_describe(rng, s))}", 3  # fmt: skip


@family("ALERT_TRIAGE", "en")
def multi_service_en(rng: random.Random, svc: tuple[str, ...]) -> tuple[str, int]:
    n = rng.choice([2, 3, 3, 4])
    parts = [f"{s} {y}" for s, y in zip(pick(rng, svc, n), pick(rng, SYMPTOMS_EN, n), strict=True)]
    listed = ", ".join(parts[:-1]) + f" and {parts[-1]}"
    ask = rng.choice(["Correlate these and find the root cause.", "Are these related? What's the common cause?",
                      "Is this one incident or several? Work out the root cause.",
                      "Find what connects them and what broke first."])  # fmt: skip
    lead = rng.choice(["", "Since 03:00: ", "Right now: ", "Multiple alerts: "])
    return f"{lead}{listed}. {ask}", 4 if n < 4 else 5


@family("ALERT_TRIAGE", "zh")
def multi_service_zh(rng: random.Random, svc: tuple[str, ...]) -> tuple[str, int]:
    n = rng.choice([2, 3, 3, 4])
    parts = [f"{s} {y}" for s, y in zip(pick(rng, svc, n), pick(rng, SYMPTOMS_ZH, n), strict=True)]
    listed = "、".join(parts)
    ask = rng.choice(["請分析根因。", "這幾個是不是同一個問題？請找出根本原因。", "幫我把它們關聯起來看，哪個先壞的？",
                      "請判斷彼此的因果關係並找出根因。"])  # fmt: skip
    lead = rng.choice(["告警：", "同時發生：", "從凌晨三點開始，", ""])
    return f"{lead}{listed}，{ask}", 4 if n < 4 else 5


@family("ALERT_TRIAGE", "mixed")
def multi_service_mixed(rng: random.Random, svc: tuple[str, ...]) -> tuple[str, int]:
    n = rng.choice([2, 3, 3])
    parts = [f"{s} {y}" for s, y in zip(pick(rng, svc, n), pick(rng, SYMPTOMS_EN, n), strict=True)]
    ask = rng.choice(
        [
            "幫我 correlate 一下，找 root cause。",
            "這些是同一個 root cause 嗎？",
            "請分析它們之間的關聯。",
        ]
    )
    return f"{'、'.join(parts)}，{ask}", 4


@family("ALERT_TRIAGE", "en", count=10)
def incident_timeline_en(rng: random.Random, svc: tuple[str, ...]) -> tuple[str, int]:
    services = pick(rng, svc, 5)
    lines = [f"{9 + i // 3:02d}:{(i * 7) % 60:02d} {s} {y}"
             for i, (s, y) in enumerate(zip(services, pick(rng, SYMPTOMS_EN, 5), strict=True))]  # fmt: skip
    ask = rng.choice([
        "Correlate all of this, give me the most likely root cause, the order to mitigate and what evidence would confirm it.",
        "Build the causal chain across these services, name the root cause and a mitigation plan.",
    ])  # fmt: skip
    return "Incident timeline:\n" + "\n".join(lines) + f"\n{ask}", 5


@family("ALERT_TRIAGE", "zh", count=10)
def incident_timeline_zh(rng: random.Random, svc: tuple[str, ...]) -> tuple[str, int]:
    services = pick(rng, svc, 5)
    lines = [f"{9 + i // 3:02d}:{(i * 7) % 60:02d} {s} {y}"
             for i, (s, y) in enumerate(zip(services, pick(rng, SYMPTOMS_ZH, 5), strict=True))]  # fmt: skip
    ask = rng.choice(["請把這些事件關聯起來，找出根因、處理順序，以及需要哪些證據確認。",
                      "請整理因果關係，判斷根本原因並給出止血步驟與後續調查方向。"])  # fmt: skip
    return "事故時間線：\n" + "\n".join(lines) + f"\n{ask}", 5


@family("ALERT_TRIAGE", "en")
def symptom_short_en(rng: random.Random, svc: tuple[str, ...]) -> tuple[str, int]:
    s, y = rng.choice(svc), rng.choice(SYMPTOMS_EN)
    return rng.choice([f"{s}: {y}, why?", f"why does {s} show {y}?", f"{s} has {y} since this morning, what's causing it?",
                       f"{s} {y} — where do I look first?"]), 2  # fmt: skip


@family("ALERT_TRIAGE", "zh")
def symptom_short_zh(rng: random.Random, svc: tuple[str, ...]) -> tuple[str, int]:
    s, y = rng.choice(svc), rng.choice(SYMPTOMS_ZH)
    return rng.choice([f"{s} {y}，為什麼？", f"{s} 突然 {y}，是什麼原因？", f"{s} 從早上開始 {y}，要從哪裡開始查？",
                       f"{s} {y}，怎麼回事？"]), 2  # fmt: skip


@family("ALERT_TRIAGE", "en", count=8, extra=lambda rng: {"priority": "critical"})
def critical_incident_en(rng: random.Random, svc: tuple[str, ...]) -> tuple[str, int]:
    s = rng.choice(svc)
    return rng.choice([f"SEV1: {s} is down for all customers. What do we check first?",
                       f"P1 on {s}, checkout blocked, need triage now",
                       f"{s} outage, revenue impact, help me find the cause fast"]), 3  # fmt: skip


# ---------------------------------------------------------------------------- QUERY
_OPS_EN = ("scale", "restart", "roll back", "drain", "cordon", "delete", "pause", "patch")
_OPS_ZH = ("擴容", "重啟", "回滾", "刪除", "暫停", "縮容")
_RES = ("deployment", "statefulset", "node", "cronjob", "pod", "daemonset", "namespace", "HPA")
_CONCEPTS = (
    "PodDisruptionBudget", "a headless Service", "an init container", "the error budget", "a sidecar",
    "KEDA", "a StatefulSet", "an Ingress controller", "PromQL's rate()", "a Kafka consumer group",
    "Redis eviction", "the OOM killer", "a readiness gate", "ArgoCD sync waves", "a taint",
)  # fmt: skip
_CONCEPTS_ZH = (
    "PodDisruptionBudget", "headless Service", "init container", "error budget", "sidecar", "KEDA",
    "StatefulSet", "Ingress controller", "PromQL 的 rate()", "Kafka consumer group", "Redis 淘汰策略",
    "OOM killer", "taint 與 toleration", "ArgoCD sync wave",
)  # fmt: skip
_PAIRS = (
    ("a Deployment", "a StatefulSet"), ("liveness", "readiness probes"), ("rate()", "irate()"),
    ("ClusterIP", "NodePort"), ("cordon", "drain"), ("requests", "limits"), ("Helm", "Kustomize"),
    ("Loki", "Elasticsearch"), ("RDB", "AOF"), ("at-least-once", "exactly-once delivery"),
)  # fmt: skip


@family("QUERY", "en")
def howto_en(rng: random.Random, svc: tuple[str, ...]) -> tuple[str, int]:
    op, res = rng.choice(_OPS_EN), rng.choice(_RES)
    return rng.choice([f"How do I {op} a {res}?", f"how do you {op} a {res} with kubectl?",
                       f"What's the command to {op} a {res}?", f"Is there a safe way to {op} a {res} in prod?",
                       f"how can I {op} a {res} without downtime?"]), 2  # fmt: skip


@family("QUERY", "zh")
def howto_zh(rng: random.Random, svc: tuple[str, ...]) -> tuple[str, int]:
    op, res = rng.choice(_OPS_ZH), rng.choice(_RES)
    return rng.choice([f"要怎麼{op} {res}？指令是什麼？", f"請問 {res} 要如何{op}？", f"{op} {res} 的指令是什麼？",
                       f"在 prod {op} {res} 有什麼要注意的？", f"怎麼{op} {res} 才不會中斷服務？"]), 2  # fmt: skip


@family("QUERY", "en")
def concept_en(rng: random.Random, svc: tuple[str, ...]) -> tuple[str, int]:
    c = rng.choice(_CONCEPTS)
    return rng.choice([f"What is {c}?", f"what's {c}", f"Can you explain {c}?", f"{c} — what is it for?",
                       f"ELI5 {c}"]), 1  # fmt: skip


@family("QUERY", "zh")
def concept_zh(rng: random.Random, svc: tuple[str, ...]) -> tuple[str, int]:
    c = rng.choice(_CONCEPTS_ZH)
    return rng.choice(
        [f"{c} 是什麼？", f"什麼是 {c}？", f"可以解釋一下 {c} 嗎？", f"{c} 是用來做什麼的？"]
    ), 1


@family("QUERY", "en")
def difference_en(rng: random.Random, svc: tuple[str, ...]) -> tuple[str, int]:
    a, b = rng.choice(_PAIRS)
    return rng.choice([f"What's the difference between {a} and {b}?", f"{a} vs {b}, when do I use which?",
                       f"How is {a} different from {b}?"]), 2  # fmt: skip


@family("QUERY", "zh")
def difference_zh(rng: random.Random, svc: tuple[str, ...]) -> tuple[str, int]:
    a, b = rng.choice(_PAIRS)
    return rng.choice(
        [
            f"{a} 跟 {b} 差在哪？",
            f"{a} 和 {b} 有什麼不同？什麼時候用哪個？",
            f"{a} 與 {b} 的差別是什麼？",
        ]
    ), 2


@family("QUERY", "en")
def promql_en(rng: random.Random, svc: tuple[str, ...]) -> tuple[str, int]:
    s = rng.choice(svc)
    what = rng.choice(["the 5xx ratio", "p95 latency", "restarts in the last hour", "memory usage per pod",
                       "request rate"])  # fmt: skip
    return rng.choice([f"Write a PromQL query for {what} of {s}.", f"I need the PromQL for {what} per endpoint",
                       f"what's the LogQL to find errors from {s}?"]), 2  # fmt: skip


@family("QUERY", "mixed")
def promql_mixed(rng: random.Random, svc: tuple[str, ...]) -> tuple[str, int]:
    s = rng.choice(svc)
    what = rng.choice(
        ["5xx 比例", "p95 延遲", "過去一小時的 restart 次數", "每個 pod 的記憶體用量"]
    )
    return rng.choice([f"幫我寫一個 PromQL 查 {s} 的 {what}", f"{s} 的 {what} 要用什麼 query？",
                       f"請問 {what} 的 PromQL 怎麼寫？"]), 2  # fmt: skip


@family("QUERY", "en", count=11)
def design_compare_en(rng: random.Random, svc: tuple[str, ...]) -> tuple[str, int]:
    a, b = rng.choice(_PAIRS)
    ctx = rng.choice(
        ["a 40-service platform", "our payments stack", "a multi-region setup", "a small team"]
    )
    return rng.choice([
        f"Compare {a} and {b} for {ctx}: operational cost, failure modes, migration effort. Recommend one and justify it.",
        f"We need to pick between {a} and {b} for {ctx}. Walk through the trade-offs in detail and what would change your mind.",
    ]), 4  # fmt: skip


@family("QUERY", "zh", count=11)
def design_compare_zh(rng: random.Random, svc: tuple[str, ...]) -> tuple[str, int]:
    a, b = rng.choice(_PAIRS)
    ctx = rng.choice(["四十個服務的平台", "我們的支付系統", "多區域部署", "小團隊"])
    return rng.choice([
        f"請比較 {a} 與 {b} 用在{ctx}的維運成本、失敗模式與遷移成本，並給出建議與理由。",
        f"{ctx}要在 {a} 跟 {b} 之間選一個，請詳細分析取捨，以及什麼情況下會改變結論。",
    ]), 4  # fmt: skip


@family("QUERY", "en")
def lookup_en(rng: random.Random, svc: tuple[str, ...]) -> tuple[str, int]:
    s, ns = rng.choice(svc), rng.choice(NAMESPACES)
    return rng.choice([f"show me the pods in {ns}", f"list the deployments in {ns}", f"which version of {s} is running in {ns}?",
                       f"how many replicas does {s} have?", f"where are the logs for {s} stored?"]), 2  # fmt: skip


@family("QUERY", "zh")
def lookup_zh(rng: random.Random, svc: tuple[str, ...]) -> tuple[str, int]:
    s, ns = rng.choice(svc), rng.choice(NAMESPACES)
    return rng.choice([f"查一下 {ns} 裡有哪些 pod", f"{s} 現在跑的是哪個版本？", f"{s} 目前有幾個 replica？",
                       f"{s} 的 log 在哪裡看？", f"列出 {ns} 的所有 deployment"]), 2  # fmt: skip


@family("QUERY", "en")
def mechanism_en(rng: random.Random, svc: tuple[str, ...]) -> tuple[str, int]:
    c = rng.choice(_CONCEPTS)
    return rng.choice([f"Explain how {c} works under the hood and what happens when a node fails.",
                       f"How does {c} behave during a rolling update, and what are the common pitfalls?",
                       f"Walk me through how {c} interacts with the HPA, step by step."]), 3  # fmt: skip


@family("QUERY", "mixed")
def mechanism_mixed(rng: random.Random, svc: tuple[str, ...]) -> tuple[str, int]:
    c = rng.choice(_CONCEPTS_ZH)
    return rng.choice([f"{c} 在 rolling update 的時候是怎麼運作的？有哪些常見的坑？",
                       f"可以說明 {c} 的運作原理嗎？node 掛掉時會發生什麼事？"]), 3  # fmt: skip


# ---------------------------------------------------------------------------- CODE_REVIEW
_NAMES = ("order", "invoice", "user", "session", "payment", "quota", "report")


@family("CODE_REVIEW", "en")
def python_review_en(rng: random.Random, svc: tuple[str, ...]) -> tuple[str, int]:
    code = _fence(rng, P.python_code(rng, rng.choice(_NAMES)), "python")
    ask = rng.choice(["Can you review this?", "any issues with this function?", "is this ok to merge?",
                      "What would you change here?", "spot the bug:"])  # fmt: skip
    return (f"{ask}\n{code}" if rng.random() < 0.7 else f"{code}\n{ask}"), 3


@family("CODE_REVIEW", "zh")
def python_review_zh(rng: random.Random, svc: tuple[str, ...]) -> tuple[str, int]:
    code = _fence(rng, P.python_code(rng, rng.choice(_NAMES)), "python")
    ask = rng.choice(
        [
            "幫我 review 這段程式碼",
            "這個函式有沒有問題？",
            "這樣寫可以嗎？有什麼可以改進？",
            "這段有 bug 嗎？",
        ]
    )
    return f"{ask}\n{code}", 3


@family("CODE_REVIEW", "mixed")
def go_review_mixed(rng: random.Random, svc: tuple[str, ...]) -> tuple[str, int]:
    code = _fence(rng, P.go_code(rng, rng.choice(_NAMES)), "go")
    ask = rng.choice(
        [
            "這段 Go 有沒有 race condition？",
            "幫我看一下這個寫法有沒有問題",
            "這個 goroutine 用法 OK 嗎？",
        ]
    )
    return f"{ask}\n{code}", 3


@family("CODE_REVIEW", "en")
def go_review_en(rng: random.Random, svc: tuple[str, ...]) -> tuple[str, int]:
    code = _fence(rng, P.go_code(rng, rng.choice(_NAMES)), "go")
    ask = rng.choice(
        [
            "Is this goroutine usage safe?",
            "Check this for concurrency bugs",
            "Review this Go snippet please",
        ]
    )
    return f"{ask}\n{code}", 3


@family("CODE_REVIEW", "en")
def diff_review_en(rng: random.Random, svc: tuple[str, ...]) -> tuple[str, int]:
    s = rng.choice(svc)
    d = _fence(rng, P.diff(rng, f"{s}/config.py", rng.randint(4, 8)), "diff")
    ask = rng.choice(["Please review this change before I merge it:", "lgtm?", "any issues with this diff?",
                      "Review this patch for me", "does this change look safe?"])  # fmt: skip
    return f"{ask}\n{d}", 3


@family("CODE_REVIEW", "zh")
def diff_review_zh(rng: random.Random, svc: tuple[str, ...]) -> tuple[str, int]:
    s = rng.choice(svc)
    d = _fence(rng, P.diff(rng, f"{s}/settings.py", rng.randint(4, 8)), "diff")
    ask = rng.choice(
        ["合併前幫我審查這個修改", "這個 diff 有沒有問題？", "幫我看這個 patch 安不安全"]
    )
    return f"{ask}\n{d}", 3


@family("CODE_REVIEW", "en")
def manifest_review_en(rng: random.Random, svc: tuple[str, ...]) -> tuple[str, int]:
    s = rng.choice(svc)
    m = _fence(rng, P.yaml_manifest(rng, s), "yaml")
    ask = rng.choice(
        [
            "Is this manifest ok for prod?",
            "review my deployment yaml",
            "anything wrong with this manifest?",
        ]
    )
    return f"{ask}\n{m}", 3


@family("CODE_REVIEW", "mixed")
def dockerfile_review_mixed(rng: random.Random, svc: tuple[str, ...]) -> tuple[str, int]:
    d = _fence(rng, P.dockerfile(rng), "dockerfile")
    ask = rng.choice(
        [
            "這個 Dockerfile 有什麼可以改進的？",
            "幫我 review 這個 Dockerfile",
            "Dockerfile 這樣寫有安全問題嗎？",
        ]
    )
    return f"{ask}\n{d}", 3


@family("CODE_REVIEW", "en")
def inline_code_en(rng: random.Random, svc: tuple[str, ...]) -> tuple[str, int]:
    snippet = rng.choice(["`SELECT * FROM orders WHERE id = ` + user_input", "`except Exception: pass`",
                          "`kubectl apply -f . --force`", "`os.system('rm -rf ' + path)`",
                          "`time.sleep(30)` inside the request handler", "`chmod 777 /data`"])  # fmt: skip
    return rng.choice(
        [f"Is {snippet} ok?", f"quick check: {snippet} — any problem?", f"is {snippet} correct?"]
    ), 2


@family("CODE_REVIEW", "en")
def pr_description_en(rng: random.Random, svc: tuple[str, ...]) -> tuple[str, int]:
    s = rng.choice(svc)
    change = rng.choice(["moves retries into a decorator", "adds a Redis cache in front of the DB",
                         "replaces the cron with a Celery beat schedule", "switches auth to JWT"])  # fmt: skip
    return rng.choice([f"Review PR #{rng.randint(100, 999)} for {s}: it {change}. Check error handling and rollback.",
                       f"Can you code review the pull request that {change} in {s}? Focus on concurrency and migrations."]), 4  # fmt: skip


@family("CODE_REVIEW", "zh")
def pr_description_zh(rng: random.Random, svc: tuple[str, ...]) -> tuple[str, int]:
    s = rng.choice(svc)
    change = rng.choice(
        [
            "把重試改成 decorator",
            "在資料庫前面加了一層 Redis 快取",
            "把 cron 改成 Celery beat",
            "把驗證改成 JWT",
        ]
    )
    return rng.choice([f"請審查 {s} 的 PR #{rng.randint(100, 999)}：{change}。請看錯誤處理與回滾。",
                       f"幫我 code review 這個 PR，{s} {change}，重點是並行與 migration。"]), 4  # fmt: skip


@family("CODE_REVIEW", "en", count=9)
def big_diff_en(rng: random.Random, svc: tuple[str, ...]) -> tuple[str, int]:
    s = rng.choice(svc)
    d = P.diff(rng, f"{s}/engine.py", rng.randint(30, 45))
    return f"Thorough review please, security and concurrency first:\n```diff\n{d}\n```", 5


@family("CODE_REVIEW", "zh")
def sql_review_zh(rng: random.Random, svc: tuple[str, ...]) -> tuple[str, int]:
    q = rng.choice(["SELECT * FROM orders WHERE status = 'open' ORDER BY created_at",
                    "UPDATE users SET plan = 'pro' WHERE email LIKE '%@corp.com'",
                    "DELETE FROM sessions WHERE expires_at < now()"])  # fmt: skip
    return rng.choice(
        [
            f"這個 SQL 效能會不會有問題？ {q}",
            f"這段 SQL 寫對了嗎？\n{q}",
            f"幫我檢查這個 query：{q}",
        ]
    ), 2


# ---------------------------------------------------------------------------- SUMMARY
_EVENTS_EN = (
    "the deploy freeze moves to Friday", "QA needs two more days", "the cert on the gateway expired",
    "we rolled back v2.3", "Redis was upgraded to 7.2", "the DNS TTL was too long", "on-call swapped to Bob",
    "the migration ran 40 minutes", "customers saw login errors for 20 minutes", "the vendor fixed their API",
)  # fmt: skip
_EVENTS_ZH = (
    "凍結期延到週五", "QA 還需要兩天", "閘道的憑證過期", "我們回滾了 v2.3", "Redis 升到 7.2", "DNS TTL 設太長",
    "值班換成小王", "migration 跑了四十分鐘", "使用者登入失敗二十分鐘", "廠商修好了 API",
)  # fmt: skip


@family("SUMMARY", "en")
def summarize_notes_en(rng: random.Random, svc: tuple[str, ...]) -> tuple[str, int]:
    notes = "; ".join(pick(rng, _EVENTS_EN, rng.randint(3, 5)))
    ask = rng.choice(["Summarize this in two sentences:", "tl;dr please:", "Give me the key points:",
                      "Recap this thread for the channel:"])  # fmt: skip
    return f"{ask} {notes}.", 2


@family("SUMMARY", "zh")
def summarize_notes_zh(rng: random.Random, svc: tuple[str, ...]) -> tuple[str, int]:
    notes = "；".join(pick(rng, _EVENTS_ZH, rng.randint(3, 5)))
    ask = rng.choice(
        ["幫我用兩句話總結：", "請摘要重點：", "幫我整理這段討論：", "給我一段話的重點："]
    )
    return f"{ask}{notes}。", 2


@family("SUMMARY", "en")
def postmortem_en(rng: random.Random, svc: tuple[str, ...]) -> tuple[str, int]:
    s = rng.choice(svc)
    return rng.choice([
        (f"Write a post-mortem summary for management: {s} was down 38 minutes, {rng.choice(_EVENTS_EN)}, detected by customers, fixed by a rollback. Action items: alerts, runbook.", 3),
        (f"Turn this into a status page update: {s} degraded since 13:10, {rng.choice(_EVENTS_EN)}, mitigation in progress.", 2),
    ])  # fmt: skip


@family("SUMMARY", "zh")
def postmortem_zh(rng: random.Random, svc: tuple[str, ...]) -> tuple[str, int]:
    s = rng.choice(svc)
    return rng.choice([
        (f"幫我寫一份給主管的事故摘要：{s} 中斷 38 分鐘，{rng.choice(_EVENTS_ZH)}，由客戶回報發現，回滾後恢復。後續：補告警、寫 runbook。", 3),
        (f"請寫成給客服的通報：{s} 從 13:10 開始變慢，{rng.choice(_EVENTS_ZH)}，目前正在處理。", 2),
    ])  # fmt: skip


@family("SUMMARY", "en")
def summarize_logs_en(rng: random.Random, svc: tuple[str, ...]) -> tuple[str, int]:
    s = rng.choice(svc)
    logs = _fence(rng, P.log_excerpt(rng, s, rng.randint(5, 9)))
    ask = rng.choice(["Summarize what happened in these logs for the handoff.", "tl;dr of these logs?",
                      "Write a short summary of this log for the ticket."])  # fmt: skip
    return f"{ask}\n{logs}", 2


@family("SUMMARY", "mixed")
def summarize_alert_mixed(rng: random.Random, svc: tuple[str, ...]) -> tuple[str, int]:
    s, a = rng.choice(svc), rng.choice(ALERTS)
    body = _fence(rng, P.alertmanager(rng, s, a), "json")
    ask = rng.choice(
        [
            "幫我把這個 alert 寫成一段通報給主管",
            "把這個告警整理成 Slack update",
            "幫我摘要這個 alert 給客服",
        ]
    )
    return f"{ask}\n{body}", 3


@family("SUMMARY", "en", count=10)
def weekly_report_en(rng: random.Random, svc: tuple[str, ...]) -> tuple[str, int]:
    s = pick(rng, svc, 3)
    return (f"Summarize last week's incidents for the leadership review in one page: P2s on {s[0]}, {s[1]} and {s[2]}, "
            f"{rng.randint(4, 9)} P3s, MTTR trend, repeat offenders and the top three action items."), 4  # fmt: skip


@family("SUMMARY", "zh", count=10)
def weekly_report_zh(rng: random.Random, svc: tuple[str, ...]) -> tuple[str, int]:
    s = pick(rng, svc, 3)
    return (f"請把上週的事故整理成給管理層的一頁報告：{s[0]}、{s[1]}、{s[2]} 各一個 P2、{rng.randint(4, 9)} 個 P3、"
            "MTTR 趨勢、重複發生的問題，以及前三名改善項目。"), 4  # fmt: skip


@family("SUMMARY", "en")
def release_notes_from_diff_en(rng: random.Random, svc: tuple[str, ...]) -> tuple[str, int]:
    s = rng.choice(svc)
    d = _fence(rng, P.diff(rng, f"{s}/handlers.py", rng.randint(4, 7)), "diff")
    return (
        f"{rng.choice(['Write release notes from this diff:', 'Summarize this change for the changelog:'])}\n{d}",
        2,
    )


@family("SUMMARY", "zh")
def handoff_zh(rng: random.Random, svc: tuple[str, ...]) -> tuple[str, int]:
    s = rng.choice(svc)
    return rng.choice([f"幫我整理交接重點：{s} 還有一個未結事件、{rng.choice(_EVENTS_ZH)}、明天要換憑證。",
                       f"請幫我把今天值班的狀況整理成交接摘要：{rng.choice(_EVENTS_ZH)}，{s} 已恢復。"]), 2  # fmt: skip


# ---------------------------------------------------------------------------- CHAT
@family("CHAT", "en")
def greeting_en(rng: random.Random, svc: tuple[str, ...]) -> tuple[str, int]:
    return rng.choice(["hi", "hello there", "hey!", "good morning", "morning all", "yo", "good evening",
                       "hey, you around?", "hello :)"]), 1  # fmt: skip


@family("CHAT", "zh")
def greeting_zh(rng: random.Random, svc: tuple[str, ...]) -> tuple[str, int]:
    return rng.choice(["早安", "午安", "晚安", "你好", "哈囉", "在嗎", "大家好", "嗨～", "早～"]), 1


@family("CHAT", "en")
def thanks_en(rng: random.Random, svc: tuple[str, ...]) -> tuple[str, int]:
    return rng.choice(["thanks!", "thank you, that worked", "thx", "great, appreciated", "perfect, thanks a lot",
                       "awesome, that fixed it", "cool, thanks"]), 1  # fmt: skip


@family("CHAT", "zh")
def thanks_zh(rng: random.Random, svc: tuple[str, ...]) -> tuple[str, int]:
    return rng.choice(
        ["謝謝", "感謝！解決了", "好的，了解", "太好了，謝啦", "收到，謝謝你", "讚，可以了"]
    ), 1


@family("CHAT", "en")
def smalltalk_en(rng: random.Random, svc: tuple[str, ...]) -> tuple[str, int]:
    return rng.choice(["what's your favourite movie?", "do you ever sleep?", "how are you today?",
                       "tell me something fun", "what music do you like, just curious",
                       "I'm bored, entertain me", "are you a robot?", "long day huh"]), 1  # fmt: skip


@family("CHAT", "zh")
def smalltalk_zh(rng: random.Random, svc: tuple[str, ...]) -> tuple[str, int]:
    return rng.choice(["你喜歡什麼電影？", "你會累嗎？", "今天心情怎麼樣？", "說點有趣的事", "好無聊喔",
                       "你是機器人嗎？", "今天好漫長"]), 1  # fmt: skip


@family("CHAT", "en")
def creative_en(rng: random.Random, svc: tuple[str, ...]) -> tuple[str, int]:
    topic = rng.choice(["on-call", "Kubernetes", "a flaky test", "Friday deploys", "YAML"])
    return rng.choice(
        [
            f"write a haiku about {topic}",
            f"tell me a joke about {topic}",
            f"a limerick about {topic} please",
        ]
    ), 2


@family("CHAT", "mixed")
def chitchat_mixed(rng: random.Random, svc: tuple[str, ...]) -> tuple[str, int]:
    s = rng.choice(svc)
    return rng.choice([f"哈哈 {s} 又來了，Monday classic", "lol 今天 deploy 好順", "好累 but deploy 成功了 🎉",
                       f"{s} 終於穩了，nice", "午餐吃什麼好？any ideas", "周末愉快 everyone"]), 1  # fmt: skip


# ---------------------------------------------------------------------------- TOOL_CALL
@family("TOOL_CALL", "en")
def imperative_en(rng: random.Random, svc: tuple[str, ...]) -> tuple[str, int]:
    s, ns = rng.choice(svc), rng.choice(NAMESPACES)
    return rng.choice([f"restart {s} in {ns}", f"Scale {s} to {rng.randint(2, 9)} replicas", f"roll back {s} please",
                       f"please redeploy {s} in {ns}", f"Delete the stuck pods of {s}", f"pause the rollout of {s}",
                       f"Kill the oldest pod of {s}"]), 2  # fmt: skip


@family("TOOL_CALL", "zh")
def imperative_zh(rng: random.Random, svc: tuple[str, ...]) -> tuple[str, int]:
    s, ns = rng.choice(svc), rng.choice(NAMESPACES)
    return rng.choice([f"幫我重啟 {s}", f"把 {s} 擴容到 {rng.randint(2, 9)} 個", f"請把 {s} 回滾到上一版",
                       f"幫我把 {ns} 的 {s} 重新部署", f"刪掉 {s} 卡住的 pod", f"暫停 {s} 的 rollout"]), 2  # fmt: skip


@family("TOOL_CALL", "mixed")
def imperative_mixed(rng: random.Random, svc: tuple[str, ...]) -> tuple[str, int]:
    s = rng.choice(svc)
    return rng.choice([f"幫我 restart 一下 {s}", f"把 {s} scale 到 {rng.randint(2, 9)} 個", f"請幫我 rollback {s}",
                       f"{s} 幫我 redeploy", f"麻煩把 {s} 的 pod delete 掉"]), 2  # fmt: skip


@family("TOOL_CALL", "en")
def create_resource_en(rng: random.Random, svc: tuple[str, ...]) -> tuple[str, int]:
    res = rng.choice(["namespace", "service account", "secret", "configmap", "PVC"])
    name = rng.choice(["feature-x", "team-blue", "tmp-debug", "canary-2", "load-test"])
    return rng.choice([f"Create a {res} called {name} in the {rng.choice(NAMESPACES)} cluster",
                       f"make a new {res} named {name}", f"Set up a {res} {name} for the load test"]), 2  # fmt: skip


@family("TOOL_CALL", "zh")
def create_resource_zh(rng: random.Random, svc: tuple[str, ...]) -> tuple[str, int]:
    res = rng.choice(["namespace", "service account", "secret", "configmap", "PVC"])
    name = rng.choice(["feature-x", "team-blue", "tmp-debug", "canary-2", "load-test"])
    return rng.choice([f"幫我在 {rng.choice(NAMESPACES)} 建立一個叫 {name} 的 {res}", f"新增一個 {res}，名字叫 {name}",
                       f"請建一個 {res} {name} 給壓測用"]), 2  # fmt: skip


@family("TOOL_CALL", "en")
def silence_en(rng: random.Random, svc: tuple[str, ...]) -> tuple[str, int]:
    a, n = rng.choice(ALERTS), rng.choice(NODES)
    return rng.choice([f"Silence {a} on {n} for two hours", f"mute the {a} alert until tomorrow morning",
                       f"ack the {a} page", f"Snooze {a} for {n} 30 minutes"]), 2  # fmt: skip


@family("TOOL_CALL", "zh")
def silence_zh(rng: random.Random, svc: tuple[str, ...]) -> tuple[str, int]:
    a, n = rng.choice(ALERTS), rng.choice(NODES)
    return rng.choice(
        [f"把 {n} 的 {a} 告警靜音兩小時", f"幫我 ack {a} 這個 page", f"{a} 先靜音到明天早上"]
    ), 2


@family("TOOL_CALL", "en")
def set_image_en(rng: random.Random, svc: tuple[str, ...]) -> tuple[str, int]:
    s, v = rng.choice(svc), f"v{rng.randint(1, 4)}.{rng.randint(0, 9)}.{rng.randint(0, 9)}"
    return rng.choice([f"Set the image of {s} to {v}", f"update {s} to {v} in prod", f"deploy {v} of {s} to staging",
                       f"bump {s} to {v}"]), 2  # fmt: skip


@family("TOOL_CALL", "zh")
def set_image_zh(rng: random.Random, svc: tuple[str, ...]) -> tuple[str, int]:
    s, v = rng.choice(svc), f"v{rng.randint(1, 4)}.{rng.randint(0, 9)}.{rng.randint(0, 9)}"
    return rng.choice(
        [f"幫我把 prod 的 {s} image 更新成 {v}", f"把 {s} 升級到 {v}", f"部署 {s} {v} 到 staging"]
    ), 2


@family("TOOL_CALL", "en")
def multi_step_ops_en(rng: random.Random, svc: tuple[str, ...]) -> tuple[str, int]:
    s1, s2 = pick(rng, svc, 2)
    n = rng.choice(NODES)
    return rng.choice([f"First cordon {n}, then drain it, and restart {s1} once it's empty.",
                       f"Scale {s1} down to 0, run the migration job, then scale it back to 3 and restart {s2}.",
                       f"Pause {s1}'s rollout, roll back {s2}, then resume {s1}."]), 3  # fmt: skip


@family("TOOL_CALL", "zh")
def multi_step_ops_zh(rng: random.Random, svc: tuple[str, ...]) -> tuple[str, int]:
    s1, s2 = pick(rng, svc, 2)
    n = rng.choice(NODES)
    return rng.choice([f"先把 {n} cordon，再 drain，然後重啟 {s1}。", f"先把 {s1} 縮到 0，跑完 migration 後再擴回 3 個，接著重啟 {s2}。",
                       f"請先暫停 {s1} 的 rollout，再把 {s2} 回滾，最後恢復 {s1}。"]), 3  # fmt: skip


@family("TOOL_CALL", "en")
def incident_ops_en(rng: random.Random, svc: tuple[str, ...]) -> tuple[str, int]:
    s = rng.choice(svc)
    return rng.choice([f"Open a P2 incident for {s} and page the owning team", f"create a Jira ticket for the {s} timeouts",
                       f"page the database on-call about {s}", f"post the {s} status to #incidents"]), 2  # fmt: skip


def _tools(rng: random.Random) -> dict[str, Any]:
    name = rng.choice(["restart_deployment", "scale_deployment", "get_pods", "silence_alert"])
    return {"tools": [{"name": name, "description": name.replace("_", " "),
                       "parameters": {"type": "object", "properties": {"name": {"type": "string"}}}}]}  # fmt: skip


@family("TOOL_CALL", "en", extra=_tools)
def with_tools_en(rng: random.Random, svc: tuple[str, ...]) -> tuple[str, int]:
    s = rng.choice(svc)
    return rng.choice(
        [f"{s} looks stuck", f"what's the state of {s}?", f"handle {s}", f"{s} 5xx again"]
    ), 2


@family("TOOL_CALL", "zh", extra=_tools)
def with_tools_zh(rng: random.Random, svc: tuple[str, ...]) -> tuple[str, int]:
    s = rng.choice(svc)
    return rng.choice([f"{s} 好像卡住了", f"{s} 現在狀況如何？", f"處理一下 {s}"]), 2


@family("TOOL_CALL", "en")
def followup_en(rng: random.Random, svc: tuple[str, ...]) -> tuple[str, int]:
    return rng.choice(["scale it to 5", "go ahead and restart it", "do it", "yes, roll it back", "ok, drain it now",
                       "restart them all", "kill it"]), 1  # fmt: skip


@family("TOOL_CALL", "zh")
def followup_zh(rng: random.Random, svc: tuple[str, ...]) -> tuple[str, int]:
    return rng.choice(
        ["好，幫我重啟", "那就回滾吧", "直接擴到 5 個", "執行吧", "幫我刪掉", "好，砍掉它"]
    ), 1


# ---------------------------------------------------------------------------- assembling
def _handwritten(name: str = "handwritten.tsv", prefix: str = "h") -> list[dict[str, Any]]:
    rows = []
    with (HERE / name).open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip() or line.startswith("#"):
                continue
            intent, complexity, lang, text = line.rstrip("\n").split("\t", 3)
            rows.append(_hand_row(f"{prefix}{number:04d}", text.replace("\\n", "\n"), intent,
                                  int(complexity), lang))  # fmt: skip
    return rows


def _hand_row(row_id: str, text: str, intent: str, complexity: int, lang: str) -> dict[str, Any]:
    return {"id": row_id, "text": text, "intent": intent, "complexity": complexity,
            "lang": lang, "source": "hand"}  # fmt: skip


def _assign(
    keys: list[tuple[str, str]],
    rng: random.Random,
    shares: tuple[tuple[str, float], ...] = (("test", 0.2), ("dev", 0.2)),
) -> dict[str, str]:
    """Split group keys (intent, group) within each intent by a seeded shuffle: each split of
    ``shares`` takes its fraction (at least one group) in turn, train the rest."""
    out: dict[str, str] = {}
    for intent in sorted({k[0] for k in keys}):
        groups = sorted(k[1] for k in keys if k[0] == intent)
        rng.shuffle(groups)
        bounds, end = [], 0
        for split, fraction in shares:
            end += max(1, round(len(groups) * fraction))
            bounds.append((end, split))
        for i, group in enumerate(groups):
            out[group] = next((split for bound, split in bounds if i < bound), "train")
    return out


# Hand-written JSONL files fitted on (split 80/20 train/dev), with their row-id prefixes.
WRITTEN_FIT = (
    ("written_fit.jsonl", "w"),  # 2026-12-03: kinds the first test split showed missing, and more
    ("written_read.jsonl", "r"),  # the second test split, read once (2026-12-03)
    ("written_boundary.jsonl", "z"),  # complexity boundaries and phrasings the second one missed
    ("written_round3.jsonl", "y"),  # the third test split, read once (2026-12-03)
    ("written_round4.jsonl", "v"),  # the fourth, by the boundary rules, read once (2026-12-03)
    ("written_round5.jsonl", "u"),  # the fifth, read once (2026-12-03)
    ("written_round6_fit.jsonl", "s"),  # 2026-12-03: the guide's 2/3 and 3/4 boundaries, by a
    # writer who saw only the guide
    ("written_round6.jsonl", "q"),  # the sixth test split, read once (2026-12-03)
    ("written_round7.jsonl", "p"),  # the seventh test split (450), read once (2026-12-03)
    ("written_round8.jsonl", "o"),  # the eighth test split (500), read once (2026-12-03)
    ("written_round9.jsonl", "n"),  # the ninth test split (500), read once (2026-12-03)
    ("written_round10.jsonl", "m"),  # the tenth test split (500), read once (2026-12-03)
)


def _written(name: str, prefix: str) -> list[dict[str, Any]]:
    """Hand-written requests kept as JSONL (``intent``, ``complexity``, ``lang``, ``text``): each
    line is its own group."""
    rows = []
    with (HERE / name).open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            if line.strip():
                row = json.loads(line)
                rows.append(_hand_row(f"{prefix}{number:04d}", row["text"], row["intent"],
                                      row["complexity"], row["lang"]))  # fmt: skip
    return rows


def _fitting(split: str) -> str:
    """Where a request of the first corpus goes now: its first test split was read (2026-12-02)
    and is training data since; the test split is ``written_test.jsonl`` alone."""
    return "train" if split == "test" else split


def build() -> dict[str, list[dict[str, Any]]]:
    """The corpus, split: ``{"train": [...], "dev": [...], "test": [...]}``."""

    rng = random.Random(SEED)
    hand = _handwritten()
    split_of = _assign([(f.intent, f"template:{f.name}") for f in FAMILIES], rng)
    split_of.update(_assign([(r["intent"], r["id"]) for r in hand], rng))
    out: dict[str, list[dict[str, Any]]] = {s: [] for s in SPLITS}
    for row in hand:
        out[_fitting(split_of[row["id"]])].append(row)
    # Written after the first split was drawn (after reading dev's misses): train only.
    out["train"].extend(_handwritten("handwritten_train.tsv", "t"))
    for fam in FAMILIES:
        source = f"template:{fam.name}"
        split = _fitting(split_of[source])
        pool = TEST_SERVICES if split_of[source] == "test" else FIT_SERVICES
        frng = random.Random(f"{SEED}:{fam.name}")
        seen: set[str] = set()
        tries = 0
        while (
            sum(1 for r in out[split] if r["source"] == source) < fam.count
            and tries < fam.count * 20
        ):
            tries += 1
            text, complexity = fam.make(frng, pool)
            if text in seen:
                continue
            seen.add(text)
            row = {"id": f"{fam.name}-{len(seen):02d}", "text": text, "intent": fam.intent,
                   "complexity": complexity, "lang": fam.lang, "source": source}  # fmt: skip
            if fam.extra is not None:
                row.update(fam.extra(frng))
            out[split].append(row)
    for name, prefix in WRITTEN_FIT:
        fit = _written(name, prefix)
        keys = [(r["intent"], r["id"]) for r in fit]
        dev_of = _assign(keys, random.Random(f"{SEED}:{name}"), (("dev", 0.2),))
        for row in fit:
            out[dev_of[row["id"]]].append(row)
    out["test"] = _written("written_test.jsonl", "x")
    # A short request people often type ("早安", "好 執行") was written for both sides; the test
    # split keeps it, and fitting never sees a text the model is judged on.
    judged = {row["text"] for row in out["test"]}
    for split in ("train", "dev"):
        out[split] = [row for row in out[split] if row["text"] not in judged]
    for rows in out.values():
        for row in rows:
            row["tier"] = tier_for(
                row["intent"], row["complexity"], priority=row.get("priority", "normal"),
                has_tools=bool(row.get("tools")),
            )  # fmt: skip
    return out


def dump(rows: list[dict[str, Any]]) -> bytes:
    """The JSONL bytes of ``rows``: one object a line, keys sorted, UTF-8."""
    return "".join(json.dumps(r, ensure_ascii=False, sort_keys=True) + "\n" for r in rows).encode()


def main(argv: list[str] | None = None) -> int:
    """Write the three splits; refuse to move a frozen test split unless ``--refreeze``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--refreeze", action="store_true", help="accept a new test split and record its hash"
    )
    args = parser.parse_args(argv)
    splits = build()
    frozen = HERE / "test.sha256"
    digest = hashlib.sha256(dump(splits["test"])).hexdigest()
    if frozen.exists() and frozen.read_text().split()[0] != digest and not args.refreeze:
        print(
            "the test split would change; it is frozen (use --refreeze for a new test set)",
            file=sys.stderr,
        )
        return 1
    for name, rows in splits.items():
        (HERE / f"{name}.jsonl").write_bytes(dump(rows))
        print(f"{name}: {len(rows)} requests")
    frozen.write_text(f"{digest}  test.jsonl\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
