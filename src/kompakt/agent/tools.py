"""Tools: plain Python functions the agent's model may call.

A function (sync or async) becomes a `Tool`: its name, the first paragraph of its
docstring as the description, and a JSON schema of its arguments built by pydantic
from the type hints (descriptions from the docstring's ``Args:`` section). Calls are
validated against that schema; a bad call, an unknown tool or an exception inside
the tool becomes an error *result* the model can read and correct, never a crash.
Parallel calls of one assistant message run concurrently (sync tools in threads).

>>> def read_file(path: str, max_lines: int = 200) -> str:
...     '''Read a text file.
...
...     Args:
...         path: the file to read.
...         max_lines: stop after this many lines.
...     '''
...     return "..."
>>> t = as_tool(read_file)
>>> t.name, t.description, sorted(t.parameters["properties"]), t.parameters["required"]
('read_file', 'Read a text file.', ['max_lines', 'path'], ['path'])
>>> t.parameters["properties"]["path"]["description"]
'the file to read.'
"""

from __future__ import annotations

import asyncio
import inspect
import json
import re
import warnings
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, get_type_hints

import pydantic
import pydantic_core

from kompakt.errors import ConfigError
from kompakt.messages import Message, ToolCall
from kompakt.models.base import ToolSpec

__all__ = ["Tool", "ToolLike", "as_tool", "execute_calls", "tool"]

ToolLike = Any
"""A `Tool` or a plain function (sync or async)."""

ERROR_PREFIX = "Error: "


@dataclass(frozen=True)
class Tool:
    """A function the model may call, with the JSON schema of its arguments."""

    name: str
    description: str
    parameters: Mapping[str, Any]
    function: Callable[..., Any]
    arguments: type[pydantic.BaseModel]
    """The pydantic model that validates a call's arguments."""

    @property
    def spec(self) -> ToolSpec:
        """What the model is told about the tool."""
        return ToolSpec(self.name, self.description, dict(self.parameters))

    async def run(self, arguments: str | Mapping[str, Any]) -> str:
        """Validate `arguments` (raw JSON text or a dict), call the function, return text.

        Raises `ToolCallError` for arguments that are not JSON or do not match the schema;
        exceptions of the function itself propagate.
        """
        args = _parse(arguments)
        try:
            model = self.arguments.model_validate(args)
        except pydantic.ValidationError as e:
            raise ToolCallError(_describe_validation(e)) from e
        kwargs = {k: getattr(model, k) for k in type(model).model_fields}
        if inspect.iscoroutinefunction(self.function):
            result = await self.function(**kwargs)
        else:
            result = await asyncio.to_thread(self.function, **kwargs)
            if inspect.isawaitable(result):
                result = await result
        return render_result(result)


class ToolCallError(Exception):
    """A call the tool cannot take: the arguments are not JSON or break the schema."""


def tool(
    fn: Callable[..., Any] | None = None, *, name: str | None = None, description: str | None = None
) -> Any:
    """Decorator: make a function a `Tool` (``@tool`` or ``@tool(name=...)``).

    >>> @tool(name="add")
    ... def plus(a: int, b: int) -> int:
    ...     "Add two numbers."
    ...     return a + b
    >>> plus.name, plus.parameters["required"]
    ('add', ['a', 'b'])
    """

    def wrap(f: Callable[..., Any]) -> Tool:
        return as_tool(f, name=name, description=description)

    return wrap(fn) if fn is not None else wrap


def as_tool(obj: ToolLike, *, name: str | None = None, description: str | None = None) -> Tool:
    """A `Tool` from a tool or a function (the schema from its hints and docstring)."""
    if isinstance(obj, Tool):
        return obj
    if not callable(obj):
        raise ConfigError(f"a tool must be a function or a Tool, got {obj!r}")
    fn_name = name or getattr(obj, "__name__", None)
    if not fn_name or not re.match(r"^[A-Za-z0-9_-]{1,64}$", fn_name):
        raise ConfigError(f"tool name must match [A-Za-z0-9_-]{{1,64}}, got {fn_name!r}")
    summary, arg_docs = _parse_docstring(inspect.getdoc(obj) or "")
    model = _arguments_model(obj, fn_name, arg_docs)
    schema = _clean_schema(model.model_json_schema())
    return Tool(fn_name, description or summary, schema, obj, model)


def _arguments_model(
    fn: Callable[..., Any], name: str, docs: Mapping[str, str]
) -> type[pydantic.BaseModel]:
    hints = _hints(fn, name)
    fields: dict[str, Any] = {}
    for p in inspect.signature(fn).parameters.values():
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        annotation = hints.get(p.name, Any)
        default = ... if p.default is p.empty else p.default
        fields[p.name] = (annotation, pydantic.Field(default, description=docs.get(p.name)))
    model: type[pydantic.BaseModel] = pydantic.create_model(
        f"{name}_arguments", __config__=pydantic.ConfigDict(extra="forbid"), **fields
    )
    return model


def _hints(fn: Callable[..., Any], name: str) -> dict[str, Any]:
    """Parameter types; one that cannot be resolved (a string annotation naming a class
    local to a function, say) becomes Any with a warning, and the others keep theirs."""
    try:
        return get_type_hints(fn)
    except Exception:
        pass
    scope = dict(getattr(fn, "__globals__", {}))
    cells = getattr(fn, "__closure__", None) or ()
    for var, cell in zip(fn.__code__.co_freevars, cells, strict=False):
        try:
            scope[var] = cell.cell_contents
        except ValueError:  # an empty cell
            continue
    hints: dict[str, Any] = {}
    for p in inspect.signature(fn).parameters.values():
        annotation = p.annotation
        if annotation is p.empty:
            continue
        try:
            hints[p.name] = eval(annotation, scope) if isinstance(annotation, str) else annotation
        except Exception as e:
            warnings.warn(
                f"tool {name!r}: cannot resolve the type of parameter {p.name!r} "
                f"({annotation!r}: {e}); its schema accepts any value. Define the type "
                "at module level.",
                stacklevel=4,
            )
    return hints


def _clean_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """Drop pydantic's titles (noise for the model) and ensure the object shape."""

    def strip(node: Any) -> Any:
        if isinstance(node, dict):
            return {k: strip(v) for k, v in node.items() if k != "title" or not isinstance(v, str)}
        if isinstance(node, list):
            return [strip(v) for v in node]
        return node

    out: dict[str, Any] = strip(schema)
    out.setdefault("properties", {})
    out.setdefault("required", [])
    return out


_SECTION = re.compile(r"^(Args|Arguments|Parameters|Returns|Raises|Yields|Examples?|Note)s?:\s*$")


def _parse_docstring(doc: str) -> tuple[str, dict[str, str]]:
    """The summary paragraph and the ``Args:`` descriptions of a Google-style docstring."""
    lines = doc.splitlines()
    summary: list[str] = []
    for line in lines:
        if not line.strip() or _SECTION.match(line.strip()) or line.startswith(">>>"):
            break
        summary.append(line.strip())
    args: dict[str, str] = {}
    current: str | None = None
    in_args = False
    arg_indent: int | None = None
    for line in lines:
        stripped = line.strip()
        if _SECTION.match(stripped):
            in_args = stripped.split(":")[0] in ("Args", "Arguments", "Parameters")
            current, arg_indent = None, None
            continue
        if not in_args or not stripped:
            continue
        indent = len(line) - len(line.lstrip())
        m = re.match(r"^(\*{0,2}\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$", stripped)
        if m and (arg_indent is None or indent <= arg_indent):
            arg_indent = indent
            current = m.group(1).lstrip("*")
            args[current] = m.group(2)
        elif current:  # a continuation line: indented deeper than the argument names
            args[current] = (args[current] + " " + stripped).strip()
    return " ".join(summary), args


def _parse(arguments: str | Mapping[str, Any]) -> Any:
    if isinstance(arguments, Mapping):
        return dict(arguments)
    text = arguments.strip() or "{}"
    try:
        value = json.loads(text)
    except (ValueError, RecursionError) as e:
        raise ToolCallError(f"arguments are not valid JSON ({e}): {arguments[:200]!r}") from e
    if not isinstance(value, dict):
        raise ToolCallError(f"arguments must be a JSON object, got {arguments[:200]!r}")
    return value


def _describe_validation(e: pydantic.ValidationError) -> str:
    parts = []
    for err in e.errors()[:5]:
        where = ".".join(str(x) for x in err["loc"]) or "arguments"
        parts.append(f"{where}: {err['msg']}")
    return "invalid arguments: " + "; ".join(parts)


def render_result(result: Any) -> str:
    """A tool's return value as the text of its result message."""
    if isinstance(result, str):
        return result
    if result is None:
        return "(no output)"
    try:
        return pydantic_core.to_json(result).decode()
    except Exception:
        return str(result)


async def execute_calls(
    calls: Iterable[ToolCall],
    tools: Mapping[str, Tool],
    *,
    on_error: Callable[[ToolCall, BaseException], Awaitable[None] | None] | None = None,
) -> list[Message]:
    """Run the calls concurrently; one result message per call, in the calls' order.

    Unknown tools, bad arguments and exceptions become error results
    (``"Error: ..."``, with ``metadata={"error": True}``).

    >>> import asyncio
    >>> def shout(text: str) -> str:
    ...     return text.upper()
    >>> calls = [ToolCall(id="1", name="shout", arguments='{"text": "hi"}'),
    ...          ToolCall(id="2", name="shout", arguments='{"text": '),
    ...          ToolCall(id="3", name="nope")]
    >>> out = asyncio.run(execute_calls(calls, {"shout": as_tool(shout)}))
    >>> [m.text[:40] for m in out]
    ['HI', 'Error: arguments are not valid JSON (Exp', "Error: unknown tool 'nope'; tools: shout"]
    """
    calls = list(calls)

    async def one(call: ToolCall) -> Message:
        t = tools.get(call.name)
        try:
            if t is None:
                known = ", ".join(sorted(tools)) or "none"
                raise ToolCallError(f"unknown tool {call.name!r}; tools: {known}")
            text = await t.run(call.arguments)
        except asyncio.CancelledError:
            raise
        except Exception as e:
            if on_error is not None:
                maybe = on_error(call, e)
                if inspect.isawaitable(maybe):
                    await maybe
            text = ERROR_PREFIX + (
                str(e) if isinstance(e, ToolCallError) else f"{type(e).__name__}: {e}"
            )
            return Message.tool(
                text, tool_call_id=call.id, name=call.name, metadata={"error": True}
            )
        return Message.tool(text, tool_call_id=call.id, name=call.name)

    return list(await asyncio.gather(*(one(c) for c in calls)))
