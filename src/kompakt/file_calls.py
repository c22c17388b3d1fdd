"""Which file a tool call read, wrote or edited.

Agents touch files two ways: file tools with a path argument (``read_file(path=...)``,
``str_replace_editor(command="view", path=...)``, ``write_file(path, content)``,
SWE-agent's ``open``/``create``), and shell commands (mini-swe-agent's only tool:
``cat f``, ``sed -n '10,40p' f``, ``nl -ba f | sed -n ...``, ``cat > f << 'EOF'``,
``sed -i ... f``). `touched_file` recognises both and says what kind of touch it was;
for a write whose content is in the call (a heredoc, a ``content`` argument), it
carries that content.

>>> from kompakt.messages import ToolCall
>>> touched_file(ToolCall(id="c", name="bash",
...     arguments='{"command": "cd /testbed && sed -n \\'10,40p\\' django/db/query.py"}'))
FileTouch(path='/testbed/django/db/query.py', kind='read', content=None)
>>> touched_file(ToolCall(id="c", name="read_file", arguments='{"path": "a.py"}'))
FileTouch(path='a.py', kind='read', content=None)
>>> touched_file(ToolCall(id="c", name="bash", arguments='{"command": "ls -la"}')) is None
True
"""

from __future__ import annotations

import os.path
import re
import shlex
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias

from kompakt.messages import ToolCall

__all__ = ["FileTouch", "TouchKind", "file_key", "touched_file"]

TouchKind: TypeAlias = Literal["read", "write", "edit"]

PATH_ARGS = ("path", "file_path", "filename", "file", "target_file", "notebook_path")
"""Argument names file tools give the path in."""
CONTENT_ARGS = ("content", "file_text", "contents", "text")
"""Argument names a writing tool gives the whole new content in."""
SHELL_ARGS = ("command", "cmd", "script")
"""Argument names a shell tool gives the command in."""

_READERS = frozenset({"cat", "head", "tail", "nl", "less", "more", "bat", "sed", "awk"})
_WRITERS = frozenset({"cat", "echo", "printf", "tee"})
"""Programs whose ``>`` redirect writes a file of the agent's (not a program's output)."""
_VALUE_OPTIONS = {"head": ("-n", "-c"), "tail": ("-n", "-c"), "awk": ("-F", "-v")}
_EDIT_WORDS = ("edit", "replace", "insert", "patch", "append", "undo")
_WRITE_WORDS = ("write", "create", "save")
_READ_WORDS = ("read", "view", "open", "cat", "show", "get")
_HEREDOC = re.compile(r"<<-?\s*(['\"]?)(\w+)\1")
_SEPARATORS = frozenset({"&&", "||", ";", "|", "\n", "&"})


@dataclass(frozen=True, slots=True)
class FileTouch:
    """One file one tool call touched."""

    path: str
    """The file, as the call names it (joined to a ``cd`` directory before it)."""
    kind: TouchKind
    """``read`` (the result shows it), ``write`` (the call holds the whole new content)
    or ``edit`` (changed in place; the call does not show the result)."""
    content: str | None = None
    """For a write: the content written."""


def file_key(call: ToolCall) -> str | None:
    """The path `call` touched, or None: a `SupersedeKey` for `SupersedeReads(key=...)`
    and `Rehydrate(key=...)`.

    >>> file_key(ToolCall(id="c", name="open", arguments='{"path": "src/a.py"}'))
    'src/a.py'
    """
    touch = touched_file(call)
    return touch.path if touch is not None else None


def touched_file(call: ToolCall) -> FileTouch | None:
    """The file `call` read, wrote or edited, or None (see the module docs)."""
    args = call.parsed_arguments()
    if not isinstance(args, dict):
        return None
    path = next((args[k] for k in PATH_ARGS if isinstance(args.get(k), str)), None)
    if path:
        return _file_tool(call.name, args, path)
    command = next((args[k] for k in SHELL_ARGS if isinstance(args.get(k), str)), None)
    return _shell(command) if command else None


def _file_tool(name: str, args: dict[str, Any], path: str) -> FileTouch | None:
    # str_replace_editor and alike name the action in `command`
    action = str(args.get("command") or args.get("action") or name).lower()
    content = next((args[k] for k in CONTENT_ARGS if isinstance(args.get(k), str)), None)
    if any(w in action for w in _EDIT_WORDS):
        return FileTouch(path, "edit")
    if any(w in action for w in _WRITE_WORDS):
        return FileTouch(path, "write", content) if content is not None else FileTouch(path, "edit")
    if any(w in action for w in _READ_WORDS):
        return FileTouch(path, "read")
    return None


def _shell(command: str) -> FileTouch | None:
    """The one file a shell command reads, writes (heredoc) or edits (``sed -i``, ``>>``)."""
    first_line, _, body = command.partition("\n")
    heredoc = _HEREDOC.search(first_line)
    try:
        lexer = shlex.shlex(first_line if heredoc else command, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        tokens = list(lexer)
    except ValueError:  # unbalanced quotes: not a command we can read
        return None
    cwd = ""
    found: FileTouch | None = None
    for words in _segments(tokens):
        if words[0] == "cd" and len(words) == 2:
            cwd = os.path.normpath(os.path.join(cwd, words[1]))
            continue
        touch = _segment(words, heredoc, body)
        if touch is not None:
            if found is not None and found.path != touch.path:
                return None  # two files in one command: whose output is whose is unclear
            found = touch
    if found is None:
        return None
    return FileTouch(_join(cwd, found.path), found.kind, found.content)


def _segments(tokens: list[str]) -> list[list[str]]:
    out: list[list[str]] = [[]]
    for t in tokens:
        if t in _SEPARATORS:
            out.append([])
        else:
            out[-1].append(t)
    return [s for s in out if s]


def _segment(words: list[str], heredoc: re.Match[str] | None, body: str) -> FileTouch | None:
    program, rest = words[0], words[1:]
    redirect = _redirect(words) if program in _WRITERS else None
    if redirect is not None:
        target, append = redirect
        if heredoc is not None and not append:
            return FileTouch(target, "write", _heredoc_body(body, heredoc.group(2)))
        return FileTouch(target, "edit")
    if program == "sed" and any(w == "-i" or w.startswith(("-i", "--in-place")) for w in rest):
        files = _operands(program, rest)
        return FileTouch(files[0], "edit") if len(files) == 1 else None
    if program not in _READERS or _redirect(words) is not None:
        return None
    files = _operands(program, rest)
    return FileTouch(files[0], "read") if len(files) == 1 else None


def _redirect(words: list[str]) -> tuple[str, bool] | None:
    """The file a ``>`` or ``>>`` redirect writes, and whether it appends."""
    for i, w in enumerate(words[:-1]):
        if w in (">", ">>") and words[i + 1] not in ("&", "/dev/null"):
            return words[i + 1], w == ">>"
    return None


def _operands(program: str, args: list[str]) -> list[str]:
    """The file operands: not options, not an option's value, not a sed/awk script."""
    out: list[str] = []
    skip = False
    script = program in ("sed", "awk")
    script_seen = not script
    for a in args:
        if skip:
            skip = False
            continue
        if a in _VALUE_OPTIONS.get(program, ()):
            skip = True
            continue
        if a.startswith("-"):
            if script and a == "-e":
                script_seen = False
            continue
        if a.startswith("<") or a.startswith(">"):
            continue
        if not script_seen:
            script_seen = True
            continue
        out.append(a)
    return out


def _heredoc_body(body: str, end: str) -> str:
    lines = body.split("\n")
    for i, line in enumerate(lines):
        if line.strip() == end:
            return "\n".join(lines[:i]) + "\n"
    return body


def _join(cwd: str, path: str) -> str:
    if not cwd or os.path.isabs(path):
        return os.path.normpath(path) if path.startswith("./") else path
    return os.path.normpath(os.path.join(cwd, path))
