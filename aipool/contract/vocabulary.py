"""The pool's one vocabulary: every attempt outcome, every way a call fails and every result error
code, each with its meaning and the word a person reads for it, in English and zh-TW.

Results, the ledger, the metrics, the JSON Schema (its ``enum``\\ s), the hop runner, the worker's
edge and every view an operator reads (``aipool status``, ``aipool report``, the daily report)
use these names; ``Outcome``, ``FailureCode`` and ``ErrorCode`` are ``Literal`` types, so mypy
refuses a name that is not here wherever one is written. A new name is added here, with its
meaning and its words, or nowhere: a name without its words fails at import.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, get_args

#: What became of one attempt at one hop (``Attempt.outcome``, ``ai_usage_logs.outcome``, the
#: ``outcome`` label of ``aipool_requests``).
Outcome = Literal[
    "ok",
    "error",
    "abandoned",
    "fallback",
    "refused",
    "circuit_open",
    "quota_exceeded",
    "deadline",
    "context_too_long",
    "queue_wait",
    "budget_exhausted",
    "service_budget_exhausted",
    "budget_saving",
    "guard_unavailable",
    "replicas_behind",
    "rate_limited",
    "skipped",
    "cached",
]


@dataclass(frozen=True)
class Term:
    """One name of the vocabulary: what it means (the schema and docs say it), and the word a
    person reads for it in each language of the views (``en`` and ``zh-TW``)."""

    meaning: str
    en: str
    zh: str

    def word(self, lang: str) -> str:
        """The word in ``lang``: English for ``en``, Traditional Chinese otherwise."""
        return self.en if lang == "en" else self.zh


#: Every outcome, with its meaning and its words. A view that shows an outcome reads its word
#: here (:func:`word_for`): an outcome added to :data:`Outcome` without its entry fails at import.
OUTCOME_TERMS: dict[Outcome, Term] = {
    "ok": Term("the provider answered", "answered", "已回答"),
    "error": Term(
        "the provider was called and failed; the attempt's error names how", "failed", "失敗"
    ),
    "abandoned": Term(
        "the call's worker stopped before the call ended; billed at its estimate",
        "abandoned",
        "中斷",
    ),
    "fallback": Term(
        "the chain's static answer: the last hop of a general chain", "static answer", "靜態回答"
    ),
    "refused": Term("the tool chain's refusal: the last hop of a tool chain", "refusal", "拒絕"),
    "circuit_open": Term("skipped: the provider's breaker is open", "breaker", "斷路器"),
    "quota_exceeded": Term(
        "skipped: the provider's daily tokens or requests, or its minute, are spent",
        "quota",
        "配額",
    ),
    "deadline": Term(
        "skipped: too little of the request's deadline is left for this provider, or the "
        "request's message expired (its producer's expires)",
        "deadline",
        "期限",
    ),
    "context_too_long": Term(
        "skipped: the prompt does not fit the model's context window", "context", "超出上下文"
    ),
    "queue_wait": Term(
        "skipped: the provider's lane holds requests that have waited as long as the "
        "request's deadline leaves (aipool.lanes)",
        "queue wait",
        "佇列等待",
    ),
    "budget_exhausted": Term(
        "skipped: the pool's cap on this month's paid spend is reached", "budget", "預算"
    ),
    "service_budget_exhausted": Term(
        "skipped: the request's service has used its budget or its share",
        "service budget",
        "服務預算",
    ),
    "budget_saving": Term(
        "skipped: paid quota is kept for higher-priority work", "saving", "節省配額"
    ),
    "guard_unavailable": Term(
        "skipped: Redis did not answer, so no breaker or quota could be asked",
        "guards unreachable",
        "防護無法讀取",
    ),
    "replicas_behind": Term(
        "skipped: no replica acknowledged the call's record in time and the pool requires one "
        "(AIPOOL_REDIS_REPLICA_ACK_REQUIRED): a failover could have lost it, so no call was made",
        "replicas behind",
        "副本落後",
    ),
    "rate_limited": Term(
        "skipped: the provider asked the pool to wait (a rate limit's retry delay), and the "
        "pause it asked for has not ended",
        "rate-limit pause",
        "限流暫停",
    ),
    "skipped": Term("skipped for a reason older records did not name", "other", "其他"),
    "cached": Term(
        "answered from the response cache: the same question's earlier answer, no provider "
        "called, $0 (aipool.cache)",
        "cached",
        "快取回答",
    ),
}

#: Each outcome's meaning (the JSON Schema's descriptions).
OUTCOME_MEANINGS: dict[Outcome, str] = {name: t.meaning for name, t in OUTCOME_TERMS.items()}

#: Attempts that reached the provider: what its request quota counts and its bill holds.
CALLED_OUTCOMES: tuple[Outcome, ...] = ("ok", "error", "abandoned")
#: The chain's terminal hop: it answers, it calls nobody.
TERMINAL_OUTCOMES: tuple[Outcome, ...] = ("fallback", "refused")
#: Answers the response cache gave: no call, no charge; the ledger keeps what each saved.
CACHED_OUTCOMES: tuple[Outcome, ...] = ("cached",)
#: Hops passed over without a call: reports count each under its outcome's word.
SKIP_OUTCOMES: tuple[Outcome, ...] = tuple(
    name
    for name in OUTCOME_TERMS
    if name not in (*CALLED_OUTCOMES, *TERMINAL_OUTCOMES, *CACHED_OUTCOMES)
)

#: How a call to a provider failed (``Attempt.code``, the reason ``aipool report`` counts a
#: failed call under, the ``code`` label of ``ai_requests_failed_total``); each is the ``code``
#: of one class of :mod:`aipool.errors`.
FailureCode = Literal[
    "timeout",
    "deadline",
    "time_limit",
    "unreachable",
    "rate_limited",
    "overloaded",
    "server_error",
    "auth_error",
    "bad_response",
    "rejected",
    "model_missing",
    "not_found",
    "tools_unsupported",
    "unusable_answer",
    "content_blocked",
    "prompt_blocked",
    "model_refused",
    "empty_answer",
    "provider_failure",
    "provider_error",
    "abandoned",
]

FAILURE_TERMS: dict[FailureCode, Term] = {
    "timeout": Term(
        "no answer within the call's time bound, or the provider's own (HTTP 408 or 504)",
        "timeout",
        "逾時",
    ),
    "deadline": Term(
        "the call was cut short by the request's deadline, by the share of it the providers "
        "after this one leave it, or by the request's message expiry (its producer's expires): "
        "no fault of the provider",
        "deadline cut",
        "期限截斷",
    ),
    "time_limit": Term(
        "the hop's own time limit (the pool's soft time limit) fired during the call: no fault "
        "of the provider",
        "time limit cut",
        "時間限制截斷",
    ),
    "unreachable": Term("connection refused, reset or not resolved", "unreachable", "無法連線"),
    "rate_limited": Term("the provider answered 429: too many requests", "rate limited", "限流"),
    "overloaded": Term("the provider said it is overloaded (529)", "overloaded", "過載"),
    "server_error": Term(
        "the provider answered 5xx (other than 504, a timeout)", "server error", "伺服器錯誤"
    ),
    "auth_error": Term(
        "the provider refused the pool's key or account (401/402/403, or an account it disabled, "
        "left unpaid or will not serve from this region)",
        "key or account refused",
        "金鑰或帳戶被拒",
    ),
    "bad_response": Term("an answer the adapter could not read", "bad response", "無法解讀的回應"),
    "rejected": Term(
        "the provider refused this request (400-class): no fault of the provider",
        "rejected",
        "請求被拒",
    ),
    "model_missing": Term(
        "the provider does not have the model the route names (404 model not found): the "
        "pool's configuration, so it counts against the provider",
        "model missing",
        "模型不存在",
    ),
    "not_found": Term(
        "the provider's URL answered 404 without naming a model (a wrong base URL or path, a "
        "proxy without the pool's path) or 405 (a server that does not serve this API): the "
        "pool's configuration, so it counts against the provider",
        "URL not found",
        "網址不存在",
    ),
    "tools_unsupported": Term(
        "the route's model, or the server in front of it, does not take tool calls (a NIM or "
        "vLLM started without a tool-call parser, an Ollama model without tool support): the "
        "pool's configuration, every request with tools fails the same way, so it counts against "
        "the provider",
        "tools unsupported",
        "不支援工具呼叫",
    ),
    "unusable_answer": Term(
        "the provider answered, and billed, but nothing in the answer can be used",
        "unusable answer",
        "無法使用的回答",
    ),
    "content_blocked": Term(
        "the provider withheld the answer it generated (safety, recitation or content policy); "
        "billed as the provider reported",
        "answer blocked",
        "回答遭封鎖",
    ),
    "prompt_blocked": Term(
        "the provider refused to answer the prompt before generating anything (its content "
        "policy); billed as the provider reported",
        "prompt blocked",
        "提示遭封鎖",
    ),
    "model_refused": Term(
        "the model declined to answer (a refusal stop); billed as the provider reported",
        "model refused",
        "模型拒答",
    ),
    "empty_answer": Term(
        "the answer held no text and no tool call (a length stop that produced nothing "
        "visible: thinking used the whole output budget); billed as the provider reported",
        "empty answer",
        "空白回答",
    ),
    "provider_failure": Term("the provider failed (no closer reason)", "failure", "供應商失敗"),
    "provider_error": Term("the call failed (no closer reason)", "error", "呼叫失敗"),
    "abandoned": Term(
        "the call's worker stopped before the call ended", "worker stopped", "工作程序中止"
    ),
}
FAILURE_CODES: tuple[FailureCode, ...] = get_args(FailureCode)

#: Why a request got ``status: "error"`` (``Result.error.code``): the producer's to fix, or the
#: pool's own failure to serve it.
ErrorCode = Literal[
    # The request (aipool.contract.request): fix it and send again.
    "invalid_request",
    "ambiguous_input",
    "missing_messages",
    "invalid_message",
    "unknown_role",
    "invalid_prompt",
    "invalid_system",
    "invalid_text",
    "prompt_too_large",
    "invalid_tools",
    "tool_without_schema",
    "invalid_intent",
    "invalid_priority",
    "invalid_number",
    "invalid_max_tokens",
    "invalid_temperature",
    "invalid_deadline_s",
    "invalid_value",
    "invalid_metadata",
    "metadata_too_large",
    "invalid_user_id",
    "invalid_service",
    "unknown_field",
    "too_deep",
    # The message (workers.edge and tasks.generate): send it as the contract says.
    "malformed_message",
    "content_type_refused",
    "unknown_task",
    "bad_arguments",
    "positional_arguments",
    "unknown_argument",
    "invalid_journey",
    "task_id_reused",
    # The pool could not serve it.
    "deadline",
    "time_limit",
    "dispatch_failed",
    "internal_error",
]

#: Every result error code, with its meaning and its words (as :data:`OUTCOME_TERMS`).
ERROR_TERMS: dict[ErrorCode, Term] = {
    "invalid_request": Term(
        "the request is not an object the contract describes", "invalid request", "請求格式錯誤"
    ),
    "ambiguous_input": Term(
        "both prompt and messages were given",
        "prompt and messages both given",
        "同時給了 prompt 與 messages",
    ),
    "missing_messages": Term(
        "neither a prompt nor any message was given",
        "no prompt or messages",
        "沒有 prompt 或 messages",
    ),
    "invalid_message": Term(
        "a message is not a role with text (or tool calls) the contract allows",
        "invalid message",
        "訊息格式錯誤",
    ),
    "unknown_role": Term(
        "a message has a role other than system, user, assistant or tool",
        "unknown role",
        "未知的角色",
    ),
    "invalid_prompt": Term("the prompt is empty or only whitespace", "empty prompt", "prompt 為空"),
    "invalid_system": Term("system is not a string", "invalid system", "system 格式錯誤"),
    "invalid_text": Term(
        "text holds characters no provider takes (NUL, lone surrogates, controls)",
        "unusable characters",
        "含無法使用的字元",
    ),
    "prompt_too_large": Term(
        "the prompt is longer than AIPOOL_MAX_PROMPT_TOKENS", "prompt too large", "prompt 過長"
    ),
    "invalid_tools": Term(
        "tools are not a list of named functions within the limit, names used once",
        "invalid tools",
        "tools 格式錯誤",
    ),
    "tool_without_schema": Term(
        "a tool's parameters are not a JSON Schema of type object",
        "tool without schema",
        "tool 缺少 schema",
    ),
    "invalid_intent": Term(
        "the intent is not one of the six the router knows", "unknown intent", "未知的意圖"
    ),
    "invalid_priority": Term(
        "the priority is not low, normal, high or critical", "unknown priority", "未知的優先度"
    ),
    "invalid_number": Term(
        "a number is not finite, or is an integer larger than 64 bits", "invalid number", "數值錯誤"
    ),
    "invalid_max_tokens": Term(
        "max_tokens is not an integer from 1 to the pool's output limit",
        "invalid max_tokens",
        "max_tokens 錯誤",
    ),
    "invalid_temperature": Term(
        "temperature is not a number from 0 to 2", "invalid temperature", "temperature 錯誤"
    ),
    "invalid_deadline_s": Term(
        "deadline_s is not a number of seconds from 0.001 to 3600",
        "invalid deadline_s",
        "deadline_s 錯誤",
    ),
    "invalid_value": Term(
        "a value is not JSON, or an object key is not a string", "invalid value", "值錯誤"
    ),
    "invalid_metadata": Term("metadata is not a JSON object", "invalid metadata", "metadata 錯誤"),
    "metadata_too_large": Term(
        "metadata is larger than its limit in characters of JSON",
        "metadata too large",
        "metadata 過大",
    ),
    "invalid_user_id": Term(
        "user_id is not a string of at most its length", "invalid user_id", "user_id 錯誤"
    ),
    "invalid_service": Term("service is not a short name", "invalid service", "service 錯誤"),
    "unknown_field": Term(
        "the request has a field the contract does not know", "unknown field", "未知欄位"
    ),
    "too_deep": Term(
        "the request or message nests deeper than the pool reads", "nested too deep", "巢狀過深"
    ),
    "malformed_message": Term(
        "the message is not a Celery protocol 2 message the pool can read",
        "malformed message",
        "訊息格式錯誤",
    ),
    "content_type_refused": Term("the message is not JSON in UTF-8", "not JSON", "非 JSON 訊息"),
    "unknown_task": Term("no task of that name runs in this pool", "unknown task", "未知的 task"),
    "bad_arguments": Term(
        "the message's arguments do not fit its task", "bad arguments", "參數錯誤"
    ),
    "positional_arguments": Term(
        "ai.generate was sent positional arguments; it takes kwargs only",
        "positional arguments",
        "使用了位置參數",
    ),
    "unknown_argument": Term(
        "ai.generate was sent an argument other than request and journey",
        "unknown argument",
        "未知參數",
    ),
    "invalid_journey": Term(
        "the journey is not one the pool's router could have produced",
        "invalid journey",
        "行程無效",
    ),
    "task_id_reused": Term(
        "the task id was used for another request: this one is not served under it (send it "
        "again under a new id)",
        "task id reused",
        "任務編號重複使用",
    ),
    "deadline": Term(
        "the request's deadline passed before any provider could answer",
        "deadline passed",
        "超過期限",
    ),
    "time_limit": Term(
        "the hop did not finish within its time limit", "time limit", "超過時間限制"
    ),
    "dispatch_failed": Term(
        "the broker did not take the request's next hop", "dispatch failed", "轉送失敗"
    ),
    "internal_error": Term(
        "the pool failed to serve the hop (a bug, logged with the request id)",
        "internal error",
        "內部錯誤",
    ),
}
ERROR_MEANINGS: dict[ErrorCode, str] = {name: t.meaning for name, t in ERROR_TERMS.items()}

OUTCOMES: tuple[Outcome, ...] = get_args(Outcome)
ERROR_CODES: tuple[ErrorCode, ...] = get_args(ErrorCode)


def outcome_named(name: object) -> Outcome | None:
    """``name`` as an outcome, or None when it is not one (as read from a message)."""
    return next((outcome for outcome in OUTCOMES if outcome == name), None)


def _complete(terms: Mapping[Any, Term], names: tuple[str, ...], what: str) -> None:
    # A name without its words would break every view that shows it (issue #40): refuse at import.
    if list(terms) != list(names):
        missing = sorted(set(names) - set(terms))
        extra = sorted(set(terms) - set(names))
        raise ImportError(f"{what}: words missing for {missing}, words for unknown {extra}")


_complete(OUTCOME_TERMS, OUTCOMES, "outcomes")
_complete(FAILURE_TERMS, FAILURE_CODES, "failure codes")
_complete(ERROR_TERMS, ERROR_CODES, "error codes")


def _word(terms: Mapping[Any, Term], name: str, lang: str) -> str:
    term = terms.get(name)
    # A name outside the vocabulary (a row an older pool wrote, a reason read from a message) is
    # shown as it is: a view never fails on what it reads.
    return term.word(lang) if term is not None else name


def outcome_word(outcome: str, lang: str) -> str:
    """The word a person reads for ``outcome`` in ``lang`` (``en`` or ``zh-TW``)."""
    return _word(OUTCOME_TERMS, outcome, lang)


def failure_word(code: str, lang: str) -> str:
    """The word a person reads for a failed call's ``code`` in ``lang``."""
    return _word(FAILURE_TERMS, code, lang)


def error_word(code: str, lang: str) -> str:
    """The word a person reads for a result's error ``code`` in ``lang``."""
    return _word(ERROR_TERMS, code, lang)
