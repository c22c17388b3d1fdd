"""Error responses in the shape each provider's clients expect.

OpenAI: ``{"error": {"message", "type", "param", "code"}}``; Anthropic:
``{"type": "error", "error": {"type", "message"}}``. The official SDKs turn both into
their own exception with the message intact.

>>> error_body("anthropic", "invalid_request_error", "messages: must be a list")
{'type': 'error', 'error': {'type': 'invalid_request_error', 'message': 'messages: must be a list'}}
"""

from __future__ import annotations

from typing import Any

from starlette.responses import JSONResponse

from kompakt.serve.config import Api

__all__ = ["error_body", "error_response"]


def error_body(api: Api, kind: str, message: str) -> dict[str, Any]:
    """The JSON body of an error of type `kind` for `api`'s clients."""
    if api == "anthropic":
        return {"type": "error", "error": {"type": kind, "message": message}}
    return {"error": {"message": message, "type": kind, "param": None, "code": None}}


_KIND = {
    400: "invalid_request_error",
    401: "authentication_error",
    404: "not_found_error",
    413: "request_too_large",
    502: "api_error",
    504: "timeout_error",
}


def error_response(api: Api, status: int, message: str) -> JSONResponse:
    """A JSON error response with `status`, typed as the provider would."""
    return JSONResponse(
        error_body(api, _KIND.get(status, "api_error"), message),
        status_code=status,
        headers={"x-kompakt-error": "1"},
    )
