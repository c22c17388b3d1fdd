"""Microsoft Agent Framework: message conversion and kompakt as a MAF compaction strategy.

Install with ``pip install "kompakt[maf]"``.

* `from_maf` / `to_maf` convert MAF `Message` lists both ways. A ``tool`` message that
  carries several `function_result` contents becomes one kompakt message per result
  and is put back together on the way out; every field survives the round trip.
* `KompaktStrategy` is a MAF `CompactionStrategy` (``async (messages) -> bool``): pass
  it wherever MAF takes one, ``Agent(compaction_strategy=...)``, a chat client's
  ``compaction_strategy=``, or ``CompactionProvider(before_strategy=..., after_strategy=...)``.
  It marks removed originals excluded (MAF keeps them, as kompakt does) and inserts
  kompakt's synthetic messages (collapsed notes, summaries) in their place.

Unlike MAF's own strategies, it does not re-group and re-count the whole list on each
call: only messages it has not seen are indexed.

```python
from agent_framework import Agent
from kompakt import Budgeted, Compactor, TokensExceed
from kompakt.integrations.maf import KompaktStrategy

compactor = Compactor(trigger=TokensExceed(8_000), strategy=Budgeted(6_000))
agent = Agent(client=client, compaction_strategy=KompaktStrategy(compactor))
```
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kompakt.integrations._bridge import Mirror, as_text, dumps, loads_or_text, require
from kompakt.messages import Message, Part, PartKind, ToolCall

__all__ = ["KompaktStrategy", "from_maf", "to_maf"]

_KEY = "maf"
_WHAT = "kompakt.integrations.maf"
_SYNTHETIC = "_kompakt_synthetic"
"""`additional_properties` key marking a message kompakt inserted."""
_EXCLUDED = "_excluded"
_REASON = "_exclude_reason"
_REASON_VALUE = "kompakt"
_DERIVED = "<derived from result>"


def _af() -> Any:
    return require("agent_framework", _WHAT, "maf")


# -- MAF -> kompakt -------------------------------------------------------------------


def from_maf(messages: Sequence[Any]) -> list[Message]:
    """Convert MAF messages to kompakt messages.

    >>> from agent_framework import Message as M
    >>> [(m.role, m.text) for m in from_maf([M("user", ["hi"]), M("assistant", ["yo"])])]
    [('user', 'hi'), ('assistant', 'yo')]
    """
    out: list[Message] = []
    for pos, m in enumerate(messages):
        out.extend(message_from_maf(m, pos))
    return out


def message_from_maf(message: Any, position: int = 0) -> list[Message]:
    """Convert one MAF message (a tool message with several results gives several)."""
    d = message.to_dict()
    contents: list[dict[str, Any]] = d.pop("contents", [])
    role = str(d.get("role", "user"))
    results = [c for c in contents if c.get("type") == "function_result"]
    if role == "tool" and results:
        return _tool_messages(d, contents, position)
    parts: list[Part] = []
    calls: list[ToolCall] = []
    layout: list[str] = []
    for c in contents:
        if c.get("type") == "text":
            parts.append(Part(text=c.get("text") or "", data=_without(c, "text")))
            layout.append("p")
        elif c.get("type") == "function_call" and role == "assistant":
            calls.append(_call_from(c))
            layout.append("c")
        else:
            parts.append(Part(kind=_part_kind(c), data=c))
            layout.append("p")
    src = {"message": d, "src": position, "part": 0, "of": 1, "layout": "".join(layout)}
    return [
        Message(
            role=role if role in ("system", "user", "assistant") else "user",  # type: ignore[arg-type]
            content=tuple(parts),
            tool_calls=tuple(calls),
            name=d.get("author_name"),
            id=d.get("message_id") or "",
            extra={_KEY: src},
        )
    ]


def _tool_messages(d: dict[str, Any], contents: list[dict[str, Any]], pos: int) -> list[Message]:
    out: list[Message] = []
    results = [c for c in contents if c.get("type") == "function_result"]
    others = [c for c in contents if c.get("type") != "function_result"]
    for k, c in enumerate(results):
        result = c.get("result")
        text, is_text = as_text(result)
        rest = _without(c, "result", "call_id")
        if rest.get("items") == [{"type": "text", "text": result, "additional_properties": {}}]:
            # derived from the result: rebuilt from the (possibly clamped) text, never resent
            rest["items"] = _DERIVED
        src = {"message": d, "src": pos, "part": k, "of": len(results), "fields": rest}
        if k == 0 and others:
            src["others"] = others
        mid = d.get("message_id")
        out.append(
            Message.tool(
                text,
                tool_call_id=c.get("call_id") or "",
                id=f"{mid}#{k}" if mid and len(results) > 1 else (mid or ""),
                extra={_KEY: {**src, "json": not is_text}},
            )
        )
    return out


def _call_from(c: dict[str, Any]) -> ToolCall:
    args = c.get("arguments")
    extra = _without(c, "call_id", "name", "arguments")
    extra["args_form"] = "str" if isinstance(args, str) else ("none" if args is None else "dict")
    text = args if isinstance(args, str) else dumps(args if args is not None else {})
    return ToolCall(
        id=c.get("call_id") or "", name=c.get("name") or "", arguments=text, extra=extra
    )


def _without(d: dict[str, Any], *keys: str) -> dict[str, Any]:
    return {k: v for k, v in d.items() if k not in keys}


def _part_kind(c: dict[str, Any]) -> PartKind:
    media = str(c.get("media_type") or "")
    for name in ("image", "audio"):
        if media.startswith(name):
            return name
    return "file" if c.get("type") in ("data", "uri", "hosted_file") else "other"


# -- kompakt -> MAF -------------------------------------------------------------------


def to_maf(messages: Sequence[Message]) -> list[Any]:
    """Convert kompakt messages to MAF messages (the inverse of `from_maf`).

    Messages kompakt made are marked with ``additional_properties["_kompakt_synthetic"]``.

    >>> [m.role for m in to_maf([Message.user("hi"), Message.assistant("yo")])]
    ['user', 'assistant']
    """
    af = _af()
    dicts: list[dict[str, Any]] = []
    last: tuple[int, int] | None = None
    for m in messages:
        src = m.extra.get(_KEY) or {}
        if m.role == "tool":
            key = (src["src"], src["part"]) if "src" in src and m.synthetic is None else None
            content = _result_dict(m, src)
            if key is not None and last is not None and key == (last[0], last[1] + 1):
                dicts[-1]["contents"].append(content)
            else:
                env = _envelope(m, src)
                dicts.append({**env, "role": "tool", "contents": [content, *src.get("others", [])]})
            last = key
            continue
        last = None
        dicts.append({**_envelope(m, src), "role": m.role, "contents": _contents(m, src)})
    return [af.Message.from_dict(d) for d in dicts]


def _envelope(m: Message, src: dict[str, Any]) -> dict[str, Any]:
    if m.synthetic is None and src.get("message"):
        return dict(src["message"])
    props: dict[str, Any] = {}
    if m.synthetic is not None:
        props[_SYNTHETIC] = {"kind": m.synthetic, "covers": list(m.covers), "id": m.id}
    env: dict[str, Any] = {"type": "message", "message_id": m.id, "additional_properties": props}
    if m.name:
        env["author_name"] = m.name
    return env


def _result_dict(m: Message, src: dict[str, Any]) -> dict[str, Any]:
    fields = dict(src.get("fields") or {"type": "function_result"})
    result: Any = loads_or_text(m.text) if src.get("json") else m.text
    if fields.get("items") == _DERIVED:
        fields["items"] = [{"type": "text", "text": m.text, "additional_properties": {}}]
    return {**fields, "call_id": m.tool_call_id, "result": result}


def _contents(m: Message, src: dict[str, Any]) -> list[dict[str, Any]]:
    layout = src.get("layout") or ""
    if layout.count("p") != len(m.content) or layout.count("c") != len(m.tool_calls):
        layout = "p" * len(m.content) + "c" * len(m.tool_calls)
    parts, calls = iter(m.content), iter(m.tool_calls)
    out: list[dict[str, Any]] = []
    for slot in layout:
        if slot == "p":
            p = next(parts)
            text = {"type": "text", "additional_properties": {}, **dict(p.data), "text": p.text}
            out.append(text if p.kind == "text" else dict(p.data))
        else:
            c = next(calls)
            extra = dict(c.extra)
            form = extra.pop("args_form", "str")
            args: Any = c.arguments
            if form == "dict":
                args = loads_or_text(c.arguments)
            elif form == "none":
                args = None
            out.append(
                {
                    "type": "function_call",
                    **extra,
                    "call_id": c.id,
                    "name": c.name,
                    "arguments": args,
                }
            )
    return out


# -- wiring ---------------------------------------------------------------------------


def _excluded(message: Any) -> bool:
    return bool(message.additional_properties.get(_EXCLUDED))


class KompaktStrategy:
    """kompakt as a MAF `CompactionStrategy`: ``await strategy(messages) -> changed``.

    The list is edited in place as MAF expects: originals kompakt removes are marked
    excluded (``_excluded``, reason ``"kompakt"``), synthetic messages are inserted where
    the groups they stand for were, and this strategy's earlier insertions are replaced.
    Messages another strategy (or an earlier phase) excluded are left alone, and notes
    it inserted are kept as ordinary messages.

    ```python
    agent = Agent(client=client, compaction_strategy=KompaktStrategy(compactor))
    ```
    """

    def __init__(self, compactor: Any) -> None:
        self.mirror = Mirror(compactor, message_from_maf, to_maf)
        # identity, not a flag: a note another instance (or phase) inserted is an original here
        self._inserted: dict[int, Any] = {}
        self._excluded: dict[int, Any] = {}

    @property
    def events(self) -> list[Any]:
        """Every compaction event so far."""
        return self.mirror.events

    async def __call__(self, messages: list[Any]) -> bool:
        async with self.mirror.alock:
            inserted, mine = self._inserted, self._excluded
            source = [
                m
                for m in messages
                if id(m) not in inserted
                and (id(m) in mine or not m.additional_properties.get(_EXCLUDED))
            ]
            self.mirror.sync(source)
            await self.mirror.acompact()
            rendered = self.mirror.render()
            if self.mirror.last_render_reused:
                return False  # only new originals, sent as they are: nothing to mark
            return self._write_back(messages, source, rendered)

    def _write_back(self, messages: list[Any], source: list[Any], rendered: list[Any]) -> bool:
        sent = {id(m) for m in rendered}
        changed = False
        for m in source:
            excluded = id(m) not in sent
            props = m.additional_properties
            if excluded:
                self._excluded[id(m)] = m
            else:
                self._excluded.pop(id(m), None)
            if excluded != _excluded(m):
                props[_EXCLUDED] = excluded
                if excluded:
                    props[_REASON] = _REASON_VALUE
                else:
                    props.pop(_REASON, None)
                changed = True
        # rebuild: each original in place, kompakt's messages before the next one sent
        old = [m for m in messages if id(m) in self._inserted]
        out: list[Any] = []
        queue = iter(rendered)
        for m in messages:
            if id(m) in self._inserted:
                continue
            if id(m) in sent:
                for r in queue:
                    out.append(r)
                    if r is m:
                        break
            else:
                out.append(m)
        out.extend(queue)
        sources = {id(m) for m in source}
        self._inserted = {id(r): r for r in rendered if id(r) not in sources}
        new = list(self._inserted.values())
        if [_key(m) for m in new] != [_key(m) for m in old]:
            changed = True
        messages[:] = out
        return changed


def _key(m: Any) -> Any:
    return (m.message_id, m.text)
