"""`ExtractiveModel`: the embedded default "model" that needs no weights and no key.

It answers a request with the extractive digest of what was sent (the system prompt left
out), and a question asking for JSON with the digest items that best match it. So
``model_from_string("extractive")`` works everywhere, offline and at zero cost.
kompakt's own strategies never send it a request: given it as their summarizer, they
run the digest on the span directly (`kompakt.DigestSummarizer`).

>>> from kompakt.messages import Message
>>> model = ExtractiveModel()
>>> reply = model.chat_sync([Message.user("Fix the bug in src/app.py, then run tests")])
>>> print(reply.message.text)
## User requests
- Fix the bug in src/app.py, then run tests
## Files touched
- src/app.py
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from kompakt._deprecation import renamed_options
from kompakt.messages import Message
from kompakt.models.base import (
    BaseChatModel,
    ChatRequest,
    ChatResponse,
    assistant_response,
    estimate_usage,
)
from kompakt.notes import digest
from kompakt.notes.answer import answer
from kompakt.tokens import CharEstimator, Tokenizer

__all__ = ["ExtractiveModel"]


class ExtractiveModel(BaseChatModel):
    """A model-free `ChatModel`: answers with the extractive digest.

    Args:
        max_output_tokens: size of a summary when the request does not say.
        max_facts: most facts returned for one question.
    """

    @renamed_options(max_tokens="max_output_tokens")
    def __init__(
        self,
        *,
        max_output_tokens: int = 800,
        max_facts: int = 6,
        name: str = "extractive",
        tokenizer: Tokenizer | None = None,
    ) -> None:
        super().__init__(name=name, timeout=None, max_retries=0)
        self.max_output_tokens = max_output_tokens
        self.max_facts = max_facts
        self.tokenizer: Tokenizer = tokenizer or CharEstimator()

    async def _request(self, request: ChatRequest) -> ChatResponse:
        messages, response_format = request.messages, request.response_format
        limit = request.max_output_tokens or self.max_output_tokens
        span = [m for m in messages if m.role not in ("system", "developer")]  # what was sent
        if response_format is not None:
            facts = answer(
                span,
                _last_user_text(messages),
                max_facts=self.max_facts,
                max_tokens=limit,
                tokenizer=self.tokenizer,
            )
            text = json.dumps({"facts": facts}, ensure_ascii=False)
        else:
            text = digest(span, limit, tokenizer=self.tokenizer)
        return assistant_response(text, estimate_usage(span, text, self.tokenizer))


def _last_user_text(messages: Sequence[Message]) -> str:
    return next((m.text for m in reversed(messages) if m.role == "user"), "")
