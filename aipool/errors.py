"""The one error tree of aipool.

Every failure the pool can meet is one of these, so deciding what to do next is one ``isinstance``::

    AipoolError
    ├── InvalidRequest          the request's own fault: answered as status "error", never retried,
    │                           never charged, never counted against a provider
    ├── ProviderError           a model call failed; the request moves to the next hop
    │   ├── ProviderRejected    400-class answer (validation, context too long): the provider is
    │   │                       healthy, so it does not trip the breaker
    │   ├── UnusableAnswer      the provider answered (and billed: ``billed`` holds its usage)
    │   │   │                   but nothing in it can be used; never against the breaker
    │   │   ├── ContentBlocked  the answer was withheld (safety, recitation, content policy)
    │   │   ├── PromptBlocked   the prompt was refused before anything was generated
    │   │   ├── ModelRefused    the model declined (a refusal stop)
    │   │   └── EmptyAnswer     no text and no tool call (thinking used the output budget)
    │   ├── DeadlineCut         the call was cut short by the request's deadline (or the share of
    │   │                       it later providers leave this one), or by its message's expiry:
    │   │                       never the provider's fault
    │   ├── TimeLimitCut        the hop's own time limit (Celery's soft limit) fired during the
    │   │                       call: the pool's limit, never the provider's fault
    │   └── ProviderFailure     counts against the provider's breaker
    │       ├── ProviderTimeout         no answer within the timeout (or the provider's own:
    │       │                           HTTP 408, 504)
    │       ├── ProviderUnreachable     connection refused / reset / DNS
    │       ├── ProviderRateLimited     HTTP 429 (carries ``retry_after`` when the provider declared
    │       │                           a delay; then it pauses the provider instead of counting)
    │       ├── ProviderOverloaded      HTTP 529 (Anthropic's "overloaded")
    │       ├── ProviderServerError     HTTP 5xx (but 504, a timeout)
    │       ├── ProviderAuthError       HTTP 401/402/403, or an account the provider disabled:
    │       │                           the pool's key or account is refused, not the request
    │       ├── ProviderModelMissing    404 "model not found": the route's model is not there,
    │       │                           so every request fails the same way (the pool's fault)
    │       ├── ProviderNotFound        any other 404 (a wrong base URL, a proxy's missing path),
    │       │                           or a 405 (a server that serves no such API at the URL):
    │       │                           the pool's configuration, every request fails the same way
    │       ├── ProviderToolsUnsupported  a 400 saying the model or its server takes no tool
    │       │                           calls: the pool's configuration, every tool request fails
    │       └── ProviderBadResponse     an answer we cannot parse
    ├── HopSkipped              the hop was not attempted at all
    │   ├── CircuitOpen         the breaker refused the call
    │   ├── QuotaExceeded       the quota had no room for the reservation
    │   ├── DeadlineExceeded    the request's latency budget ran out while it waited
    │   └── GuardUnavailable    breaker or quota could not be read (Redis down): no call unguarded
    │       └── ReplicasBehind  no replica acknowledged the write that decides a paid call, and
    │                           AIPOOL_REDIS_REPLICA_ACK_REQUIRED=1 says not to call without one
    ├── InvalidJourney          a message's journey is not one the pool could have produced
    ├── SettingsError           the settings are refused (unknown names, bad values): nothing starts
    ├── NoLogin                 a server would show the pool to anyone: it has no login, and
    │                           AIPOOL_ALLOW_ANONYMOUS=1 does not say that is meant
    └── PoolUnavailable         a producer or command cannot reach the pool it needs
        ├── NoRedis             ``REDIS_URL`` is unset and no embedded Redis is running
        │   └── UnsafeRuntimeDir    the runtime directory, where embedded servers are announced,
        │                           is not this user's alone: nothing in it is trusted
        ├── NoWorker            no worker consumes the queue a request would go to
        └── NoAnswer            no answer came within the producer's timeout

SDK exceptions are mapped into this tree in exactly one place per adapter (``map_error``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from aipool.contract.completion import Completion
    from aipool.contract.vocabulary import ErrorCode, FailureCode


class AipoolError(Exception):
    """Base of every error aipool raises on purpose."""

    #: Short machine-readable code; appears in results and the ``attempts`` trail.
    code = "aipool_error"

    def __init__(self, message: str = "") -> None:
        super().__init__(message or self.code)
        self.message = message or self.code

    def __str__(self) -> str:
        return self.message


class InvalidRequest(AipoolError):
    """The request itself is malformed; the producer must fix it."""

    code: ErrorCode = "invalid_request"

    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code


class ProviderError(AipoolError):
    """A call to a model provider failed."""

    #: How it failed (:data:`aipool.contract.vocabulary.FailureCode`, with its words there).
    code: FailureCode = "provider_error"
    #: Whether this failure is evidence that the provider is unhealthy (trips the breaker).
    counts_against_provider = True
    #: Whether the call may have been billed though no usage came back (the provider may have
    #: finished it after the pool stopped waiting): such a call is charged its estimate.
    billing_unknown = False

    def __init__(self, message: str = "", *, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class ProviderRejected(ProviderError):
    """The provider refused this particular request (HTTP 400-class other than 401/402/403/429)."""

    code: FailureCode = "rejected"
    counts_against_provider = False


class DeadlineCut(ProviderError):
    """The call ran out of the time the request's deadline gave it (its share while later
    providers remain, :mod:`aipool.attempt.timing`), or its message's expiry passed during it,
    short of the provider's own timeout: it says nothing about the provider, and it may have been
    billed."""

    code: FailureCode = "deadline"
    counts_against_provider = False
    billing_unknown = True


class TimeLimitCut(ProviderError):
    """The task's soft time limit fired during the call. Every hop runs under the pool's own
    limits (a producer's are not carried: ``tasks/generate.py``), and the settings refuse provider
    timeouts that do not fit under them (:mod:`aipool.settings.time_limits`), so this is the
    pool's limit cutting the call, never evidence against the provider; it may have been billed."""

    code: FailureCode = "time_limit"
    counts_against_provider = False
    billing_unknown = True


class UnusableAnswer(ProviderError):
    """The provider answered, and billed the call, but the answer holds nothing to use.

    ``billed`` is the usage the provider reported for it (a :class:`Completion` without text):
    the call is booked with every token of it. The provider is healthy (it answered), so this
    never counts against its breaker; the request moves on to the next provider, as a content
    policy fallback does.
    """

    code: FailureCode = "unusable_answer"
    counts_against_provider = False

    def __init__(
        self, message: str = "", *, billed: Completion | None = None, status: int | None = None
    ) -> None:
        super().__init__(message, status=status)
        self.billed = billed


class ContentBlocked(UnusableAnswer):
    """The provider withheld the answer it generated (safety, recitation, content policy)."""

    code: FailureCode = "content_blocked"


class PromptBlocked(UnusableAnswer):
    """The provider refused the prompt before generating anything (its content policy): Gemini's
    ``promptFeedback.blockReason``, an OpenAI-compatible content filter's 400 (``billed`` is
    then ``None``: nothing was generated, nothing reported billed)."""

    code: FailureCode = "prompt_blocked"


class ModelRefused(UnusableAnswer):
    """The model declined to answer (Anthropic's ``refusal`` stop, OpenAI's ``refusal``)."""

    code: FailureCode = "model_refused"


class EmptyAnswer(UnusableAnswer):
    """No text and no tool call came back: a length stop that produced nothing visible (a
    thinking model's thinking used the whole output budget), or an empty stop."""

    code: FailureCode = "empty_answer"


class ProviderFailure(ProviderError):
    """The provider failed in a way that says it is unhealthy right now."""

    code: FailureCode = "provider_failure"


class ProviderTimeout(ProviderFailure):
    code: FailureCode = "timeout"
    billing_unknown = True


class ProviderUnreachable(ProviderFailure):
    code: FailureCode = "unreachable"


class ProviderRateLimited(ProviderFailure):
    code: FailureCode = "rate_limited"

    def __init__(
        self, message: str = "", *, status: int | None = 429, retry_after: float | None = None
    ) -> None:
        super().__init__(message, status=status)
        self.retry_after = retry_after


class ProviderOverloaded(ProviderFailure):
    code: FailureCode = "overloaded"


class ProviderServerError(ProviderFailure):
    code: FailureCode = "server_error"


class ProviderAuthError(ProviderFailure):
    """The provider refuses the pool's key or its account (a wrong or expired key, an unpaid or
    disabled account, a region the account may not call from): every request fails the same way
    until a person acts, so it counts against the provider, never against the request."""

    code: FailureCode = "auth_error"


class ProviderModelMissing(ProviderFailure):
    """The provider does not serve the model asked for (404 "model not found"). The model comes
    from the route table, so every request of that route fails the same way: the pool's
    misconfiguration, which counts against the provider and alerts, never the request's."""

    code: FailureCode = "model_missing"


class ProviderNotFound(ProviderFailure):
    """The provider's URL answered 404 without naming a model (a wrong base URL, a proxy without
    the pool's path, an API version the provider does not serve), or 405 Method Not Allowed (the
    base URL points at a server that does not serve this API: a web site, a static file server,
    where the call's POST is refused whatever it carries). No call of the pool names a
    resource of its own request (no file, cache or response id), so every request fails the same
    way: the pool's configuration, which counts against the provider so its breaker opens."""

    code: FailureCode = "not_found"


class ProviderToolsUnsupported(ProviderFailure):
    """The provider refused a request with tools because the route's model, or the server in
    front of it, does not take tool calls: vLLM and NVIDIA's NIMs started without a tool-call
    parser answer 400 ``"auto" tool choice requires --enable-auto-tool-choice and
    --tool-call-parser to be set``, Ollama 400 ``<model> does not support tools``. Every request
    with tools fails the same way until the model or the server is changed: the pool's
    configuration, which counts against the provider, never the request's fault."""

    code: FailureCode = "tools_unsupported"


class ProviderBadResponse(ProviderFailure):
    code: FailureCode = "bad_response"


class HopSkipped(AipoolError):
    """A hop was skipped without calling its model."""

    code = "skipped"


class CircuitOpen(HopSkipped):
    code = "circuit_open"


class QuotaExceeded(HopSkipped):
    code = "quota_exceeded"


class DeadlineExceeded(HopSkipped):
    code = "deadline"


class GuardUnavailable(HopSkipped):
    code = "guard_unavailable"


class ReplicasBehind(GuardUnavailable):
    """Fewer replicas than ``AIPOOL_REDIS_REPLICA_ACKS`` acknowledged a write within the timeout
    (:mod:`aipool.redis.durability`): the write stands on the master, but a failover now could
    lose it. Raised only when ``AIPOOL_REDIS_REPLICA_ACK_REQUIRED=1``, before a paid call.

    ``reply`` is what the write answered (it stands): the script's raw reply, or the attempt's
    :class:`~aipool.attempt.layout.Call` the caller must now end without calling."""

    code = "replicas_behind"

    def __init__(self, message: str, reply: Any = None) -> None:
        super().__init__(message)
        self.reply = reply


class InvalidJourney(AipoolError):
    """The journey in a message names a hop no route of this pool produces."""

    code = "invalid_journey"


class SettingsError(AipoolError):
    """The settings cannot be used; ``problems`` names each offending variable or file key."""

    code = "settings_refused"

    def __init__(self, problems: list[str]) -> None:
        super().__init__("settings refused: " + "; ".join(problems))
        self.problems = list(problems)


class NoLogin(AipoolError):
    """A server of the pool (Flower, the usage report) has no login configured and anonymous
    access was not asked for (``AIPOOL_ALLOW_ANONYMOUS=1``): it does not start."""

    code = "no_login"


class PoolUnavailable(AipoolError):
    """The pool a producer or command needs cannot be reached; the message says how to fix it."""

    code = "pool_unavailable"


class NoRedis(PoolUnavailable):
    """No Redis to use: ``REDIS_URL`` is unset and no embedded Redis is running. Nothing ever
    starts one silently, so a producer never enqueues where no worker listens."""

    code = "no_redis"


class UnsafeRuntimeDir(NoRedis):
    """The runtime directory (``AIPOOL_RUNTIME_DIR``, default ``<tmp>/aipool-<uid>``) or an
    announcement in it is not this user's alone (a symbolic link, another owner, a mode other
    than 0700): an embedded Redis announced there could be another user's, so none is used."""

    code = "unsafe_runtime_dir"


class NoWorker(PoolUnavailable):
    """No running worker consumes the queue a request would be sent to."""

    code = "no_worker"


class NoAnswer(PoolUnavailable):
    """The request got no answer within the producer's timeout."""

    code = "no_answer"


def as_provider_error(exc: BaseException) -> ProviderError:
    """The provider error ``exc`` stands for: adapters map their SDK's errors; anything else that
    escapes a call (a bug on the far side or ours, the task's soft time limit) still must not kill
    the worker or lose the request."""
    if isinstance(exc, ProviderError):
        return exc
    return task_time_limit(exc) or ProviderBadResponse(type(exc).__name__)


def task_time_limit(exc: BaseException) -> TimeLimitCut | None:
    """The task's soft time limit, raised inside a call (by name: aipool does not import Celery
    here), cut that call, whatever the SDK wrapped it in: the pool's limit, not the provider's
    fault (issue #42)."""
    if type(exc).__name__ == "SoftTimeLimitExceeded":
        return TimeLimitCut("the task's soft time limit passed during the call")
    return None


def status_error(status: int, message: str, retry_after: float | None = None) -> ProviderError:
    """Classify an HTTP status code the same way for every provider."""
    if status == 429:
        return ProviderRateLimited(message, status=status, retry_after=retry_after)
    if status == 529:
        return ProviderOverloaded(message, status=status)
    # 402 Payment Required: the account is not paid up (Anthropic's ``billing_error``).
    if status in (401, 402, 403):
        return ProviderAuthError(message, status=status)
    # 408 Request Timeout, and 504: the provider's own time ran out (Anthropic's
    # ``timeout_error``, Google's ``DEADLINE_EXCEEDED``), a timeout however it is worded.
    if status in (408, 504):
        return ProviderTimeout(message, status=status)
    # A 404 that names no model (those are ProviderModelMissing, told by the adapter's words),
    # and a 405: every call of the pool is the one method its API takes, so a server refusing
    # that method at the URL serves no such API there (a web site, a static file server).
    if status in (404, 405):
        return ProviderNotFound(message, status=status)
    if 400 <= status < 500:
        return ProviderRejected(message, status=status)
    return ProviderServerError(message, status=status)
