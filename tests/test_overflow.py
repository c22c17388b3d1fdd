"""`parse_overflow` on the error bodies each provider really returns.

The bodies are written from the providers' documented and observed answers (status,
shape, wording); the numbers are the ones the providers put in their messages.
"""

from __future__ import annotations

import json
from typing import Any

import anthropic
import httpx
import openai
import pytest

import kompakt
from kompakt import ModelError, Overflow, parse_overflow

OPENAI_CHAT = {
    "error": {
        "message": "This model's maximum context length is 128000 tokens. However, your "
        "messages resulted in 130218 tokens. Please reduce the length of the messages.",
        "type": "invalid_request_error",
        "param": "messages",
        "code": "context_length_exceeded",
    }
}
OPENAI_RESPONSES = {
    "error": {
        "message": "Your input exceeds the context window of this model. Please adjust your "
        "input and try again.",
        "type": "invalid_request_error",
        "param": "input",
        "code": "context_length_exceeded",
    }
}
# the same error as a Responses stream event, and as a failed response object
OPENAI_RESPONSES_STREAM = {
    "type": "error",
    "sequence_number": 2,
    "error": {
        "type": "invalid_request_error",
        "code": "context_length_exceeded",
        "message": "Your input exceeds the context window of this model. Please adjust your "
        "input and try again.",
        "param": "input",
    },
}
OPENAI_RESPONSES_FAILED = {
    "type": "response.failed",
    "response": {
        "id": "resp_67c9fdcecf488190bdd9a0409de3a1ec07b8b0ad4e5eb654",
        "object": "response",
        "status": "failed",
        "error": {
            "code": "context_length_exceeded",
            "message": "Your input exceeds the context window of this model. Please adjust "
            "your input and try again.",
        },
    },
}
AZURE = {
    "error": {
        "message": "This model's maximum context length is 32768 tokens. However, you "
        "requested 35969 tokens (9969 in the messages, 26000 in the completion). Please "
        "reduce the length of the messages or completion.",
        "type": "invalid_request_error",
        "param": "messages",
        "code": "context_length_exceeded",
    }
}
ANTHROPIC = {
    "type": "error",
    "error": {
        "type": "invalid_request_error",
        "message": "prompt is too long: 200251 tokens > 200000 maximum",
    },
    "request_id": "req_011CWdepJvA2D819tdYYq4h7",
}
ANTHROPIC_WITH_MAX_TOKENS = {
    "type": "error",
    "error": {
        "type": "invalid_request_error",
        "message": "input length and `max_tokens` exceed context limit: 199759 + 8192 > "
        "200000, decrease input length or `max_tokens` and try again",
    },
}
GEMINI = {
    "error": {
        "code": 400,
        "message": "The input token count (1196265) exceeds the maximum number of tokens "
        "allowed (1048576).",
        "status": "INVALID_ARGUMENT",
    }
}
GEMINI_LIST = [
    {
        "error": {
            "code": 400,
            "message": "The input token count (314175) exceeds the maximum number of tokens "
            "allowed (131072).",
            "errors": [
                {
                    "message": "The input token count (314175) exceeds the maximum number of "
                    "tokens allowed (131072).",
                    "domain": "global",
                    "reason": "badRequest",
                }
            ],
            "status": "INVALID_ARGUMENT",
        }
    }
]
VLLM = {
    "object": "error",
    "message": "This model's maximum context length is 16384 tokens. However, you requested "
    "122946 tokens (112946 in the messages, 10000 in the completion). Please reduce the "
    "length of the messages or completion.",
    "type": "BadRequestError",
    "param": None,
    "code": 400,
}
VLLM_NESTED = {
    "error": {
        "message": "This model's maximum context length is 32768 tokens. However, your request "
        "has 40000 input tokens. Please reduce the length of the input messages.",
        "type": "BadRequestError",
        "param": None,
        "code": 400,
    }
}
VLLM_MAX_TOKENS = {
    "error": {
        "message": "'max_tokens' or 'max_completion_tokens' is too large: 8192. This model's "
        "maximum context length is 8192 tokens and your request has 1210 input tokens "
        "(8192 > 8192 - 1210).",
        "type": "BadRequestError",
        "param": None,
        "code": 400,
    }
}
LLAMA_CPP = {
    "error": {
        "code": 400,
        "message": "request (4476 tokens) exceeds the available context size (4096 tokens), "
        "try increasing it",
        "type": "exceed_context_size_error",
        "n_prompt_tokens": 4476,
        "n_ctx": 4096,
    }
}
LLAMA_CPP_OLDER = {
    "error": {
        "code": 400,
        "message": "the request exceeds the available context size, try increasing it",
        "type": "exceed_context_size_error",
        "n_prompt_tokens": 9001,
        "n_ctx": 8192,
    }
}
OLLAMA = {
    "error": json.dumps(
        {
            "error": {
                "code": 400,
                "message": "request (351 tokens) exceeds the available context size "
                "(256 tokens), try increasing it",
                "type": "exceed_context_size_error",
                "n_prompt_tokens": 351,
                "n_ctx": 256,
            }
        }
    )
}
OLLAMA_EMBED = {"error": "the input length exceeds the context length"}

# (body, provider, limit, requested, tokens_over)
CASES: list[tuple[str, Any, str, int | None, int | None, int | None]] = [
    ("openai chat", OPENAI_CHAT, "openai", 128000, 130218, 2218),
    ("openai responses", OPENAI_RESPONSES, "openai", None, None, None),
    ("openai responses stream", OPENAI_RESPONSES_STREAM, "openai", None, None, None),
    ("openai responses failed", OPENAI_RESPONSES_FAILED, "openai", None, None, None),
    ("anthropic", ANTHROPIC, "anthropic", 200000, 200251, 251),
    ("anthropic max_tokens", ANTHROPIC_WITH_MAX_TOKENS, "anthropic", 200000, 207951, 7951),
    ("gemini", GEMINI, "gemini", 1048576, 1196265, 147689),
    ("gemini list", GEMINI_LIST, "gemini", 131072, 314175, 183103),
    ("vllm", VLLM, "vllm", 16384, 122946, 106562),
    ("vllm nested", VLLM_NESTED, "vllm", 32768, 40000, 7232),
    ("vllm max_tokens", VLLM_MAX_TOKENS, "vllm", 8192, 9402, 1210),
    ("llama.cpp", LLAMA_CPP, "llama.cpp", 4096, 4476, 380),
    ("llama.cpp older", LLAMA_CPP_OLDER, "llama.cpp", 8192, 9001, 809),
    ("ollama", OLLAMA, "ollama", 256, 351, 95),
    ("ollama embed", OLLAMA_EMBED, "ollama", None, None, None),
]


@pytest.mark.parametrize(
    ("body", "provider", "limit", "requested", "over"),
    [c[1:] for c in CASES],
    ids=[c[0] for c in CASES],
)
def test_each_provider_overflow_body_is_recognised_as_dict_text_and_bytes(
    body: Any, provider: str, limit: int | None, requested: int | None, over: int | None
) -> None:
    for form in (body, json.dumps(body), json.dumps(body).encode()):
        found = parse_overflow(form)
        assert found is not None, form
        assert (found.provider, found.limit, found.requested, found.tokens_over) == (
            provider,
            limit,
            requested,
            over,
        )
        assert found.message


def test_the_answer_reserve_is_told_apart_from_the_prompt() -> None:
    found = parse_overflow(VLLM)
    assert found is not None
    assert (found.output_tokens, found.input_tokens, found.input_limit) == (10000, 112946, 6384)
    anth = parse_overflow(ANTHROPIC_WITH_MAX_TOKENS)
    assert anth is not None
    assert (anth.input_tokens, anth.input_limit) == (199759, 191808)


NOT_OVERFLOW = [
    {
        "error": {
            "type": "rate_limit_error",
            "message": "Number of request tokens has exceeded your per-minute rate limit",
        }
    },
    {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
    {
        "error": {
            "message": "Incorrect API key provided: sk-...",
            "type": "invalid_request_error",
            "param": None,
            "code": "invalid_api_key",
        }
    },
    {
        "error": {
            "message": "Invalid parameter: messages with role 'tool' must be a response to "
            "a preceeding message with 'tool_calls'.",
            "type": "invalid_request_error",
            "param": "messages.[1].role",
            "code": None,
        }
    },
    {
        "error": {
            "code": 400,
            "message": "API key not valid. Please pass a valid API key.",
            "status": "INVALID_ARGUMENT",
        }
    },
    {"error": {"code": 500, "message": "Loading model", "type": "unavailable_error"}},
    {"error": "model 'llama9' not found"},
    "Internal Server Error",
    b"",
    None,
    42,
    {"choices": [{"message": {"role": "assistant", "content": "maximum context length is 8"}}]},
]


@pytest.mark.parametrize("body", NOT_OVERFLOW)
def test_other_errors_are_not_overflows(body: Any) -> None:
    assert parse_overflow(body) is None


def _response(status: int, body: Any, url: str, headers: dict[str, str] | None = None) -> Any:
    request = httpx.Request("POST", url)
    return httpx.Response(status, json=body, request=request, headers=headers)


def test_an_httpx_response_from_azure_is_told_from_openai() -> None:
    url = "https://contoso.openai.azure.com/openai/deployments/gpt-4o/chat/completions"
    found = parse_overflow(_response(400, AZURE, url, {"apim-request-id": "3f2a"}))
    assert found is not None
    assert (found.provider, found.limit, found.requested, found.output_tokens) == (
        "azure",
        32768,
        35969,
        26000,
    )
    assert found.status_code == 400
    plain = parse_overflow(_response(400, AZURE, "https://api.openai.com/v1/chat/completions"))
    assert plain is not None and plain.provider == "openai"


def test_sdk_exceptions_are_read_through_their_body_and_response() -> None:
    url = "https://api.openai.com/v1/chat/completions"
    exc = openai.BadRequestError(
        "Error code: 400", response=_response(400, OPENAI_CHAT, url), body=OPENAI_CHAT["error"]
    )
    found = parse_overflow(exc)
    assert found is not None and (found.provider, found.tokens_over, found.status_code) == (
        "openai",
        2218,
        400,
    )
    aexc = anthropic.BadRequestError(
        "Error code: 400",
        response=_response(400, ANTHROPIC, "https://api.anthropic.com/v1/messages"),
        body=ANTHROPIC,
    )
    found = parse_overflow(aexc)
    assert found is not None and (found.provider, found.limit) == ("anthropic", 200000)


def test_a_wrapped_model_error_is_read_through_its_cause() -> None:
    url = "http://127.0.0.1:8080/v1/chat/completions"
    cause = openai.BadRequestError(
        "Error code: 400", response=_response(400, LLAMA_CPP, url), body=LLAMA_CPP["error"]
    )
    try:
        try:
            raise cause
        except openai.BadRequestError as exc:
            raise ModelError("openai:qwen3: Error code: 400") from exc
    except ModelError as wrapped:
        found = parse_overflow(wrapped)
    assert found is not None and (found.provider, found.limit, found.requested) == (
        "llama.cpp",
        4096,
        4476,
    )


def test_an_exception_with_only_text_is_read_from_its_message() -> None:
    exc = RuntimeError(f"Error code: 400 - {OPENAI_CHAT!r}")  # how the SDK's message reads
    found = parse_overflow(exc)
    assert found is not None and (found.limit, found.requested) == (128000, 130218)
    assert parse_overflow(RuntimeError("connection reset")) is None


def test_the_provider_hint_names_who_answered_an_openai_shaped_body() -> None:
    found = parse_overflow(OPENAI_CHAT, provider="azure")
    assert found is not None and found.provider == "azure"


def test_overflow_is_exported() -> None:
    assert kompakt.Overflow is Overflow and kompakt.parse_overflow is parse_overflow


def test_an_overflow_answered_with_a_5xx_is_not_retried() -> None:
    from kompakt.models.base import is_transient

    url = "http://127.0.0.1:8080/v1/chat/completions"
    older_llama = {
        "error": {
            "code": 500,
            "message": "the request exceeds the available context size, try increasing it",
            "type": "server_error",
        }
    }
    exc = openai.InternalServerError(
        "Error code: 500", response=_response(500, older_llama, url), body=older_llama["error"]
    )
    assert not is_transient(exc)
    busy = {"error": {"code": 503, "message": "Loading model", "type": "unavailable_error"}}
    assert is_transient(
        openai.InternalServerError("Error code: 503", response=_response(503, busy, url), body=busy)
    )
