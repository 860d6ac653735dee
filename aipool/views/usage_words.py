"""The words for the ledger's counts, shared by ``aipool report``, ``aipool status`` and the demo.

The words for each outcome, skip and failure code are the contract vocabulary's
(:mod:`aipool.contract.vocabulary`); this module holds only the headings around them.

One count has one name everywhere: **calls** (the provider was called), **failed** (a call that
failed, by reason), **skipped** (the hop never called the provider: breaker, quota, deadline),
**answered** (requests this provider, the static answer or the refusal gave the final answer
to). English or zh-TW: the commands' ``--lang`` (English by default), the alerts'
``AIPOOL_ALERT_LANG``.
"""

from __future__ import annotations

from collections.abc import Sequence

from aipool.contract.vocabulary import failure_word, outcome_word
from aipool.ledger.summary import ProviderSummary

LANGS = ("zh-TW", "en")

WORDS: dict[str, dict[str, str]] = {
    "en": {
        "provider": "Provider",
        "calls": "Calls",
        "failed": "Failed (reason)",
        "skipped": "Skipped (breaker/quota/deadline)",
        "answered": "Answered",
        "cached": "Cached (saved $)",
        "tokens": "Tokens",
        "cost": "Cost $",
        "p50": "p50 ms",
        "p95": "p95 ms",
        "breaker": "Breaker",
        "queue": "Queue",
        "waiting": "Waiting",
        "oldest": "Oldest waited",
        "queues_title": "Messages waiting per queue",
        "consumers": "Workers",
        "unserved": "No running worker consumes {lanes}, where messages wait: start the pool's "
        "workers with `aipool worker`, or add these lanes to a worker's -Q",
        "today": "today",
        "month": "month to date",
        "none": "none",
        "redis": "Redis",
        "ledger": "Ledger",
        "breakers_title": "Breakers and quotas (shared by the whole pool)",
        "quota_rpm": "quota: rpm",
        "quota_daily_requests": "quota: daily requests",
        "quota_daily_tokens": "quota: daily tokens",
        "quota_monthly_tokens": "quota: monthly tokens",
        "unlimited": "unlimited",
        "no_ledger": "no ledger yet: nothing recorded today",
        "ledger_unknown": "ledger unreachable: today's usage, cost and the month's budget are "
        "unknown (not zero)",
        "ledger_unreachable": "cannot read the ledger at {where}: {why}; what Redis holds "
        "(breakers, quotas, queues) is current, the usage and budget are not shown",
        "budget": "Budget {month}: ${cost} of ${budget} ({percent}%)",
        "pending": "{n} usage record(s) wait in Redis to be drained into the ledger "
        "(beat's aipool.drain_ledger runs every 5 s); they are not counted above.",
        "pending_unknown": "Redis did not answer: usage records still waiting there to be "
        "drained into the ledger could not be counted, and the figures above may miss them.",
        "replication_master": "Replication: master {address}",
        "replication_sentinel": " (Sentinel, {name})",
        "replica": "  replica {address} {state}, acknowledged {lag} s ago, {behind} bytes behind",
        "replication_none": "  no replica: a failover would have nothing to promote",
    },
    "zh-TW": {
        "provider": "供應商",
        "calls": "呼叫",
        "failed": "失敗（原因）",
        "skipped": "略過（斷路器/配額/期限）",
        "answered": "回答",
        "cached": "快取（節省 $）",
        "tokens": "Tokens",
        "cost": "成本 $",
        "p50": "p50 ms",
        "p95": "p95 ms",
        "breaker": "斷路器",
        "queue": "佇列",
        "waiting": "等待中",
        "oldest": "最久等待",
        "queues_title": "各佇列等待中的訊息",
        "consumers": "Worker 數",
        "unserved": "沒有執行中的 worker 取用 {lanes}，但其中有訊息在等待：以 `aipool worker` "
        "啟動 pool 的 worker，或把這些 lane 加入某個 worker 的 -Q",
        "today": "今日",
        "month": "本月累計",
        "none": "無",
        "redis": "Redis",
        "ledger": "帳本",
        "breakers_title": "斷路器與配額（整個 pool 共用）",
        "quota_rpm": "配額：每分鐘",
        "quota_daily_requests": "配額：每日請求",
        "quota_daily_tokens": "配額：每日 tokens",
        "quota_monthly_tokens": "配額：每月 tokens",
        "unlimited": "不限",
        "no_ledger": "尚無帳本：今日沒有紀錄",
        "ledger_unknown": "無法連線帳本：今日用量、成本與本月預算未知（不是零）",
        "ledger_unreachable": "無法讀取帳本 {where}：{why}；Redis 中的斷路器、配額與佇列為目前狀態，"
        "用量與預算未顯示",
        "budget": "{month} 預算：已用 ${cost}，月預算 ${budget}（{percent}%）",
        "pending": "Redis 中仍有 {n} 筆用量紀錄等待寫入帳本（beat 的 aipool.drain_ledger "
        "每 5 秒執行一次）；上表未計入。",
        "pending_unknown": "Redis 沒有回應：無法清點仍在 Redis 中等待寫入帳本的用量紀錄，"
        "上表可能未計入部分用量。",
        "replication_master": "複寫：主節點 {address}",
        "replication_sentinel": "（Sentinel，{name}）",
        "replica": "  副本 {address} {state}，{lag} 秒前確認，落後 {behind} 位元組",
        "replication_none": "  沒有副本：故障轉移時沒有節點可升級",
    },
}

#: The summary columns, in order, as keys of :data:`WORDS`.
SUMMARY_COLUMNS = (
    "provider",
    "calls",
    "failed",
    "skipped",
    "answered",
    "cached",
    "tokens",
    "cost",
    "p50",
    "p95",
)


def words(lang: str) -> dict[str, str]:
    """The vocabulary of ``lang`` (one of :data:`LANGS`)."""
    return WORDS["en" if lang == "en" else "zh-TW"]


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.0f}"


def failed_cell(s: ProviderSummary, lang: str = "en") -> str:
    """``3 (unreachable 2, timeout 1)``, or ``0``: each failure code in its word."""
    if not s.failures:
        return "0"
    reasons = ", ".join(
        f"{failure_word(reason, lang)} {n}" for reason, n in sorted(s.failures.items())
    )
    return f"{s.failed} ({reasons})"


def skipped_cell(s: ProviderSummary, lang: str) -> str:
    """``breaker 4, quota 2``, or ``0``: each skip's outcome in its word."""
    parts = [f"{outcome_word(name, lang)} {n}" for name, n in sorted(s.skipped.items()) if n]
    return ", ".join(parts) or "0"


def cached_cell(s: ProviderSummary) -> str:
    """``99 ($0.012345)``: answers the response cache gave, and what they saved; or ``0``."""
    return f"{s.cached:,} (${s.saved_usd:.6f})" if s.cached else "0"


def summary_cells(s: ProviderSummary, lang: str) -> list[str]:
    """One provider's cells, in :data:`SUMMARY_COLUMNS` order."""
    return [
        s.provider,
        f"{s.calls:,}",
        failed_cell(s, lang),
        skipped_cell(s, lang),
        f"{s.answered:,}",
        cached_cell(s),
        f"{s.tokens:,}",
        f"{s.cost_usd:.6f}",
        _ms(s.p50_ms),
        _ms(s.p95_ms),
    ]


def summary_headers(lang: str) -> list[str]:
    w = words(lang)
    return [w[c] for c in SUMMARY_COLUMNS]


def markdown_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A GitHub-flavoured Markdown table (pipes in cells escaped)."""

    def line(cells: Sequence[str]) -> str:
        return "| " + " | ".join(str(c).replace("|", "\\|") for c in cells) + " |"

    out = [line(headers), "|" + "|".join("---" for _ in headers) + "|"]
    out.extend(line(r) for r in rows)
    return "\n".join(out)
