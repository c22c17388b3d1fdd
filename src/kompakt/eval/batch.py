"""Compact or evaluate many transcripts: a local worker pool, or Ray tasks across machines.

The work for one file is one pure function, `transform(job, name, text)`, so a local
process and a Ray task produce byte-identical outputs. Outputs are written through a
temporary file and a rename, so an interrupted batch leaves no half-written output,
and a rerun skips every output already there (resumable). The job's settings are kept
in the output folder (`MANIFEST`): a rerun with other settings is refused rather than
mixing outputs of two setups. A file that fails is reported and skipped; the batch
never aborts.

With Ray the driver reads each input and writes each output itself, so the Ray
workers need no shared filesystem: only the text travels.

>>> job = BatchJob(budget="0.5")
>>> text = '[{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]'
>>> out = transform(job, "chat.json", text)
>>> out.error is None and out.output is not None and out.tokens_before >= out.tokens_after
True
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import asdict, dataclass, field
from multiprocessing import get_context
from pathlib import Path
from typing import Any, Literal

from kompakt.errors import ConfigError, FormatError
from kompakt.formats.documents import render_document, write_atomic

__all__ = [
    "INPUT_SUFFIXES",
    "MANIFEST",
    "BatchItem",
    "BatchJob",
    "BatchSummary",
    "ItemResult",
    "Transformed",
    "claim_output",
    "plan",
    "run_batch",
    "transform",
]

INPUT_SUFFIXES = (".json", ".jsonl", ".traj")
"""Files a batch picks up (recursively; hidden files and folders are skipped)."""
MANIFEST = ".kompakt-batch.json"
"""The job settings a batch wrote its output folder with (hidden: never an input)."""


@dataclass(frozen=True)
class BatchJob:
    """What to do to every file; plain data, so it travels to processes and Ray tasks."""

    mode: Literal["compact", "eval"] = "compact"
    budget: str = "0.5"
    """Tokens (``8000``) or a fraction of each file's tokens (``0.2``); eval: several."""
    strategy: str = "budgeted"
    strategies: tuple[str, ...] = ("truncation", "collapse", "budgeted", "digest")
    """Eval mode: the strategies compared."""
    target: float = 0.75
    tokenizer: str = "chars"
    config: dict[str, Any] | None = None
    """A parsed TOML compaction setup (overrides `strategy`)."""
    source_format: str | None = None
    to: str | None = None

    def output_name(self, relative: str) -> str:
        """Where the output of `relative` goes, relative to the output folder."""
        return relative + ".eval.json" if self.mode == "eval" else relative


@dataclass
class Transformed:
    """The output text of one file, or why it failed."""

    name: str
    output: str | None = None
    error: str | None = None
    tokens_before: int = 0
    tokens_after: int = 0
    seconds: float = 0.0


def _compact_text(job: BatchJob, text: str) -> tuple[str, int, int]:
    from kompakt.formats import loads
    from kompakt.index import MessageIndex
    from kompakt.presets import compact_messages, load_tokenizer, parse_budgets

    tok = load_tokenizer(job.tokenizer)
    conv = loads(text, format=job.source_format)
    before = MessageIndex(conv, tokenizer=tok).total_tokens
    budgets = parse_budgets(job.budget)
    out = compact_messages(
        conv,
        tokenizer=tok,
        budget=budgets[0].resolve(before),
        strategy=job.strategy,
        config=job.config,
    )
    after = MessageIndex(out, tokenizer=tok).total_tokens
    return render_document(out, conv, job.to), before, after


def _eval_text(job: BatchJob, name: str, text: str) -> tuple[str, int, int]:
    from kompakt.eval.retention import evaluate
    from kompakt.formats import loads
    from kompakt.presets import load_tokenizer, make_compactor, parse_budgets

    tok = load_tokenizer(job.tokenizer)
    messages = list(loads(text, format=job.source_format))
    result = evaluate(
        [(name, messages)],
        list(job.strategies),
        parse_budgets(job.budget),
        lambda s, b: make_compactor(s, b, target=job.target, tokenizer=tok),
        tokenizer=tok,
    )
    data = result.to_dict()
    for row in data["rows"]:
        row.pop("seconds", None)  # wall time differs run to run; outputs must not
    total = data["cells"][0]["total_tokens"] if data["cells"] else 0
    kept = min((c["final_tokens"] or total for c in data["cells"]), default=total)
    return json.dumps(data, indent=2, sort_keys=True) + "\n", total, kept


def transform(job: BatchJob, name: str, text: str) -> Transformed:
    """Compact or evaluate one document; never raises (the error is returned)."""
    t0 = time.perf_counter()
    try:
        if job.mode == "eval":
            output, before, after = _eval_text(job, name, text)
        else:
            output, before, after = _compact_text(job, text)
    except Exception as exc:  # one bad file must not abort the batch
        message = " ".join(str(exc).split()) or type(exc).__name__
        return Transformed(name, error=f"{type(exc).__name__}: {message}")
    return Transformed(name, output, None, before, after, time.perf_counter() - t0)


@dataclass(frozen=True)
class BatchItem:
    """One input file and its output path."""

    relative: str
    source: Path
    target: Path


@dataclass
class ItemResult:
    """What happened to one file."""

    relative: str
    status: Literal["done", "skipped", "failed"]
    error: str | None = None
    tokens_before: int = 0
    tokens_after: int = 0
    seconds: float = 0.0


@dataclass
class BatchSummary:
    """Every file's result, in input order."""

    results: list[ItemResult] = field(default_factory=list)
    seconds: float = 0.0

    def count(self, status: str) -> int:
        """How many files ended with `status` (done, skipped, failed)."""
        return sum(r.status == status for r in self.results)

    def to_dict(self) -> dict[str, Any]:
        """Plain data for JSON: the counts and every failure."""
        return {
            "done": self.count("done"),
            "skipped": self.count("skipped"),
            "failed": self.count("failed"),
            "seconds": round(self.seconds, 3),
            "failures": [asdict(r) for r in self.results if r.status == "failed"],
        }


def plan(input_dir: Path, output_dir: Path, job: BatchJob) -> list[BatchItem]:
    """Every input file under `input_dir` (sorted) with its output path."""
    items: list[BatchItem] = []
    out_root = output_dir.resolve()
    in_root = input_dir.resolve()
    if out_root == in_root or out_root in in_root.parents:
        # every input would be skipped as an output: the batch would do nothing, silently
        raise ConfigError(
            f"--output {str(output_dir)!r} holds the input folder: choose a folder outside it"
        )
    for path in sorted(input_dir.rglob("*")):
        rel = path.relative_to(input_dir)
        if any(part.startswith(".") for part in rel.parts) or not path.is_file():
            continue
        if path.suffix not in INPUT_SUFFIXES or out_root in path.resolve().parents:
            continue
        relative = rel.as_posix()
        items.append(BatchItem(relative, path, output_dir / job.output_name(relative)))
    return items


def claim_output(output_dir: Path, job: BatchJob, *, force: bool = False) -> None:
    """Record `job` in `output_dir`, or refuse a folder written with other settings
    (resuming it would mix two setups' outputs); `force` redoes every file anyway."""
    if output_dir.exists() and not output_dir.is_dir():
        raise ConfigError(f"--output must be a folder, got a file: {str(output_dir)!r}")
    path = output_dir / MANIFEST
    settings = json.loads(json.dumps(asdict(job)))  # tuples as lists, as read back
    if path.is_file() and not force:
        try:
            before = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            before = None
        if before != settings:
            changed = sorted(
                k for k in settings if not isinstance(before, dict) or before.get(k) != settings[k]
            )
            raise ConfigError(
                f"{str(output_dir)!r} holds a batch made with other settings "
                f"({', '.join(changed) or 'unreadable'} differ): pass --force to redo every "
                "file, or choose another --output"
            )
        return
    write_atomic(path, json.dumps(settings, indent=2, sort_keys=True) + "\n")


def _read(path: Path) -> str:
    from kompakt.formats.reading import read_file

    return read_file(path)  # a regular file, size-limited: its content travels, never a path


def _finish(item: BatchItem, t: Transformed) -> ItemResult:
    if t.output is None:
        return ItemResult(item.relative, "failed", t.error or "unknown error")
    write_atomic(item.target, t.output)
    return ItemResult(item.relative, "done", None, t.tokens_before, t.tokens_after, t.seconds)


def process_file(job: BatchJob, item: BatchItem) -> ItemResult:
    """Read, transform and write one file (what a local worker runs)."""
    try:
        text = _read(item.source)
    except FormatError as exc:
        return ItemResult(item.relative, "failed", f"FormatError: {exc}")
    try:
        return _finish(item, transform(job, item.relative, text))
    except OSError as exc:
        return ItemResult(item.relative, "failed", f"cannot write output: {exc}")


def _run_local(
    job: BatchJob, items: Sequence[BatchItem], workers: int
) -> Iterator[tuple[int, ItemResult]]:
    if workers <= 1:
        for i, item in enumerate(items):
            yield i, process_file(job, item)
        return
    with ProcessPoolExecutor(max_workers=workers, mp_context=get_context("spawn")) as pool:
        pending: dict[Future[ItemResult], int] = {}
        queue = iter(enumerate(items))
        limit = workers * 4
        while True:
            for i, item in queue:
                pending[pool.submit(process_file, job, item)] = i
                if len(pending) >= limit:
                    break
            if not pending:
                return
            done, _ = wait(pending, return_when=FIRST_COMPLETED)
            for fut in done:
                i = pending.pop(fut)
                try:
                    yield i, fut.result()
                except Exception as exc:  # a worker died: report the file, go on
                    yield i, ItemResult(items[i].relative, "failed", f"worker failed: {exc}")


def _run_ray(
    job: BatchJob, items: Sequence[BatchItem], address: str, workers: int
) -> Iterator[tuple[int, ItemResult]]:
    from kompakt.errors import MissingDependency

    try:
        import ray
    except ImportError as exc:
        raise MissingDependency("kompakt batch --ray", "ray") from exc
    started = False
    if not ray.is_initialized():
        if address == "local":
            ray.init(
                num_cpus=max(1, workers),
                include_dashboard=False,
                log_to_driver=False,
                configure_logging=False,
            )
        else:
            ray.init(address=address, log_to_driver=False, configure_logging=False)
        started = True
    try:
        remote = ray.remote(max_retries=1)(transform)
        limit = max(2, workers) * 4
        pending: dict[Any, int] = {}
        queue = iter(enumerate(items))
        while True:
            for i, item in queue:
                try:
                    text = _read(item.source)
                except FormatError as exc:
                    yield i, ItemResult(item.relative, "failed", f"FormatError: {exc}")
                    continue
                pending[remote.remote(job, item.relative, text)] = i
                if len(pending) >= limit:
                    break
            if not pending:
                return
            ready, _ = ray.wait(list(pending), num_returns=1)
            for ref in ready:
                i = pending.pop(ref)
                try:
                    yield i, _finish(items[i], ray.get(ref))
                except Exception as exc:
                    msg = " ".join(str(exc).split())[:300]
                    yield i, ItemResult(items[i].relative, "failed", f"ray task failed: {msg}")
    finally:
        if started:
            ray.shutdown()


def run_batch(
    job: BatchJob,
    items: Iterable[BatchItem],
    *,
    workers: int = 1,
    ray_address: str | None = None,
    force: bool = False,
    on_result: Callable[[ItemResult], None] | None = None,
) -> BatchSummary:
    """Process every item whose output is missing (all with `force`); never aborts."""
    t0 = time.perf_counter()
    items = list(items)
    results: list[ItemResult | None] = [None] * len(items)
    todo: list[int] = []
    for i, item in enumerate(items):
        if not force and item.target.exists():
            results[i] = ItemResult(item.relative, "skipped")
            if on_result is not None:
                on_result(results[i])  # type: ignore[arg-type]
        else:
            todo.append(i)
    chosen = [items[i] for i in todo]
    runner = (
        _run_ray(job, chosen, ray_address, workers)
        if ray_address
        else _run_local(job, chosen, workers)
    )
    for j, result in runner:
        results[todo[j]] = result
        if on_result is not None:
            on_result(result)
    return BatchSummary([r for r in results if r is not None], time.perf_counter() - t0)
