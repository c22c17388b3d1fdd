"""`ExtractiveModel`: the embedded default "model" that needs no weights and no key.

It answers the requests kompakt's summarizing strategies send with the extractive
digest of the span they carry (in request metadata, never sent anywhere), and a
focused fact question with the digest items that best match the concept, as JSON
when a schema is asked for. So ``model_from_string("extractive")`` works everywhere,
offline and at zero cost.

>>> from kompakt.messages import Message
>>> model = ExtractiveModel()
>>> answer = model.chat_sync([Message.user("Fix the bug in src/app.py, then run tests")])
>>> print(answer.message.text)
## User requests
- Fix the bug in src/app.py, then run tests
## Files touched
- src/app.py
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

from kompakt.messages import Message
from kompakt.models.base import (
    BaseChatModel,
    ChatRequest,
    ChatResponse,
    assistant_response,
    estimate_usage,
)
from kompakt.notes import digest, digest_items
from kompakt.tokens import CharEstimator, Tokenizer

__all__ = ["CONCEPT_KEY", "ExtractiveModel"]

SPAN_KEY = "kompakt.span"
PREVIOUS_KEY = "kompakt.previous"
LIMIT_KEY = "kompakt.max_tokens"
CONCEPT_KEY = "kompakt.concept"
"""Request metadata naming the concept a fact question asks about."""


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


_SECTION_WORDS: dict[str, frozenset[str]] = {
    "requests": _words("goal task request requested asked user primary want aim"),
    "files": _words(
        "structure file files project directory directories module modules paths path "
        "layout code location locations"
    ),
    "identifiers": _words(
        "dependencies dependency version versions library libraries package packages "
        "identifiers names values environment"
    ),
    "decisions": _words(
        "achievements achieved findings finding decisions decided status found key cause "
        "plan pending remain remaining next done progress conclusion"
    ),
    "commands": _words("tool tools results result commands command ran run outcome tests test"),
    "errors": _words("errors error failures failure problems issues bugs findings status"),
    "quoted": _words(
        "facts fact constraints constraint values value settings configuration config versions "
        "version environment tool output"
    ),
    "facts": _words(
        "facts fact constraints constraint rules rule requirements must values value settings "
        "configuration config versions version dependencies environment key findings decisions"
    ),
    "instructions": _words(
        "instructions instruction rules rule preferences preference always never user style "
        "constraints constraint requirements"
    ),
    "earlier": frozenset(),
}
_STOP = _words(
    "the a an of to in on and or is are was were what which this that for with has have been "
    "be by it its so far during current agent"
)
_WORD = re.compile(r"[a-z][a-z0-9]+")


class ExtractiveModel(BaseChatModel):
    """A model-free `ChatModel`: answers with the extractive digest.

    Args:
        max_tokens: size of a summary when the request does not say.
        max_facts: most facts returned for one question.
    """

    def __init__(
        self,
        *,
        max_tokens: int = 800,
        max_facts: int = 6,
        name: str = "extractive",
        tokenizer: Tokenizer | None = None,
    ) -> None:
        super().__init__(name=name, timeout=None, max_retries=0)
        self.max_tokens = max_tokens
        self.max_facts = max_facts
        self.tokenizer: Tokenizer = tokenizer or CharEstimator()

    async def _request(self, request: ChatRequest) -> ChatResponse:
        messages, response_format = request.messages, request.response_format
        span, previous, limit, concept = self._unpack(messages, request.max_tokens)
        if previous:
            span = [Message.user(previous, synthetic="summary"), *span]
        if concept is not None or response_format is not None:
            items = digest_items(span, limit, tokenizer=self.tokenizer)
            facts = self._select(items, concept or _last_user_text(messages))
            text = json.dumps({"facts": facts}, ensure_ascii=False)
        else:
            text = digest(span, limit, tokenizer=self.tokenizer)
        return assistant_response(text, estimate_usage(span, text, self.tokenizer))

    def _unpack(
        self, messages: Sequence[Message], max_tokens: int | None
    ) -> tuple[list[Message], str, int, str | None]:
        limit = max_tokens or self.max_tokens
        for m in reversed(messages):
            meta = m.metadata
            if SPAN_KEY in meta:
                span = list(meta[SPAN_KEY])
                limit = int(meta.get(LIMIT_KEY, limit))
                concept = meta.get(CONCEPT_KEY)
                return span, str(meta.get(PREVIOUS_KEY, "")), limit, concept
        # a plain request: digest what was sent, the instructions left out
        span = [m for m in messages if m.role not in ("system", "developer")]
        return span, "", limit, None

    def _select(self, items: list[tuple[str, str, float]], question: str) -> list[str]:
        words = {w for w in _WORD.findall(question.lower().replace("-", " ")) if w not in _STOP}
        scored: list[tuple[float, int, str]] = []
        for rank, (section, text, score) in enumerate(items):
            affinity = len(words & _SECTION_WORDS.get(section, frozenset()))
            overlap = len(words & set(_WORD.findall(text.lower())))
            if affinity or overlap:
                scored.append((2.0 * affinity + overlap + score / 10, -rank, text))
        scored.sort(reverse=True)
        return [text for _, _, text in scored[: self.max_facts]]


def _last_user_text(messages: Sequence[Message]) -> str:
    return next((m.text for m in reversed(messages) if m.role == "user"), "")
