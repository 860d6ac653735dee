"""Alert wording: ADR-006's zh-TW annotations by default, English with ``AIPOOL_ALERT_LANG=en``."""

from __future__ import annotations

import os
from decimal import Decimal

from aipool.budget.rules import Condition

_NAMES = {"ollama": "Ollama", "gemini": "Gemini", "claude": "Claude", "nemotron": "Nemotron"}


def alert_lang(lang: str | None = None) -> str:
    """``"en"`` or ``"zh-TW"`` (the default), from ``lang`` or ``AIPOOL_ALERT_LANG``."""
    value = (lang or os.environ.get("AIPOOL_ALERT_LANG") or "zh-TW").lower()
    return "en" if value.startswith("en") else "zh-TW"


def display_name(provider: str) -> str:
    """How people call the provider in messages."""
    return _NAMES.get(provider, provider)


def _money(value: object) -> str:
    d = Decimal(str(value))
    return f"{d:.0f}" if d == d.to_integral_value() else f"{d:.2f}"


def _zh(c: Condition) -> tuple[str, str]:
    p, f = display_name(c.provider), c.facts
    if c.rule == "daily_tokens":
        summary = f"{p} API 每日用量已達 {f['percent']}%"
        if f["percent"] == 90:
            summary += "，即將觸發限流"
        return summary, f"今日 {p} 已使用 {f['used']:,} tokens（每日上限 {f['limit']:,}）"
    if c.rule == "monthly_cost":
        return (
            f"AI 月度成本已達 ${_money(f['line'])} (預算 {f['percent']}%)",
            f"本月累計成本 ${Decimal(str(f['cost'])):.2f}，月預算 ${_money(f['budget'])}",
        )
    if c.rule == "ollama_failures":
        return (
            "Ollama 服務可能已離線",
            f"過去 {f['minutes']} 分鐘 Ollama 請求失敗超過 {f['limit']} 次"
            f"（{f['failures']} 次），已啟動雲端備援",
        )
    if c.rule == "breaker_open":
        detail = f"{p} 熔斷器開啟，暫停呼叫 {p}，流量改走備援"
        if f.get("failures"):
            detail = f"{p} 連續失敗 {f['failures']} 次，熔斷器開啟，暫停呼叫，流量改走備援"
        return f"{p} 熔斷器已開啟", detail
    return f"{c.rule} {c.provider} {c.threshold}", ""


def _en(c: Condition) -> tuple[str, str]:
    p, f = display_name(c.provider), c.facts
    if c.rule == "daily_tokens":
        summary = f"{p} API daily usage reached {f['percent']}%"
        if f["percent"] == 90:
            summary += ", throttling imminent"
        return summary, f"{p} used {f['used']:,} tokens today (daily limit {f['limit']:,})"
    if c.rule == "monthly_cost":
        return (
            f"AI monthly cost reached ${_money(f['line'])} ({f['percent']}% of budget)",
            f"Cost this month ${Decimal(str(f['cost'])):.2f}, "
            f"monthly budget ${_money(f['budget'])}",
        )
    if c.rule == "ollama_failures":
        return (
            "Ollama may be offline",
            f"More than {f['limit']} Ollama requests failed in the last {f['minutes']} minutes "
            f"({f['failures']}); cloud fallback active",
        )
    if c.rule == "breaker_open":
        detail = f"Calls to {p} are paused; traffic goes to the fallback providers"
        if f.get("failures"):
            detail = f"{p} failed {f['failures']} times in a row; " + detail[0].lower() + detail[1:]
        return f"{p} circuit breaker opened", detail
    return f"{c.rule} {c.provider} {c.threshold}", ""


def describe(condition: Condition, state: str, lang: str | None = None) -> tuple[str, str]:
    """``(summary, description)`` of ``condition`` entering ``state`` (firing or resolved)."""
    zh = alert_lang(lang) == "zh-TW"
    summary, description = _zh(condition) if zh else _en(condition)
    if state == "resolved":
        summary = ("已恢復：" if zh else "Resolved: ") + summary
    return summary, description
