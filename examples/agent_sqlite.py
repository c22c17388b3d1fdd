"""A tool-using agent with compaction and a SQLite history, on any OpenAI-compatible server.

The agent can read files and run a few read-only shell commands inside a working
directory; its history (every original message, compaction records) is kept in a
SQLite file, so a later run with the same ``--session`` continues where this one ended
and can recall what was compacted away. It talks to the server through the `openai` SDK
(``pip install "kompakt[openai]"``).

Ollama::

    ollama pull qwen2.5:7b
    python examples/agent_sqlite.py "What does this project do? Read the README." \\
        --base-url http://localhost:11434/v1 --model qwen2.5:7b

llama.cpp's server (``pip install "llama-cpp-python[server]"``)::

    python -m llama_cpp.server --model model.gguf --port 8080 --n_ctx 8192
    python examples/agent_sqlite.py "List the Python files." \\
        --base-url http://localhost:8080/v1 --model local --context-window 8192

Environment instead of flags: ``KOMPAKT_BASE_URL`` (or ``OPENAI_BASE_URL``),
``KOMPAKT_AGENT_MODEL``, ``OPENAI_API_KEY`` (local servers need none).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

from kompakt import Agent, Compactor, SQLiteStore
from kompakt.models import OpenAIModel
from kompakt.strategies import Budgeted

SAFE_COMMANDS = frozenset(
    {"ls", "cat", "head", "tail", "wc", "grep", "find", "pwd", "echo", "git", "python", "pytest"}
)
"""Programs `run` may start unless ``--allow-any-command`` is given."""
MAX_OUTPUT = 8_000


def make_tools(root: Path, allow_any: bool = False) -> list[object]:
    """`read_file` and `run`, confined to `root`."""

    def read_file(path: str, max_chars: int = MAX_OUTPUT) -> str:
        """Read a text file of the working directory.

        Args:
            path: the file, relative to the working directory.
            max_chars: return at most this many characters.
        """
        target = (root / path).resolve()
        if not target.is_relative_to(root):
            raise PermissionError(f"{path!r} is outside the working directory")
        text = target.read_text(errors="replace")
        return text[:max_chars] + ("\n[... truncated]" if len(text) > max_chars else "")

    def run(command: str, timeout: float = 20.0) -> str:
        """Run a shell command in the working directory (no pipes or redirection).

        Args:
            command: the command line, e.g. "ls -la" or "grep -rn TODO src".
            timeout: seconds before it is stopped.
        """
        argv = shlex.split(command)
        if not argv:
            raise ValueError("empty command")
        if not allow_any and argv[0] not in SAFE_COMMANDS:
            raise PermissionError(f"{argv[0]!r} is not allowed; allowed: {sorted(SAFE_COMMANDS)}")
        done = subprocess.run(
            argv, cwd=root, capture_output=True, text=True, timeout=min(timeout, 120.0)
        )
        out = (done.stdout + done.stderr)[:MAX_OUTPUT]
        return f"exit code {done.returncode}\n{out}"

    return [read_file, run]


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    p.add_argument("task", help="what the agent should do")
    p.add_argument("--base-url", default=os.environ.get("KOMPAKT_BASE_URL"))
    p.add_argument("--model", default=os.environ.get("KOMPAKT_AGENT_MODEL", "local"))
    p.add_argument("--db", default="agent.db", help="SQLite file of the history")
    p.add_argument("--session", default="default", help="session id in the store")
    p.add_argument("--workdir", default=".", help="where the tools may read and run")
    p.add_argument("--context-window", type=int, default=8192)
    p.add_argument("--max-steps", type=int, default=10)
    p.add_argument("--max-output-tokens", type=int, default=512, help="per answer")
    p.add_argument("--timeout", type=float, default=120.0, help="seconds per model call")
    p.add_argument("--allow-any-command", action="store_true")
    p.add_argument("--json", action="store_true", help="print a JSON summary line")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    model = OpenAIModel(
        args.model,
        base_url=args.base_url,
        api_key=os.environ.get("OPENAI_API_KEY") or "none",
        timeout=args.timeout,
    )
    # keep the prompt within 60% of the window: room for tool schemas and the answer
    compactor = Compactor(strategy=Budgeted(int(args.context_window * 0.6)))
    store = SQLiteStore(args.db)
    agent = Agent(
        model,
        tools=make_tools(Path(args.workdir).resolve(), args.allow_any_command),
        compactor=compactor,
        store=store,
        session=args.session,
        system="You are a careful assistant. Use the tools to look before you answer.",
        max_steps=args.max_steps,
        max_output_tokens=args.max_output_tokens,
        context_window=args.context_window,
    )
    result = agent.run_sync(args.task)
    for event in result.compactions:
        print("compaction:", event.summary(), file=sys.stderr)
    for warning in result.warnings:
        print("warning:", warning, file=sys.stderr)
    if args.json:
        summary = {
            "output": result.output,
            "stopped_reason": result.stopped_reason,
            "steps": result.steps,
            "messages_added": len(result.messages),
            "compactions": len(result.compactions),
            "input_tokens": result.total_usage.input_tokens,
            "session": result.session,
        }
        print(json.dumps(summary))
    else:
        print(result.output or f"(no answer: stopped after {result.steps} steps)")
    store.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
