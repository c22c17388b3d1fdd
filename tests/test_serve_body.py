"""`kompakt.serve.body`: a body read from where the last one of its conversation ended
gives what parsing it whole gives, and anything else is refused (the caller parses it)."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from kompakt.serve.body import scan

_text = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=30)
_value = st.recursive(
    st.none() | st.booleans() | st.integers() | _text,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_text, inner, max_size=3),
    max_leaves=8,
)
_message = st.fixed_dictionaries(
    {"role": st.sampled_from(["user", "assistant", "tool"]), "content": _text}
)
_fields = st.dictionaries(_text.filter(lambda k: k != "messages"), _value, max_size=3)


def _dump(head: dict[str, Any], messages: list[Any], tail: dict[str, Any], compact: bool) -> bytes:
    body = {**head, "messages": messages, **{k: v for k, v in tail.items() if k not in head}}
    separators = (",", ":") if compact else (", ", ": ")
    return json.dumps(body, ensure_ascii=False, separators=separators).encode()


@settings(max_examples=150, deadline=None)
@given(
    head=_fields,
    tail=_fields,
    later_tail=_fields,
    first=st.lists(_message, min_size=1, max_size=4),
    more=st.lists(_message, max_size=4),
    compact=st.booleans(),
)
def test_a_body_followed_reads_as_the_whole_body_does(
    head: dict[str, Any],
    tail: dict[str, Any],
    later_tail: dict[str, Any],
    first: list[Any],
    more: list[Any],
    compact: bool,
) -> None:
    raw = _dump(head, first, tail, compact)
    body = scan(raw, "messages")
    assert body is not None
    assert body.new == first
    whole = json.loads(raw)
    assert {**body.fields, "messages": body.new} == whole
    later = _dump(head, first + more, later_tail, compact)
    nxt = body.follow(later)
    if nxt is None:  # only when the bytes before the messages differ (a changed field order)
        assert not later.startswith(raw[: body.end])
        return
    assert nxt.new == more and nxt.count == len(first) + len(more)
    assert {**nxt.fields, "messages": first + more} == json.loads(later)
    spliced = json.loads(nxt.splice(json.dumps(["x"]).encode()))
    assert spliced == {**json.loads(later), "messages": ["x"]}
    again = scan(later, "messages")
    assert again is not None and (again.end, again.close) == (nxt.end, nxt.close)


def test_an_edited_shorter_or_strange_body_is_refused() -> None:
    raw = b'{"model": "m", "messages": [{"role": "user", "content": "h\xc3\xa9"}], "n": 1}'
    body = scan(raw, "messages")
    assert body is not None and body.new == [{"role": "user", "content": "hé"}]
    assert body.follow(raw.replace(b"h\xc3\xa9", b"ho")) is None  # edited
    assert body.follow(raw[:-1]) is None  # cut short
    assert body.follow(raw.replace(b"}], ", b"}, 7 8], ")) is None  # not JSON
    assert body.follow(raw.replace(b'"n": 1}', b'"n": 1, "messages": []}')) is None  # twice
    for strange in (b"[1, 2]", b'{"messages": {}}', b'{"model": "m"}', b'{"messages": [1]} x'):
        assert scan(strange, "messages") is None
