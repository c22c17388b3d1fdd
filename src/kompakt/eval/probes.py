"""What a compacted context should still show: the run's own artifacts and planted facts.

*Artifacts* are read off a recorded run: the file paths it touched, the commands it
ran, the errors it saw and the code identifiers it talked about. *Needles* are facts
planted deterministically at known positions (a value, a constraint, a decision), so
a retention benchmark can ask whether each one is still visible after compaction.

>>> from kompakt.messages import Message, ToolCall
>>> call = ToolCall(id="c1", name="bash", arguments='{"command": "cat src/app.py"}')
>>> run = [Message.user("fix ParserError in app"), Message.assistant(tool_calls=[call]),
...        Message.tool("ValueError: bad input", tool_call_id="c1")]
>>> arts = extract_artifacts(run)
>>> [a.text for a in arts if a.kind == "path"], [a.text for a in arts if a.kind == "error"]
(['src/app.py'], ['ValueError: bad input'])
>>> visible_text(run[:1]).count("ParserError")
1
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal, TypeAlias

from kompakt.messages import Message, Part

__all__ = [
    "ARTIFACT_KINDS",
    "NEEDLE_KINDS",
    "Artifact",
    "ArtifactKind",
    "Needle",
    "NeedleKind",
    "extract_artifacts",
    "normalize",
    "plant_memory",
    "plant_needles",
    "visible_text",
]

ArtifactKind: TypeAlias = Literal["path", "command", "error", "identifier"]
NeedleKind: TypeAlias = Literal["value", "constraint", "decision", "instruction", "update"]
ARTIFACT_KINDS: tuple[ArtifactKind, ...] = ("path", "command", "error", "identifier")
NEEDLE_KINDS: tuple[NeedleKind, ...] = ("value", "constraint", "decision", "instruction", "update")
_PLANTED_KINDS: tuple[NeedleKind, ...] = ("value", "constraint", "decision")

_PATH = re.compile(r"(?<![\w@:/.-])(?:/?[\w.-]+/)+[\w-]+\.[A-Za-z]{1,6}\b")
_IDENT = re.compile(r"\b(?:[A-Z][a-z0-9]+[A-Z][A-Za-z0-9]*|[a-z][a-z0-9]*_[a-z0-9_]*[a-z0-9])\b")
_ERROR = re.compile(r"^\s*(?:[A-Za-z_][\w.]*(?:Error|Exception)\b:|FAILED\b|ERROR\b|error:|fatal:)")
_WS = re.compile(r"\s+")
_LIMITS: dict[ArtifactKind, int] = {"path": 40, "command": 60, "error": 30, "identifier": 30}
_COMMAND_KEYS = ("command", "cmd", "script", "code", "query")


@dataclass(frozen=True, slots=True)
class Artifact:
    """One thing a run produced or referred to, and where it first appeared."""

    kind: ArtifactKind
    text: str
    """The artifact as it appears in the originals."""
    position: int
    """Index of the message that first shows it."""

    @property
    def key(self) -> str:
        """What must be found in the visible text (normalized, at most 80 characters)."""
        return normalize(self.text)[:80]


@dataclass(frozen=True, slots=True)
class Needle:
    """A planted fact: `statement` was added to the message at `position`."""

    kind: NeedleKind
    value: str
    """The exact token that must survive (a unique code)."""
    statement: str
    """The sentence planted into the run."""
    question: str
    """What a model is asked to check that it still knows the fact."""
    position: int
    stale: str | None = None
    """For an update: the value it replaced, which must not be shown as current."""


def normalize(text: str) -> str:
    """Collapse whitespace so a reformatted summary still matches."""
    return _WS.sub(" ", text).strip()


def visible_text(messages: Iterable[Message]) -> str:
    """Everything a model is shown: texts, tool-call names, arguments and command strings."""
    out: list[str] = []
    for m in messages:
        out.append(m.text)
        for call in m.tool_calls:
            out.append(call.name)
            out.append(call.arguments)
            args = call.parsed_arguments()
            if isinstance(args, dict):
                out.extend(v for v in args.values() if isinstance(v, str))
    return normalize("\n".join(out))


def _command_of(args: object, raw: str) -> str:
    if isinstance(args, dict):
        for key in _COMMAND_KEYS:
            value = args.get(key)
            if isinstance(value, str) and value.strip():
                return value.strip()
    return raw.strip()


def extract_artifacts(messages: Sequence[Message]) -> list[Artifact]:
    """Paths, commands, errors and identifiers of a run, first appearance first.

    Paths and identifiers come from what the agent wrote (its text and tool calls) and
    from the user's requests; errors from tool results; commands from tool calls. Each
    kind is capped (the most frequent first) so one huge run stays readable.
    """
    first: dict[tuple[ArtifactKind, str], int] = {}
    counts: Counter[tuple[ArtifactKind, str]] = Counter()

    def add(kind: ArtifactKind, text: str, pos: int) -> None:
        key = (kind, text)
        first.setdefault(key, pos)
        counts[key] += 1

    for pos, m in enumerate(messages):
        if m.synthetic is not None or m.role in ("system", "developer"):
            continue
        if m.role == "tool":
            for line in m.text.splitlines():
                if _ERROR.match(line) and 8 <= len(line.strip()) <= 200:
                    add("error", line.strip(), pos)
            continue
        authored = [m.text]
        for call in m.tool_calls:
            command = _command_of(call.parsed_arguments(), call.arguments)
            if command:
                add("command", command.splitlines()[0][:200], pos)
            authored.append(command)
        for text in authored:
            for path in _PATH.findall(text):
                add("path", path, pos)
            for ident in _IDENT.findall(text):
                add("identifier", ident, pos)
    out: list[Artifact] = []
    for kind in ARTIFACT_KINDS:
        keys = [k for k in counts if k[0] == kind]
        keys.sort(key=lambda k: (-counts[k], first[k]))
        out.extend(Artifact(kind, k[1], first[k]) for k in keys[: _LIMITS[kind]])
    out.sort(key=lambda a: (a.position, ARTIFACT_KINDS.index(a.kind), a.text))
    return out


def _code(seed: str, n: int) -> str:
    digest = hashlib.sha256(f"{seed}:{n}".encode()).hexdigest().upper()
    return f"KP-{digest[:4]}-{digest[4:8]}"


def _statement(kind: NeedleKind, code: str, n: int) -> tuple[str, str]:
    """The planted sentence and the question that checks it (unique per `n`)."""
    if kind == "value":
        return (
            f"Note: the staging build number for step {n} of this fix is {code}.",
            f"What is the staging build number for step {n} of this fix? "
            "Answer with the value only.",
        )
    if kind == "constraint":
        return (
            f"Constraint from the maintainers (ticket {code}): do not change any public "
            f"function signature in this change (rule {n}).",
            f"Which ticket states the maintainers' rule {n} on public function signatures? "
            "Answer with the ticket id only.",
        )
    return (
        f"Decision {code}: keep the fix minimal and add a regression test next to the "
        f"existing tests (decision {n}).",
        f"What is the id of decision {n}, to keep the fix minimal? Answer with the id only.",
    )


def plant_needles(
    messages: Sequence[Message], *, seed: str = "kompakt", per_kind: int = 2
) -> tuple[list[Message], list[Needle]]:
    """Plant `per_kind` needles of each kind at fixed fractions of the run.

    Values and constraints are appended to tool results (where an agent learns
    them), decisions to assistant texts (where it states them). Positions and codes
    depend only on the messages and `seed`, so every strategy sees the same run.
    Returns the new message list and the needles, in order of position.

    >>> from kompakt.messages import Message, Part
    >>> run = [Message.user("task")] + [Message.assistant(f"step {i}") for i in range(9)]
    >>> planted, needles = plant_needles(run, per_kind=1)
    >>> [n.kind for n in needles]
    ['decision']
    >>> needles[0].value in planted[needles[0].position].text
    True
    """
    out = list(messages)
    eligible: dict[NeedleKind, list[int]] = {
        "value": [i for i, m in enumerate(out) if m.role == "tool"],
        "constraint": [i for i, m in enumerate(out) if m.role == "tool"],
        "decision": [
            i for i, m in enumerate(out) if m.role == "assistant" and m.synthetic is None and i
        ],
    }
    needles: list[Needle] = []
    used: set[int] = set()
    slots = len(_PLANTED_KINDS) * per_kind
    for n in range(slots):
        kind = _PLANTED_KINDS[n % len(_PLANTED_KINDS)]
        candidates = [i for i in eligible[kind] if i not in used]
        if not candidates:
            continue
        fraction = (n + 1) / (slots + 1)
        pos = candidates[min(len(candidates) - 1, int(fraction * len(candidates)))]
        used.add(pos)
        code = _code(seed, n)
        statement, question = _statement(kind, code, n)
        m = out[pos]
        out[pos] = m.evolve(content=(*m.content, Part(text=statement)))
        needles.append(Needle(kind, code, statement, question, pos))
    needles.sort(key=lambda x: x.position)
    return out, needles


# Said the way people say things in passing: no labels, no "RULE:".
_INSTRUCTIONS = (
    (
        "Oh, and from now on please put the tag {code} at the top of every commit message.",
        "Which tag goes at the top of every commit message? Answer with the tag only.",
    ),
    (
        "By the way, whenever you write a log line, prefix it with {code} so ops can grep it.",
        "What prefix must every log line carry? Answer with the prefix only.",
    ),
    (
        "Please never touch the vendored folder; if you must, mention ticket {code} first.",
        "Which ticket must be mentioned before touching the vendored folder? Answer with the id.",
    ),
)
_UPDATES = (
    (
        "fyi the staging database for this is {old}, in case you need it",
        "Heads up, staging moved: the database is {new} now.",
        "Which staging database is current? Answer with its name only.",
    ),
    (
        "The review is booked with reviewer slot {old}.",
        "Update: they pushed the review, the slot is {new} instead.",
        "Which reviewer slot is the review booked in now? Answer with the slot only.",
    ),
    (
        "We pin the build image at {old} for this work.",
        "Change of plan, we switched the build image to {new}.",
        "Which build image is pinned now? Answer with the image only.",
    ),
)


def plant_memory(
    messages: Sequence[Message], *, seed: str = "kompakt", per_kind: int = 2
) -> tuple[list[Message], list[Needle]]:
    """Insert what people tell an agent between its steps: `per_kind` standing
    instructions early in the run, and `per_kind` facts each stated early and changed
    later (the update's needle is the new value; the old one is its `stale`).

    The user's messages go in where a turn may start (before an assistant step that
    follows a result or a user message), so the run stays valid. Returns the new
    message list and the needles, in order of position.

    >>> from kompakt.messages import Message
    >>> run = [Message.user("task")]
    >>> for i in range(12):
    ...     run += [Message.assistant(f"step {i}"), Message.user(f"output {i}")]
    >>> planted, needles = plant_memory(run, per_kind=1)
    >>> [n.kind for n in needles]
    ['instruction', 'update']
    >>> u = needles[1]
    >>> u.value in planted[u.position].text and u.stale not in planted[u.position].text
    True
    """
    out = list(messages)
    starts = [
        i
        for i in range(2, len(out))
        if out[i].role == "assistant" and out[i - 1].role in ("tool", "user")
    ]
    if len(starts) < 3 * per_kind:
        return out, []
    inserts: list[tuple[int, Message, Needle | None]] = []  # (before index, message, needle)

    def at(fraction: float) -> int:
        return starts[min(len(starts) - 1, int(fraction * len(starts)))]

    for n in range(per_kind):
        said, question = _INSTRUCTIONS[n % len(_INSTRUCTIONS)]
        code = _code(seed + ":instruction", n)
        text = said.format(code=code)
        needle = Needle("instruction", code, text, question, -1)
        inserts.append((at(0.1 + 0.15 * n), Message.user(text), needle))
        first, later, asked = _UPDATES[n % len(_UPDATES)]
        old, new = _code(seed + ":was", n), _code(seed + ":now", n)
        inserts.append((at(0.2 + 0.15 * n), Message.user(first.format(old=old)), None))
        update = Needle("update", new, later.format(new=new), asked, -1, stale=old)
        inserts.append((at(0.7 + 0.1 * n), Message.user(later.format(new=new)), update))
    inserts.sort(key=lambda x: x[0])
    needles: list[Needle] = []
    result: list[Message] = []
    k = 0
    for i, m in enumerate(out):
        while k < len(inserts) and inserts[k][0] == i:
            _, said_message, planted = inserts[k]
            if planted is not None:
                needles.append(dataclasses.replace(planted, position=len(result)))
            result.append(said_message)
            k += 1
        result.append(m)
    return result, needles
