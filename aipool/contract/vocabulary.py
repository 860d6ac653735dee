"""The pool's one vocabulary: every attempt outcome and every result error code, with its meaning.

Results, the ledger, the metrics, the JSON Schema (its ``enum``\\ s), the hop runner and the worker's
edge all use these names; ``Outcome`` and ``ErrorCode`` are ``Literal`` types, so mypy refuses a
name that is not here wherever one is written. A new name is added here, with its line of meaning,
or nowhere.
"""

from __future__ import annotations

from typing import Literal, get_args

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
    "skipped",
]

OUTCOME_MEANINGS: dict[Outcome, str] = {
    "ok": "the provider answered",
    "error": "the provider was called and failed; the attempt's error names how",
    "abandoned": "the call's worker stopped before the call ended; billed at its estimate",
    "fallback": "the chain's static answer: the last hop of a general chain",
    "refused": "the tool chain's refusal: the last hop of a tool chain",
    "circuit_open": "skipped: the provider's breaker is open",
    "quota_exceeded": "skipped: the provider's daily tokens or requests, or its minute, are spent",
    "deadline": "skipped: too little of the request's deadline is left for this provider",
    "context_too_long": "skipped: the prompt does not fit the model's context window",
    "queue_wait": "skipped: the provider's lane holds requests that have waited as long as the "
    "request's deadline leaves (aipool.lanes)",
    "budget_exhausted": "skipped: the pool's cap on this month's paid spend is reached",
    "service_budget_exhausted": "skipped: the request's service has used its budget or its share",
    "budget_saving": "skipped: paid quota is kept for higher-priority work",
    "guard_unavailable": "skipped: Redis did not answer, so no breaker or quota could be asked",
    "skipped": "skipped for a reason older records did not name",
}

#: Attempts that reached the provider: what its request quota counts and its bill holds.
CALLED_OUTCOMES: tuple[Outcome, ...] = ("ok", "error", "abandoned")
#: The chain's terminal hop: it answers, it calls nobody.
TERMINAL_OUTCOMES: tuple[Outcome, ...] = ("fallback", "refused")
#: Hops passed over without a call, and the word reports count each under.
SKIP_WORDS: dict[Outcome, str] = {
    "circuit_open": "breaker",
    "quota_exceeded": "quota",
    "deadline": "deadline",
    "context_too_long": "context",
    "queue_wait": "queue",
    "budget_exhausted": "budget",
    "service_budget_exhausted": "service budget",
    "budget_saving": "saving",
    "guard_unavailable": "guards",
    "skipped": "other",
}

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
    # The pool could not serve it.
    "deadline",
    "time_limit",
    "dispatch_failed",
    "internal_error",
]

ERROR_MEANINGS: dict[ErrorCode, str] = {
    "invalid_request": "the request is not an object the contract describes",
    "ambiguous_input": "both prompt and messages were given",
    "missing_messages": "neither a prompt nor any message was given",
    "invalid_message": "a message is not a role with text (or tool calls) the contract allows",
    "unknown_role": "a message has a role other than system, user, assistant or tool",
    "invalid_prompt": "the prompt is empty or only whitespace",
    "invalid_system": "system is not a string",
    "invalid_text": "text holds characters no provider takes (NUL, lone surrogates, controls)",
    "prompt_too_large": "the prompt is longer than AIPOOL_MAX_PROMPT_TOKENS",
    "invalid_tools": "tools are not a list of named functions within the limit, names used once",
    "tool_without_schema": "a tool's parameters are not a JSON Schema of type object",
    "invalid_intent": "the intent is not one of the six the router knows",
    "invalid_priority": "the priority is not low, normal, high or critical",
    "invalid_number": "a number is not finite, or is an integer larger than 64 bits",
    "invalid_max_tokens": "max_tokens is not an integer from 1 to the pool's output limit",
    "invalid_temperature": "temperature is not a number from 0 to 2",
    "invalid_deadline_s": "deadline_s is not a number of seconds from 0.001 to 3600",
    "invalid_value": "a value is not JSON, or an object key is not a string",
    "invalid_metadata": "metadata is not a JSON object",
    "metadata_too_large": "metadata is larger than its limit in characters of JSON",
    "invalid_user_id": "user_id is not a string of at most its length",
    "invalid_service": "service is not a short name",
    "unknown_field": "the request has a field the contract does not know",
    "too_deep": "the request or message nests deeper than the pool reads",
    "malformed_message": "the message is not a Celery protocol 2 message the pool can read",
    "content_type_refused": "the message is not JSON in UTF-8",
    "unknown_task": "no task of that name runs in this pool",
    "bad_arguments": "the message's arguments do not fit its task",
    "positional_arguments": "ai.generate was sent positional arguments; it takes kwargs only",
    "unknown_argument": "ai.generate was sent an argument other than request and journey",
    "invalid_journey": "the journey is not one the pool's router could have produced",
    "deadline": "the request's deadline passed before any provider could answer",
    "time_limit": "the hop did not finish within its time limit",
    "dispatch_failed": "the broker did not take the request's next hop",
    "internal_error": "the pool failed to serve the hop (a bug, logged with the request id)",
}

OUTCOMES: tuple[Outcome, ...] = get_args(Outcome)
ERROR_CODES: tuple[ErrorCode, ...] = get_args(ErrorCode)


def outcome_named(name: object) -> Outcome | None:
    """``name`` as an outcome, or None when it is not one (as read from a message)."""
    return next((outcome for outcome in OUTCOMES if outcome == name), None)
