"""Real answers that refuse the pool's account, and tool calls the model left unrunnable.

Each test serves a body the provider documents (or that its SDK names an exception for) from a
loopback server and calls it through the adapter's real SDK. A refused key or account fails every
request the same way until a person acts: it counts against the provider (its breaker opens, its
alert fires), never as a bad request. So does a 404 that names no model (a wrong base URL, a
proxy's missing path): the pool's configuration. A provider's own timeout (504) is a timeout,
counted; a prompt its content filter refused is the request's, never counted. A tool call cut off by the output limit, or whose arguments
are not JSON, is the model's slip on this one request: an unusable answer, billed as reported,
that moves the request on and never counts against the provider. A truncated answer reads
``length`` whatever the provider calls its stop.
"""

from __future__ import annotations

from typing import Any

import pytest

from aipool.contract.request import parse_request
from aipool.errors import (
    ContentBlocked,
    PromptBlocked,
    ProviderAuthError,
    ProviderBadResponse,
    ProviderModelMissing,
    ProviderRateLimited,
    ProviderRejected,
    ProviderToolsUnsupported,
    UnusableAnswer,
)
from tests.support.canned import CLAUDE, GEMINI, NEMOTRON, answer, billed, raised
from tests.support.requests import POD_LOGS_TOOL

TOOLS_REQUEST = parse_request({"prompt": "Show me the logs of pod api-7", "tools": [POD_LOGS_TOOL]})


# -- a refused key or account ------------------------------------------------------------------


def _google_key_error(message: str) -> dict[str, Any]:
    # Google's 400 for a wrong or expired key: the reason only in the ErrorInfo detail.
    return {
        "error": {
            "code": 400,
            "message": message,
            "status": "INVALID_ARGUMENT",
            "details": [
                {
                    "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                    "reason": "API_KEY_INVALID",
                    "domain": "googleapis.com",
                    "metadata": {"service": "generativelanguage.googleapis.com"},
                }
            ],
        }
    }


@pytest.mark.parametrize(
    "message",
    [
        "API key not valid. Please pass a valid API key.",
        "API key expired. Please renew the API key.",
    ],
    ids=["not-valid", "expired"],
)
def test_gemini_refused_key_counts_against_gemini(canned: Any, message: str) -> None:
    # Given: the body as Google serves it ("API key" with a space: the reason is in the details)
    error = raised(canned, "gemini", GEMINI, _google_key_error(message), status=400)
    # Then: the pool's key, not the request
    assert isinstance(error, ProviderAuthError) and error.code == "auth_error"
    assert error.counts_against_provider


def test_gemini_400_that_is_not_about_the_key_stays_the_requests(canned: Any) -> None:
    body = {
        "error": {
            "code": 400,
            "message": "* GenerateContentRequest.contents: contents is not specified",
            "status": "INVALID_ARGUMENT",
        }
    }
    error = raised(canned, "gemini", GEMINI, body, status=400)
    assert isinstance(error, ProviderRejected) and not error.counts_against_provider


@pytest.mark.parametrize(
    "message",
    [
        "User location is not supported for the API use.",
        "Gemini API free tier is not available in your country. Please enable billing on your "
        "project in Google AI Studio.",
    ],
    ids=["location", "free-tier"],
)
def test_gemini_failed_precondition_is_the_accounts_and_counts(canned: Any, message: str) -> None:
    # Google's troubleshooting guide: 400 FAILED_PRECONDITION, "enable billing"
    body = {"error": {"code": 400, "message": message, "status": "FAILED_PRECONDITION"}}
    error = raised(canned, "gemini", GEMINI, body, status=400)
    assert isinstance(error, ProviderAuthError) and error.counts_against_provider
    assert "FAILED_PRECONDITION" in str(error)


def _gemini_candidate(finish: str, parts: list[dict[str, Any]] | None) -> dict[str, Any]:
    content: dict[str, Any] = {"role": "model"}
    if parts is not None:
        content["parts"] = parts
    return {
        "candidates": [{"content": content, "finishReason": finish, "index": 0}],
        "usageMetadata": {"promptTokenCount": 12, "candidatesTokenCount": 7, "totalTokenCount": 19},
        "modelVersion": GEMINI,
    }


@pytest.mark.parametrize(
    "parts", [None, [{"text": "Partial answer before the stop"}]], ids=["no-parts", "partial"]
)
def test_gemini_account_disabled_stop_is_never_an_answer_and_counts(
    canned: Any, parts: Any
) -> None:
    # FinishReason.PUP_LIMITED_DISABLED: "the user account is limited or disabled due to
    # Prohibited Use Policy (PUP) violations"
    error = raised(canned, "gemini", GEMINI, _gemini_candidate("PUP_LIMITED_DISABLED", parts))
    assert isinstance(error, ProviderAuthError) and error.counts_against_provider
    assert "PUP_LIMITED_DISABLED" in str(error)


@pytest.mark.parametrize(
    ("status", "body"),
    [
        pytest.param(
            402,
            {
                "type": "error",
                "error": {"type": "billing_error", "message": "Billing error"},
                "request_id": "req_011CSHoEeqs5C35K2UUqR7Fy",
            },
            id="402-billing_error",
        ),
        pytest.param(
            400,
            {
                "type": "error",
                "error": {
                    "type": "invalid_request_error",
                    "message": "Your organization has been disabled.",
                    "details": {"error_code": "organization_on_hold"},
                },
                "request_id": "req_011CSHoEeqs5C35K2UUqR7Fy",
            },
            id="400-organization_on_hold",
        ),
        pytest.param(
            400,
            {
                "type": "error",
                "error": {
                    "type": "invalid_request_error",
                    "message": "Your credit balance is too low to access the Anthropic API. "
                    "Please go to Plans & Billing to upgrade or purchase credits.",
                },
                "request_id": "req_011CSHoEeqs5C35K2UUqR7Fy",
            },
            id="400-credit-balance-too-low",
        ),
        pytest.param(
            400,
            # The organization's monthly spend limit reached (anthropics/claude-code#2127 and
            # #38035 quote it): every call fails so until the month ends or the limit is raised
            {
                "type": "error",
                "error": {
                    "type": "invalid_request_error",
                    "message": "You have reached your specified API usage limits. You will "
                    "regain access on 2026-04-01 at 00:00 UTC.",
                },
                "request_id": "req_011CZLrUfBVkVHn5T6EqQaf7",
            },
            id="400-spend-limit-reached",
        ),
    ],
)
def test_claude_refused_account_counts_against_claude(
    canned: Any, status: int, body: dict[str, Any]
) -> None:
    # Anthropic's error types (billing_error, the SDK's PaymentRequiredError) and its
    # OrganizationOnHoldError, and the 400 every client sees when prepaid credits run out
    error = raised(canned, "claude", CLAUDE, body, status=status)
    assert isinstance(error, ProviderAuthError) and error.counts_against_provider
    assert error.status == status


def test_claude_400_about_the_request_stays_the_requests(canned: Any) -> None:
    body = {
        "type": "error",
        "error": {
            "type": "invalid_request_error",
            "message": "prompt is too long: 215000 tokens > 200000 maximum",
        },
    }
    error = raised(canned, "claude", CLAUDE, body, status=400)
    assert isinstance(error, ProviderRejected) and not error.counts_against_provider


def test_openai_insufficient_quota_is_the_account_not_a_rate_limit(canned: Any) -> None:
    # OpenAI's error codes: 429 "You exceeded your current quota, please check your plan and
    # billing details" (credits run out): no wait ends it, so no pause, and the account's words
    body = {
        "error": {
            "message": "You exceeded your current quota, please check your plan and billing "
            "details. For more information on this error, read the docs: "
            "https://platform.openai.com/docs/guides/error-codes/api-errors.",
            "type": "insufficient_quota",
            "param": None,
            "code": "insufficient_quota",
        }
    }
    error = raised(canned, "nemotron", NEMOTRON, body, status=429)
    assert isinstance(error, ProviderAuthError) and error.counts_against_provider


def test_openai_429_rate_limit_is_still_a_rate_limit(canned: Any) -> None:
    body = {
        "error": {
            "message": "Rate limit reached for requests",
            "type": "requests",
            "param": None,
            "code": "rate_limit_exceeded",
        }
    }
    error = raised(canned, "nemotron", NEMOTRON, body, status=429)
    assert isinstance(error, ProviderRateLimited)


def test_nvidia_function_not_found_for_the_account_is_a_missing_model(canned: Any) -> None:
    # NVIDIA's hosted API for a model it does not serve (retired, or not open to the account):
    # an RFC 9457 problem document naming the cloud function, never the model
    body = {
        "status": 404,
        "title": "Not Found",
        "detail": "Function '23d4f03a-b8a6-4adb-a183-7daa083a09cc': Not found for account "
        "'Qawmu2vUw3rdcREnubcAVqe1c55nUTb1hCogKQx4BCA'",
    }
    error = raised(canned, "nemotron", NEMOTRON, body, status=404)
    assert isinstance(error, ProviderModelMissing) and error.counts_against_provider


# -- tools the model or its server cannot call: the pool's configuration ------------------------

#: vLLM's words (a NIM is vLLM inside) for tools sent to a server started without a tool-call
#: parser: tools without tool_choice are "auto".
NO_AUTO_TOOLS = (
    '"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set'
)


@pytest.mark.parametrize(
    ("provider", "model", "body"),
    [
        # vLLM's own error shape, no "error" object (langchain4j/langchain4j#3475)
        pytest.param(
            "nemotron",
            NEMOTRON,
            {
                "object": "error",
                "message": NO_AUTO_TOOLS,
                "type": "BadRequestError",
                "param": None,
                "code": 400,
            },
            id="nim-vllm-shape",
        ),
        # the same behind an OpenAI-shaped gateway (agentscope-ai/QwenPaw#1449)
        pytest.param(
            "nemotron",
            NEMOTRON,
            {
                "error": {
                    "message": NO_AUTO_TOOLS,
                    "type": "invalid_request_error",
                    "param": None,
                    "code": "400",
                }
            },
            id="openai-shape",
        ),
        pytest.param(
            "ollama",
            "llama3.2:1b",
            {"error": "registry.ollama.ai/library/llama3.2:1b does not support tools"},
            id="ollama",
        ),
    ],
)
def test_tools_the_model_cannot_call_count_against_the_provider(
    canned: Any, provider: str, model: str, body: Any
) -> None:
    # Given: the route's model, or its server, takes no tool calls: every request with tools
    # fails the same way until the pool's configuration changes
    error = raised(canned, provider, model, body, status=400, request=TOOLS_REQUEST)
    # Then: the provider's (its breaker opens, its alert fires), never a rejected request
    assert isinstance(error, ProviderToolsUnsupported) and error.counts_against_provider
    assert error.code == "tools_unsupported" and error.status == 400


# -- a 404 that names no model: the pool's URL ------------------------------------------------

#: Google's page for a path it does not serve (a wrong GEMINI_BASE_URL), its style cut short.
GOOGLE_404_PAGE = """<!DOCTYPE html>
<html lang=en>
  <meta charset=utf-8>
  <meta name=viewport content="initial-scale=1, minimum-scale=1, width=device-width">
  <title>Error 404 (Not Found)!!1</title>
  <style>*{margin:0;padding:0}html,code{font:15px/22px arial,sans-serif}</style>
  <a href=//www.google.com/><span id=logo aria-label=Google></span></a>
  <p><b>404.</b> <ins>That\u2019s an error.</ins>
  <p>The requested URL <code>/wrong/v1beta/models/gemini-2.5-flash:generateContent</code> was not
  found on this server.  <ins>That\u2019s all we know.</ins>
"""
#: nginx's default error page: a reverse proxy in front of the provider without the pool's path.
NGINX_404_PAGE = (
    "<html>\r\n<head><title>404 Not Found</title></head>\r\n<body>\r\n"
    "<center><h1>404 Not Found</h1></center>\r\n<hr><center>nginx</center>\r\n"
    "</body>\r\n</html>\r\n"
)
PLAIN_TEXT = {"Content-Type": "text/plain; charset=utf-8"}


@pytest.mark.parametrize(
    ("provider", "model", "body", "headers"),
    [
        pytest.param(
            "claude",
            CLAUDE,
            # Anthropic's errors page: 404 not_found_error, "The requested resource was not
            # found" (its answer for https://api.anthropic.com/wrong/v1/messages)
            {
                "type": "error",
                "error": {"type": "not_found_error", "message": "Not Found"},
                "request_id": "req_011CSHoEeqs5C35K2UUqR7Fy",
            },
            None,
            id="claude-json-not_found_error",
        ),
        pytest.param("claude", CLAUDE, NGINX_404_PAGE, None, id="claude-proxy-html"),
        pytest.param(
            "nemotron",
            NEMOTRON,
            # OpenAI's answer for a path it does not serve (an OpenAI-compatible base URL
            # without /v1, or with a path too many)
            {
                "error": {
                    "message": "Invalid URL (POST /v1/wrong/chat/completions)",
                    "type": "invalid_request_error",
                    "param": None,
                    "code": None,
                }
            },
            None,
            id="nemotron-json-invalid-url",
        ),
        pytest.param("nemotron", NEMOTRON, NGINX_404_PAGE, None, id="nemotron-proxy-html"),
        pytest.param("gemini", GEMINI, GOOGLE_404_PAGE, None, id="gemini-google-html"),
        # A proxy that echoes the path it does not serve, which names the model in Google's URL
        # scheme (.../models/<model>:generateContent): Spring Boot's default error body, and a
        # gateway's one-line JSON message. The path is not the provider saying the model is gone.
        pytest.param(
            "gemini",
            GEMINI,
            {
                "timestamp": "2026-12-07T20:51:09.123+00:00",
                "status": 404,
                "error": "Not Found",
                "path": f"/wrong/v1beta/models/{GEMINI}:generateContent",
            },
            None,
            id="gemini-proxy-json-echoing-the-path",
        ),
        pytest.param(
            "gemini",
            GEMINI,
            {
                "error": {
                    "code": 404,
                    "message": f"POST /wrong/v1beta/models/{GEMINI}:generateContent not found",
                    "status": "NOT_FOUND",
                }
            },
            None,
            id="gemini-gateway-message-echoing-the-path",
        ),
        # Ollama's own answer for a route it does not have (Go's http.NotFound, as gin sends
        # it): OLLAMA_BASE_URL with /v1 or /api appended
        pytest.param("ollama", "llama3.2:3b", "404 page not found", PLAIN_TEXT, id="ollama-text"),
        pytest.param("ollama", "llama3.2:3b", NGINX_404_PAGE, None, id="ollama-proxy-html"),
    ],
)
def test_a_404_that_names_no_model_is_the_pools_url_and_counts(
    canned: Any, provider: str, model: str, body: Any, headers: dict[str, str] | None
) -> None:
    # Given: the provider's URL answers 404 without naming a model
    error = raised(canned, provider, model, body, status=404, headers=headers)
    # Then: the pool's configuration, so it counts against the provider (its breaker opens)
    assert error.code == "not_found" and error.counts_against_provider
    assert error.status == 404
    # and an HTML page is told by its title, not pasted as markup
    assert "404" in str(error) and "<" not in str(error)


# -- the provider's own timeout ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("provider", "model", "body"),
    [
        pytest.param(
            "claude",
            CLAUDE,
            # Anthropic's errors page: 504 timeout_error, "The request timed out while
            # processing"
            {
                "type": "error",
                "error": {"type": "timeout_error", "message": "Request timed out"},
                "request_id": "req_011CSHoEeqs5C35K2UUqR7Fy",
            },
            id="claude-timeout_error",
        ),
        pytest.param(
            "gemini",
            GEMINI,
            # Google's troubleshooting guide: 504 DEADLINE_EXCEEDED, "The service is unable to
            # finish processing within the deadline"
            {
                "error": {
                    "code": 504,
                    "message": "The service is unable to finish processing within the deadline.",
                    "status": "DEADLINE_EXCEEDED",
                }
            },
            id="gemini-DEADLINE_EXCEEDED",
        ),
    ],
)
def test_a_504_is_a_timeout_and_counts(canned: Any, provider: str, model: str, body: Any) -> None:
    error = raised(canned, provider, model, body, status=504)
    assert error.code == "timeout" and error.counts_against_provider
    assert error.status == 504


# -- a prompt the content filter refused --------------------------------------------------------


def test_openai_compatible_content_filter_refusing_the_prompt_is_prompt_blocked(
    canned: Any,
) -> None:
    # Azure OpenAI's content filtering guide (learn.microsoft.com, "Content filtering"; the
    # openai-cookbook's Azure chat example reads the same fields): a prompt its filter refuses
    # is a 400 with "code": "content_filter" and innererror.code ResponsibleAIPolicyViolation
    body = {
        "error": {
            "message": "The response was filtered due to the prompt triggering Azure OpenAI's "
            "content management policy. Please modify your prompt and retry. To learn more "
            "about our content filtering policies please read our documentation: "
            "https://go.microsoft.com/fwlink/?linkid=2198766",
            "type": None,
            "param": "prompt",
            "code": "content_filter",
            "status": 400,
            "innererror": {
                "code": "ResponsibleAIPolicyViolation",
                "content_filter_result": {
                    "hate": {"filtered": False, "severity": "safe"},
                    "jailbreak": {"filtered": False, "detected": False},
                    "self_harm": {"filtered": True, "severity": "medium"},
                    "sexual": {"filtered": False, "severity": "safe"},
                    "violence": {"filtered": False, "severity": "safe"},
                },
            },
        }
    }
    error = raised(canned, "nemotron", NEMOTRON, body, status=400)
    # Then: the request's, never the provider's; nothing was generated or reported billed
    assert isinstance(error, PromptBlocked) and not error.counts_against_provider
    assert error.status == 400 and error.billed is None
    # and the message says which filter refused it
    assert "content_filter" in str(error) and "self_harm" in str(error)


# -- tool calls that cannot be run -------------------------------------------------------------


def test_claude_tool_use_cut_by_max_tokens_falls_back_billed(canned: Any) -> None:
    # Anthropic: "If Claude's response is cut off due to hitting the max_tokens limit, and the
    # truncated response contains an incomplete tool use block, you'll need to retry the
    # request with a higher max_tokens value" (here: the required "lines" never came)
    body = {
        "id": "msg_01XFDUDYJgAACzvnptvVoYEL",
        "type": "message",
        "role": "assistant",
        "model": CLAUDE,
        "content": [
            {"type": "text", "text": "I'll fetch the logs."},
            {
                "type": "tool_use",
                "id": "toolu_01A09q90qw90lq917835lq9",
                "name": "get_pod_logs",
                "input": {"pod": "api-7"},
            },
        ],
        "stop_reason": "max_tokens",
        "stop_sequence": None,
        "usage": {"input_tokens": 40, "output_tokens": 1024},
    }
    error = raised(canned, "claude", CLAUDE, body, request=TOOLS_REQUEST)
    assert type(error) is UnusableAnswer and not error.counts_against_provider
    assert "cut off by the output limit" in str(error)
    assert billed(error) == (40, 1024)
    assert error.billed is not None and error.billed.tool_calls == []


def _openai_answer(message: dict[str, Any], finish: str) -> dict[str, Any]:
    return {
        "id": "chatcmpl-abc123",
        "object": "chat.completion",
        "created": 1741569952,
        "model": NEMOTRON,
        "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
        "usage": {"prompt_tokens": 210, "completion_tokens": 31, "total_tokens": 241},
    }


def _openai_tool_call(arguments: str, finish: str, name: str = "get_pod_logs") -> dict[str, Any]:
    call = {
        "id": "chatcmpl-tool-8b1c",
        "type": "function",
        "function": {"name": name, "arguments": arguments},
    }
    return _openai_answer({"role": "assistant", "content": None, "tool_calls": [call]}, finish)


@pytest.mark.parametrize(
    ("arguments", "finish", "why"),
    [
        ('{"pod": "api-7", "lines": 50', "tool_calls", "not a JSON object"),
        ("{'pod': 'api-7', 'lines': 50}", "tool_calls", "not a JSON object"),
        ('["api-7", 50]', "tool_calls", "not a JSON object"),
        ('{"pod": "api-7", "li', "length", "not a JSON object"),
        ('{"pod": "api-7"}', "length", "cut off by the output limit"),
    ],
    ids=["unclosed", "single-quotes", "not-an-object", "cut-mid-string", "cut-but-parses"],
)
def test_openai_tool_call_that_cannot_be_run_falls_back_billed(
    canned: Any, arguments: str, finish: str, why: str
) -> None:
    # OpenAI's API reference: "the model does not always generate valid JSON ... Validate the
    # arguments"; a length stop cuts the last call, whether or not what came of it parses
    body = _openai_tool_call(arguments, finish)
    error = raised(canned, "nemotron", NEMOTRON, body, request=TOOLS_REQUEST)
    assert type(error) is UnusableAnswer and not error.counts_against_provider
    assert why in str(error)
    assert billed(error) == (210, 31)


def test_openai_call_without_its_required_arguments_falls_back_billed(canned: Any) -> None:
    # vllm-project/vllm-ascend#14731: "arguments": "{}" for a function that requires its
    # "command"; the producer's function fails without it
    body = _openai_tool_call("{}", "tool_calls")
    error = raised(canned, "nemotron", NEMOTRON, body, request=TOOLS_REQUEST)
    assert type(error) is UnusableAnswer and not error.counts_against_provider
    assert "its call of 'get_pod_logs' leaves out the required 'pod'" in str(error)
    assert billed(error) == (210, 31)


#: A NIM whose tool-call parser does not read the model's form
#: (NVIDIA-AI-Blueprints/retail-shopping-assistant#215): the call as text, stop, no tool_calls.
NIM_CALL_AS_TEXT = _openai_answer(
    {
        "role": "assistant",
        "content": "<tool_call>\n<function=get_pod_logs>\n<parameter=pod>\napi-7\n</parameter>\n"
        "<parameter=lines>\n50\n</parameter>\n</function>\n</tool_call>",
    },
    "stop",
)


def test_openai_call_left_in_the_text_is_never_an_answer(canned: Any) -> None:
    error = raised(canned, "nemotron", NEMOTRON, NIM_CALL_AS_TEXT, request=TOOLS_REQUEST)
    assert type(error) is UnusableAnswer and not error.counts_against_provider
    assert "wrote its call as text" in str(error) and billed(error) == (210, 31)


def test_the_same_text_without_tools_offered_is_an_answer(canned: Any) -> None:
    # Without tools offered the text is what the model answered (a question about the format)
    completion = answer(canned, "nemotron", NEMOTRON, NIM_CALL_AS_TEXT)
    assert completion.text.startswith("<tool_call>")


def test_openai_complete_tool_call_is_still_an_answer(canned: Any) -> None:
    body = _openai_tool_call('{"pod": "api-7", "lines": 50}', "tool_calls")
    completion = answer(canned, "nemotron", NEMOTRON, body, request=TOOLS_REQUEST)
    assert completion.finish_reason == "tool_calls"
    assert [(c.name, c.arguments) for c in completion.tool_calls] == [
        ("get_pod_logs", {"pod": "api-7", "lines": 50})
    ]


def _gemini_call_stop(finish: str, parts: list[dict[str, Any]] | None, message: str | None) -> Any:
    candidate: dict[str, Any] = {"finishReason": finish, "index": 0}
    if parts is not None:
        candidate["content"] = {"role": "model", "parts": parts}
    if message is not None:
        candidate["finishMessage"] = message
    return {
        "candidates": [candidate],
        # only the prompt counted, as python-genai's users report these stops
        "usageMetadata": {"promptTokenCount": 2595, "totalTokenCount": 2595},
        "modelVersion": GEMINI,
    }


@pytest.mark.parametrize(
    ("finish", "parts", "message"),
    [
        # pydantic-ai#3095's recorded candidate: the reason and nothing else
        pytest.param("MALFORMED_FUNCTION_CALL", None, None, id="malformed-bare"),
        # python-genai#1789: finishMessage holds the call the model tried to write
        pytest.param(
            "MALFORMED_FUNCTION_CALL",
            None,
            "Malformed function call: print(default_api.get_pod_logs(pod='api-7', lines=5",
            id="malformed-quoted",
        ),
        # "the turn carries whatever text preceded the broken call and no tool calls"
        pytest.param(
            "MALFORMED_FUNCTION_CALL",
            [{"text": "I'll fetch the logs of api-7 now."}],
            None,
            id="malformed-after-text",
        ),
        # epam/ai-dial-adapter-vertexai#325: the undeclared call in the parts, named in
        # finishMessage
        pytest.param(
            "UNEXPECTED_TOOL_CALL",
            [{"functionCall": {"name": "undeclaredTool", "args": {"arg1": "value1"}}}],
            "Unexpected tool call: Model tried to call an undeclared function: undeclaredTool",
            id="unexpected-tool-call",
        ),
    ],
)
def test_gemini_call_it_could_not_use_is_never_an_answer(
    canned: Any, finish: str, parts: Any, message: str | None
) -> None:
    # FinishReason.MALFORMED_FUNCTION_CALL: "a function call that is syntactically invalid and
    # can't be parsed"; UNEXPECTED_TOOL_CALL: "the generated function is not in the function
    # declaration"
    body = _gemini_call_stop(finish, parts, message)
    error = raised(canned, "gemini", GEMINI, body, request=TOOLS_REQUEST)
    # Then the model's slip on this request: the next provider, billed, never counted
    assert type(error) is UnusableAnswer and not error.counts_against_provider
    assert finish in str(error) and billed(error) == (2595, 0)
    # and the call's text is not kept (the producer's words may be in it)
    assert "api-7" not in str(error)


def test_gemini_undeclared_call_in_a_plain_stop_is_never_an_answer(canned: Any) -> None:
    body = _gemini_candidate("STOP", [{"functionCall": {"name": "delete_pod", "args": {}}}])
    error = raised(canned, "gemini", GEMINI, body, request=TOOLS_REQUEST)
    assert type(error) is UnusableAnswer and "did not offer" in str(error)
    assert "delete_pod" not in str(error)


@pytest.mark.parametrize("finish", ["OTHER", "MALFORMED_RESPONSE", "MISSING_THOUGHT_SIGNATURE"])
@pytest.mark.parametrize(
    "parts", [None, [{"text": "The api is slow because"}]], ids=["no-parts", "partial"]
)
def test_gemini_stop_that_ends_no_answer_is_unusable(canned: Any, finish: str, parts: Any) -> None:
    # FinishReason.OTHER: "stopped generating for a reason not otherwise specified";
    # MALFORMED_RESPONSE: "finishes due to malformed response": whatever text came is not known
    # to be the answer, nor cut where a length stop would say
    error = raised(canned, "gemini", GEMINI, _gemini_candidate(finish, parts))
    assert type(error) is UnusableAnswer and not error.counts_against_provider
    assert finish in str(error) and billed(error) == (12, 7)


@pytest.mark.parametrize(
    ("provider", "model", "body"),
    [
        pytest.param(
            "claude",
            CLAUDE,
            {
                "id": "msg_01",
                "type": "message",
                "role": "assistant",
                "model": CLAUDE,
                "content": [{"type": "tool_use", "id": "t1", "name": "delete_pod", "input": {}}],
                "stop_reason": "tool_use",
                "stop_sequence": None,
                "usage": {"input_tokens": 40, "output_tokens": 9},
            },
            id="claude",
        ),
        pytest.param(
            "nemotron", NEMOTRON, _openai_tool_call("{}", "tool_calls", "delete_pod"), id="nemotron"
        ),
    ],
)
def test_a_call_to_a_function_the_request_did_not_offer_is_never_an_answer(
    canned: Any, provider: str, model: str, body: Any
) -> None:
    error = raised(canned, provider, model, body, request=TOOLS_REQUEST)
    assert type(error) is UnusableAnswer and not error.counts_against_provider
    assert "it calls a function the request did not offer" in str(error)
    # and the name the model made up is not kept (it may echo the prompt)
    assert "delete_pod" not in str(error)


# -- what a stop is called ---------------------------------------------------------------------


@pytest.mark.parametrize("finish", ["ESCALATION", "LANGUAGE"])
@pytest.mark.parametrize(
    "parts", [None, [{"text": "Partial answer before the filter"}]], ids=["no-parts", "partial"]
)
def test_gemini_filtered_answer_is_blocked(canned: Any, finish: str, parts: Any) -> None:
    # FinishReason.ESCALATION ("filtered by an escalation rule") and LANGUAGE ("flagged for
    # using an unsupported language"): Google withheld it, whatever text came
    error = raised(canned, "gemini", GEMINI, _gemini_candidate(finish, parts))
    assert isinstance(error, ContentBlocked) and finish in str(error)
    assert billed(error) == (12, 7)


def test_gemini_continuation_stop_reads_length(canned: Any) -> None:
    # FinishReason.CONTINUATION: "reached the per-request token limit, but generation is not
    # yet complete"
    body = _gemini_candidate("CONTINUATION", [{"text": "Part one"}])
    assert answer(canned, "gemini", GEMINI, body).finish_reason == "length"


def test_claude_context_window_stop_reads_length(canned: Any) -> None:
    # "The response filled the model's context window. Treat the response as truncated."
    body = {
        "id": "msg_01XFDUDYJgAACzvnptvVoYEL",
        "type": "message",
        "role": "assistant",
        "model": CLAUDE,
        "content": [{"type": "text", "text": "A long answer that was cut"}],
        "stop_reason": "model_context_window_exceeded",
        "stop_sequence": None,
        "usage": {"input_tokens": 40, "output_tokens": 9},
    }
    assert answer(canned, "claude", CLAUDE, body).finish_reason == "length"


def test_a_string_where_the_api_documents_an_object_is_still_a_bad_response(
    canned: Any,
) -> None:
    # Claude's tool_use input is an object by the API's schema: a string there is a broken
    # answer of the provider, not the model's slip
    body = {
        "id": "msg_01",
        "type": "message",
        "role": "assistant",
        "model": CLAUDE,
        "content": [{"type": "tool_use", "id": "t1", "name": "get_pod_logs", "input": '{"pod'}],
        "stop_reason": "tool_use",
        "stop_sequence": None,
        "usage": {"input_tokens": 40, "output_tokens": 9},
    }
    error = raised(canned, "claude", CLAUDE, body, request=TOOLS_REQUEST)
    assert isinstance(error, ProviderBadResponse) and error.counts_against_provider
