"""Tokenizers: sensible estimates in every script, exact offline counts, documented overheads."""

from __future__ import annotations

from pathlib import Path

import pytest

from kompakt.errors import ConfigError
from kompakt.messages import IMAGE_TOKENS, Message, Part, ToolCall
from kompakt.tokens import (
    FILE_TOKENS,
    MESSAGE_OVERHEAD,
    TOOL_CALL_OVERHEAD,
    CharEstimator,
    HFTokenizer,
    TiktokenTokenizer,
    Tokenizer,
)

SAMPLES = {
    "english": "The quick brown fox jumps over the lazy dog. " * 20,
    "code": "def add(a: int, b: int) -> int:\n    return a + b\n" * 20,
    "japanese": "日本語のテキストを正しく数えることが大切です。" * 20,
    "chinese": "这是一个用于测试的中文句子。" * 20,
    "korean": "안녕하세요 세계, 반갑습니다. " * 20,
    "russian": "Привет, как дела? Всё хорошо. " * 20,
}


@pytest.fixture(scope="module")
def cl100k() -> TiktokenTokenizer:
    return TiktokenTokenizer("cl100k_base")


def test_both_are_tokenizers(cl100k: TiktokenTokenizer) -> None:
    assert isinstance(CharEstimator(), Tokenizer) and isinstance(cl100k, Tokenizer)


def test_char_estimator_latin() -> None:
    tok = CharEstimator()
    assert tok.count_text("") == 0
    assert tok.count_text("abcd") == 1 and tok.count_text("abcde") == 2
    assert CharEstimator(chars_per_token=2).count_text("abcdef") == 3
    assert CharEstimator(chars_per_token=3.5).count_text("a" * 7) == 2


def test_char_estimator_rejects_bad_ratio() -> None:
    with pytest.raises(ConfigError, match="`chars_per_token` must be > 0, got 0"):
        CharEstimator(chars_per_token=0)


@pytest.mark.parametrize("script", sorted(SAMPLES))
def test_char_estimate_is_within_2x_of_cl100k(script: str, cl100k: TiktokenTokenizer) -> None:
    """No script is inflated ~3x (MAF #7022) or counted 4x too cheap."""
    text = SAMPLES[script]
    exact, estimate = cl100k.count_text(text), CharEstimator().count_text(text)
    assert exact / 2 <= estimate <= exact * 2, (script, exact, estimate)


def test_cjk_counts_a_token_per_ideograph() -> None:
    assert CharEstimator().count_text("日本語") == 3
    assert CharEstimator().count_text("日本語 and text") == 3 + 3  # " and text" = 9 chars / 4


def test_tiktoken_offline_exact_counts(cl100k: TiktokenTokenizer) -> None:
    assert cl100k.count_text("hello world") == 2
    assert cl100k.count_text("") == 0
    assert cl100k.count_text("<|endoftext|>") > 1  # special tokens are plain text here
    assert cl100k.count_text("日本語のテキストを数える") == 12
    assert cl100k.count_text("The quick brown fox jumps over the lazy dog.") == 10


def test_message_overheads_are_as_documented(cl100k: TiktokenTokenizer) -> None:
    assert (MESSAGE_OVERHEAD, TOOL_CALL_OVERHEAD, IMAGE_TOKENS, FILE_TOKENS) == (4, 8, 765, 256)
    assert cl100k.count_message(Message.user("hello world")) == MESSAGE_OVERHEAD + 2
    assert cl100k.count_message(Message.user("")) == MESSAGE_OVERHEAD
    call = ToolCall(id="c1", name="read_file", arguments='{"path": "a.py"}')
    expected = (
        MESSAGE_OVERHEAD
        + TOOL_CALL_OVERHEAD
        + cl100k.count_text("read_file")
        + cl100k.count_text('{"path": "a.py"}')
    )
    assert cl100k.count_message(Message.assistant(tool_calls=[call])) == expected
    image = Part(kind="image", data={"type": "image_url", "image_url": {"url": "x"}})
    pdf = Part(kind="file", text="pdf text", data={"type": "file"})
    msg = Message(role="user", content=(Part(text="hello world"), image, pdf))
    assert cl100k.count_message(msg) == (
        MESSAGE_OVERHEAD + 2 + IMAGE_TOKENS + FILE_TOKENS + cl100k.count_text("pdf text")
    )


class Counting(CharEstimator):
    def __init__(self) -> None:
        super().__init__()
        self.calls = 0

    def count_text(self, text: str) -> int:
        self.calls += 1
        return super().count_text(text)


def test_counts_are_cached_by_digest() -> None:
    tok = Counting()
    m = Message.user("a long message " * 100)
    first = tok.count_message(m)
    calls = tok.calls
    assert tok.count_message(m) == first and tok.calls == calls
    same_content = m.evolve(id="other-id", pinned=True)  # same digest: what the provider sees
    assert tok.count_message(same_content) == first and tok.calls == calls
    tok.count_message(Message.user("different"))
    assert tok.calls == calls + 1


def test_o200k_without_its_file_names_what_is_missing(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not found"):
        TiktokenTokenizer("o200k_base", file=tmp_path / "o200k_base.tiktoken")


def test_hf_tokenizer_from_a_file(tmp_path: Path) -> None:
    from tokenizers import Tokenizer as HF
    from tokenizers.models import WordLevel
    from tokenizers.pre_tokenizers import Whitespace

    vocab = {"[UNK]": 0, "hello": 1, "world": 2}
    hf = HF(WordLevel(vocab=vocab, unk_token="[UNK]"))
    hf.pre_tokenizer = Whitespace()
    path = tmp_path / "tokenizer.json"
    hf.save(str(path))
    tok = HFTokenizer(path)
    assert tok.count_text("hello world again") == 3
    assert tok.count_message(Message.user("hello world")) == MESSAGE_OVERHEAD + 2
    with pytest.raises(ConfigError, match="tokenizer file not found"):
        HFTokenizer(tmp_path / "missing.json")
