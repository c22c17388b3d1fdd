"""`kompakt inspect`: where a transcript's tokens go, and what a provider would reject."""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from typing import Annotated, Any

import typer
from rich.table import Table
from rich.text import Text

from kompakt.cli.common import load_tokenizer, out_console, read_conversation
from kompakt.cli.errors import handled
from kompakt.cli.options import FileArg, FormatOpt, TokenizerOpt
from kompakt.cli.printable import printable
from kompakt.index import MessageIndex, is_provider_compaction

__all__ = ["inspect_command", "inspect_data"]


def _preview(text: str, limit: int = 70) -> str:
    flat = " ".join(text[: limit * 4].split())
    flat = flat if len(flat) <= limit else flat[: limit - 1] + "…"
    return printable(flat, newlines=False)


def inspect_data(index: MessageIndex, *, fmt: str | None, top: int = 10) -> dict[str, Any]:
    """Token breakdown, largest messages, tool statistics and validation problems."""
    from kompakt.validation import find_problems

    total = max(1, index.total_tokens)
    kinds: dict[str, dict[str, int]] = defaultdict(
        lambda: {"groups": 0, "messages": 0, "tokens": 0}
    )
    for g in index.groups:
        row = kinds[g.kind]
        row["groups"] += 1
        row["messages"] += g.size
        row["tokens"] += g.tokens
    tokens = index.message_tokens
    largest = sorted(range(index.message_count), key=lambda i: -tokens[i])[:top]
    calls: Counter[str] = Counter()
    result_tokens: Counter[str] = Counter()
    result_max: Counter[str] = Counter()
    name_of: dict[str, str] = {}
    for i, m in enumerate(index.messages):
        for c in m.tool_calls:
            calls[c.name] += 1
            name_of[c.id] = c.name
        if m.role == "tool":
            name = name_of.get(m.tool_call_id or "", m.name or "?")
            result_tokens[name] += tokens[i]
            result_max[name] = max(result_max[name], tokens[i])
    dialects = ["openai", "anthropic"] + ([fmt] if fmt in ("responses", "gemini") else [])
    problems = {
        dialect: [str(p) for p in find_problems(list(index.messages), format=dialect)]  # type: ignore[arg-type]
        for dialect in dialects
    }
    return {
        "format": fmt,
        "messages": index.message_count,
        "groups": index.group_count,
        "turns": index.turn_count,
        "tokens": index.total_tokens,
        "chars": index.total_chars,
        "tokenizer": repr(index.tokenizer),
        "by_kind": {
            k: {**v, "share": round(v["tokens"] / total, 4)}
            for k, v in sorted(kinds.items(), key=lambda kv: -kv[1]["tokens"])
        },
        "largest": [
            {
                "index": i,
                "role": index.messages[i].role,
                "tokens": tokens[i],
                "preview": _preview(index.messages[i].text or _calls_text(index, i)),
            }
            for i in largest
        ],
        "tools": [
            {
                "name": name,
                "calls": n,
                "result_tokens": result_tokens[name],
                "mean_result_tokens": round(result_tokens[name] / n) if n else 0,
                "max_result_tokens": result_max[name],
            }
            for name, n in calls.most_common()
        ],
        "provider_compaction": _compaction_data(index),
        "problems": problems,
    }


def _compaction_data(index: MessageIndex) -> dict[str, Any] | None:
    """Provider compactions: how many, where the newest is, what it makes unsent."""
    newest = index.compaction_group
    if newest is None:
        return None
    groups = index.groups
    before = [g for g in groups[:newest] if g.kind != "system"]
    return {
        "count": sum(
            1 for g in groups if g.pinned and is_provider_compaction(index.messages[g.start])
        ),
        "newest_message": groups[newest].start,
        "newest_tokens": groups[newest].tokens,
        "superseded_messages": sum(g.size for g in before),
        "superseded_tokens": sum(g.tokens for g in before),
    }


def _calls_text(index: MessageIndex, i: int) -> str:
    return " ".join(f"{c.name}({c.arguments})" for c in index.messages[i].tool_calls)


def _cell(value: object) -> Text:
    """A table cell from transcript data: escapes shown, never markup."""
    return Text(printable(str(value)))


def _print(data: dict[str, Any]) -> None:
    c = out_console
    c.print(
        Text.assemble(
            (str(data["messages"]), "bold"),
            f" messages · {data['groups']} groups · {data['turns']} turns · ",
            (f"{data['tokens']:,}", "bold"),
            printable(f" tokens ({data['tokenizer']}) · format {data['format']}"),
        )
    )
    t = Table(title="Tokens by group kind", title_justify="left")
    for col in ("kind", "groups", "messages", "tokens", "share"):
        t.add_column(col, justify="left" if col == "kind" else "right")
    for kind, row in data["by_kind"].items():
        t.add_row(
            _cell(kind),
            str(row["groups"]),
            str(row["messages"]),
            f"{row['tokens']:,}",
            f"{row['share'] * 100:.1f}%",
        )
    c.print(t)
    pc = data.get("provider_compaction")
    if pc:
        c.print(
            Text.assemble(
                ("Provider compaction: ", "bold"),
                f"{pc['count']} · newest at message {pc['newest_message']} "
                f"({pc['newest_tokens']:,} tokens) · before it, not sent: "
                f"{pc['superseded_messages']} messages, {pc['superseded_tokens']:,} tokens",
            )
        )
    t = Table(title="Largest messages", title_justify="left")
    for col in ("#", "role", "tokens", "preview"):
        t.add_column(col, justify="right" if col in ("#", "tokens") else "left")
    for m in data["largest"]:
        t.add_row(str(m["index"]), _cell(m["role"]), f"{m['tokens']:,}", _cell(m["preview"]))
    c.print(t)
    if data["tools"]:
        t = Table(title="Tool calls", title_justify="left")
        for col in ("tool", "calls", "result tokens", "mean", "max"):
            t.add_column(col, justify="left" if col == "tool" else "right")
        for row in data["tools"]:
            t.add_row(
                _cell(row["name"]),
                str(row["calls"]),
                f"{row['result_tokens']:,}",
                f"{row['mean_result_tokens']:,}",
                f"{row['max_result_tokens']:,}",
            )
        c.print(t)
    t = Table(title="Validation", title_justify="left")
    t.add_column("format")
    t.add_column("problems", justify="right")
    t.add_column("first problems")
    for dialect, probs in data["problems"].items():
        status = Text("ok", "green") if not probs else Text(str(len(probs)), "red")
        t.add_row(dialect, status, _cell("\n".join(probs[:3]) or "—"))
    c.print(t)


def inspect_command(
    file: FileArg,
    fmt: FormatOpt = None,
    tokenizer: TokenizerOpt = "chars",
    top: Annotated[
        int, typer.Option("--top", min=1, help="How many of the largest messages.")
    ] = 10,
    json_out: Annotated[bool, typer.Option("--json", help="Print the result as JSON.")] = False,
) -> None:
    """Tokens by group kind, largest messages, tool-call statistics, validation problems.

    Example: kompakt inspect run.traj.json --tokenizer cl100k_base
    """
    with handled():
        conv = read_conversation(file, fmt)
        index = MessageIndex(conv, tokenizer=load_tokenizer(tokenizer))
        data = inspect_data(index, fmt=getattr(conv, "format", fmt), top=top)
        if json_out:
            typer.echo(json.dumps(data, indent=2))
        else:
            _print(data)
