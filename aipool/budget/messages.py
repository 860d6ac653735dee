"""Alert wording: ADR-006's zh-TW annotations by default, English with ``AIPOOL_ALERT_LANG=en``."""

from __future__ import annotations

from decimal import Decimal

from aipool.budget.rules import Condition
from aipool.providers.catalog import CATALOG
from aipool.settings import settings


def alert_lang(lang: str | None = None) -> str:
    """``"en"`` or ``"zh-TW"`` (the default), from ``lang`` or ``AIPOOL_ALERT_LANG``."""
    if not lang:
        return settings().alerts.lang
    return "en" if lang.lower().startswith("en") else "zh-TW"


def display_name(provider: str) -> str:
    """How people call the provider in messages."""
    facts = CATALOG.get(provider)
    return facts.display_name if facts else provider


def base_url_variable(provider: str) -> str:
    """The setting that holds the provider's base URL (``OLLAMA_BASE_URL``...)."""
    facts = CATALOG.get(provider)
    return facts.base_url_variable if facts else f"{provider.upper()}_BASE_URL"


def _money(value: object) -> str:
    """Dollars as a reader expects them: whole, or in cents, and below a cent (a small budget, a
    day of cheap calls) its first two significant digits rather than "0.00"."""
    d = Decimal(str(value))
    if d == d.to_integral_value():
        return f"{d:.0f}"
    if abs(d) >= Decimal("0.01"):
        return f"{d:.2f}"
    return f"{d.normalize():.2g}"


_ZH_QUOTA = {
    "daily_tokens": ("每日用量", "今日 {p} 已使用 {used:,} tokens（每日上限 {limit:,}）"),
    "daily_requests": ("每日請求數", "今日 {p} 已呼叫 {used:,} 次（每日上限 {limit:,}）"),
    "monthly_tokens": ("每月用量", "本月 {p} 已使用 {used:,} tokens（每月上限 {limit:,}）"),
}
_EN_QUOTA = {
    "daily_tokens": ("daily usage", "{p} used {used:,} tokens today (daily limit {limit:,})"),
    "daily_requests": (
        "daily requests",
        "{p} was called {used:,} times today (daily limit {limit:,})",
    ),
    "monthly_tokens": (
        "monthly usage",
        "{p} used {used:,} tokens this month (monthly limit {limit:,})",
    ),
}


_ZH_SHARE = {
    "service_daily_tokens": ("每日 tokens ", "tokens"),
    "service_daily_requests": ("每日請求數", "次"),
}
_EN_SHARE = {
    "service_daily_tokens": ("daily tokens", "tokens"),
    "service_daily_requests": ("daily requests", "requests"),
}


def _zh(c: Condition) -> tuple[str, str]:
    p, f = display_name(c.provider), c.facts
    if c.rule in _ZH_QUOTA:
        what, detail = _ZH_QUOTA[c.rule]
        summary = f"{p} API {what}已達 {f['percent']}%"
        if f["percent"] == 90:
            summary += "，即將觸發限流"
        return summary, detail.format(p=p, used=f["used"], limit=f["limit"])
    if c.rule == "monthly_cost":
        return (
            f"AI 月度成本已達 ${_money(f['line'])} (預算 {f['percent']}%)",
            f"本月累計成本 ${_money(f['cost'])}，月預算 ${_money(f['budget'])}"
            + (f"（預算的 {f['reached']}%）" if f.get("reached") is not None else ""),
        )
    if c.rule in _ZH_SHARE:
        what, unit = _ZH_SHARE[c.rule]
        summary = f"服務 {f['name']} 的 {p} {what}份額已達 {f['percent']}%"
        return summary, (
            f"今日服務 {c.service} 在 {p} 已使用 {f['used']:,} {unit}（份額 {f['limit']:,}）；"
            f"份額用完後其請求改走下一個供應商"
        )
    if c.rule == "service_budget":
        return (
            f"服務 {f['name']} 本月成本已達 ${_money(f['line'])} (預算 {f['percent']}%)",
            f"服務 {c.service} 本月付費呼叫成本 ${_money(f['cost'])}，月預算 ${_money(f['budget'])}"
            + (f"（預算的 {f['reached']}%）" if f.get("reached") is not None else "")
            + ("；用完後其雲端請求改走本地模型" if c.threshold == "100%" else ""),
        )
    if c.rule == "breaker_open":
        detail = f"{p} 熔斷器開啟，暫停呼叫 {p}，流量改走備援"
        if f.get("failures"):
            detail = f"{p} 連續失敗 {f['failures']} 次，熔斷器開啟，暫停呼叫，流量改走備援"
        if c.provider == "ollama":
            # ADR-006's own words for its Ollama alert: the local model is off, cloud carries on.
            return "Ollama 服務可能已離線", detail + "，已啟動雲端備援"
        return f"{p} 熔斷器已開啟", detail
    if c.rule == "model_missing":
        return f"{p} 找不到模型 {f['model']}", (
            f"{p} 回覆找不到路由表指定的模型 {f['model']}（404）：此路由的每個請求都會同樣失敗並改走"
            f"下一個供應商，且計入 {p} 的熔斷器；請拉取該模型或修正路由表"
        )
    if c.rule == "not_found":
        host, variable = f["host"] or "（未知主機）", base_url_variable(c.provider)
        return f"{p} 的網址不存在：{host} 不提供 {p} API", (
            f"{p} 在 {host} 回覆 404（未指明模型）或 405：{variable} 設定的網址並未提供 {p} API"
            f"（路徑多了或少了一段、代理伺服器沒有轉送該路徑，或指向了別的伺服器）。每個送往 {p} "
            f"的請求都會同樣失敗並改走下一個供應商，且計入 {p} 的熔斷器；請檢查 {variable}"
        )
    return f"{c.rule} {c.provider} {c.threshold}", ""


def _en(c: Condition) -> tuple[str, str]:
    p, f = display_name(c.provider), c.facts
    if c.rule in _EN_QUOTA:
        what, detail = _EN_QUOTA[c.rule]
        summary = f"{p} API {what} reached {f['percent']}%"
        if f["percent"] == 90:
            summary += ", throttling imminent"
        return summary, detail.format(p=p, used=f["used"], limit=f["limit"])
    if c.rule == "monthly_cost":
        return (
            f"AI monthly cost reached ${_money(f['line'])} ({f['percent']}% of budget)",
            f"Cost this month ${_money(f['cost'])}, monthly budget ${_money(f['budget'])}"
            + (f" ({f['reached']}% of it)" if f.get("reached") is not None else ""),
        )
    if c.rule in _EN_SHARE:
        what, unit = _EN_SHARE[c.rule]
        summary = f"Service {f['name']}'s share of {p} {what} reached {f['percent']}%"
        return summary, (
            f"{c.service} used {f['used']:,} {unit} of {p} today (its share {f['limit']:,}); "
            "past its share its requests go on to the next provider"
        )
    if c.rule == "service_budget":
        return (
            f"Service {f['name']}'s monthly cost reached ${_money(f['line'])} "
            f"({f['percent']}% of its budget)",
            f"Paid calls of {c.service} cost ${_money(f['cost'])} this month, its monthly budget "
            f"${_money(f['budget'])}"
            + (f" ({f['reached']}% of it)" if f.get("reached") is not None else "")
            + (
                "; its cloud hops are skipped until the month ends" if c.threshold == "100%" else ""
            ),
        )
    if c.rule == "breaker_open":
        detail = f"Calls to {p} are paused; traffic goes to the fallback providers"
        if f.get("failures"):
            detail = f"{p} failed {f['failures']} times in a row; " + detail[0].lower() + detail[1:]
        if c.provider == "ollama":
            return "Ollama may be offline", detail + " (cloud fallback active)"
        return f"{p} circuit breaker opened", detail
    if c.rule == "model_missing":
        return f"{p} does not have model {f['model']}", (
            f"{p} answered 404 model not found for {f['model']}, the model the route table "
            f"names: every request of that route fails the same way, falls back, and counts "
            f"against {p}'s breaker; pull the model or fix the route table"
        )
    if c.rule == "not_found":
        host, variable = f["host"] or "an unknown host", base_url_variable(c.provider)
        return f"{p}'s URL not found: {host} does not serve the {p} API", (
            f"{p} at {host} answered 404 naming no model, or 405: the URL {variable} sets does "
            f"not serve the {p} API (a path too many or missing, a proxy without the pool's "
            f"path, another server). Every request to {p} fails the same way, falls back, and "
            f"counts against {p}'s breaker; check {variable}"
        )
    return f"{c.rule} {c.provider} {c.threshold}", ""


def describe(condition: Condition, state: str, lang: str | None = None) -> tuple[str, str]:
    """``(summary, description)`` of ``condition`` entering ``state`` (firing or resolved)."""
    zh = alert_lang(lang) == "zh-TW"
    summary, description = _zh(condition) if zh else _en(condition)
    if state == "resolved":
        summary = ("已恢復：" if zh else "Resolved: ") + summary
    return summary, description


def describe_forgotten(
    fired_summary: str, reopened: bool, lang: str | None = None
) -> tuple[str, str]:
    """``(summary, description)`` of a breaker alert resolved without its breaker's closing: the
    breaker opened again since (``reopened``: a new outage, alerted on its own), or it no longer
    holds this outage at all (Redis restarted empty, or was flushed)."""
    if alert_lang(lang) == "zh-TW":
        why = (
            "熔斷器此後已再次開啟（新的故障另行告警），此次故障已結束；若未見恢復紀錄，表示 Redis 重啟或清空而遺失了熔斷器狀態"
            if reopened
            else "熔斷器的狀態已遺失（Redis 重啟或清空），無法再回報此次故障的結束，此告警在此結束；若供應商仍失敗，熔斷器會再次開啟並另行告警"
        )
        return f"已恢復：{fired_summary}", why
    why = (
        "The breaker has opened again since (a new outage, alerted on its own), so this one is "
        "over; if no recovery was logged, the pool lost the breaker's state (Redis restarted "
        "empty or was flushed)"
        if reopened
        else "The pool lost this breaker's state (Redis restarted empty or was flushed): it cannot "
        "report this outage's end, so the alert ends here; if the provider still fails, its "
        "breaker opens again and pages anew"
    )
    return f"Resolved: {fired_summary}", why


def describe_period_end(
    fired_summary: str, rule: str, period: str, lang: str | None = None
) -> tuple[str, str]:
    """``(summary, description)`` of a calendar alert resolved because its period ended.

    ``fired_summary`` is what the firing message said (the journal keeps it): the resolution
    names the same alert, and says why it ended.
    """
    zh = alert_lang(lang) == "zh-TW"
    daily = rule.startswith("daily")
    if zh:
        unit = "日" if daily else "月"
        return (
            f"已恢復：{fired_summary}",
            f"{period} 已結束，此告警隨新的一{unit}重新計算",
        )
    unit = "day" if daily else "month"
    return (
        f"Resolved: {fired_summary}",
        f"The {unit} {period} ended; the alert starts over with the new {unit}",
    )
