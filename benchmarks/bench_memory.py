"""What survives compaction of long conversations: standing instructions, current facts,
stale values, next to plain truncation and the uncompacted conversation.

The conversations are generated here from hand-written material, the way people talk:
instructions and preferences said in passing ("oh and btw, please don't use emojis"),
facts about themselves and their plans (names, dates, numbers, places), values that
change later ("the flight got moved to June 14"), and a lot of chat about nothing with
long, generic answers in between. Each conversation is compacted with no model at
10/15/20/50% of its tokens, once and five times in a row (a round adds more conversation
and compacts the result again). Printed per method and budget: the share of standing
instructions and of current facts still in what would be sent, stale values shown as
current (an old value with no mention of the new one after it), tokens sent, and the
digest's time on a 3k-message span: cold (every message new) and warm (the same span read
again, as a proxy does when the whole conversation is sent on every request).

Then the same methods on six long conversations written by hand for this benchmark, by
an author who did not read kompakt's code (``benchmarks/data/conversations``: a
multi-session chat between two friends, wedding planning, a coding-help chat, a support
thread, a tutoring chat, an English/Spanish chat; 270-370 messages and 24-29 questions
each). Printed: the share of questions whose answer is still in what would be sent, by
kind (facts and dates; instructions and preferences; the current value of what changed),
and stale values shown as current (the old value kept without the new one). Then the same
for the sets of a second to a forty-fourth author (``set2`` to ``set44``), each written
after the sets before it had been used to tune the digest.

Run: ``PYTHONPATH=src python benchmarks/bench_memory.py [--conversations 12] [--seed 7]``
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import kompakt
from kompakt import Message
from kompakt.notes import digest
from kompakt.tokens import CharEstimator

TOK = CharEstimator()

# -- material -----------------------------------------------------------------------------

INSTRUCTIONS: list[tuple[str, str]] = [  # (how it is said, a word that shows it is kept)
    ("oh and btw, please don't use emojis when you answer me", "emojis"),
    ("Always give me prices in euros, I can't think in dollars.", "euros"),
    ("From now on keep your answers under 150 words if you can.", "150 words"),
    ("I prefer metric units, so no miles or pounds please.", "metric"),
    ("Whenever I ask about a Python library, include the version number.", "version number"),
    ("Never suggest anything with peanuts — I'm allergic.", "peanuts"),
    ("Please call me Sam, not Samantha.", "Sam, not Samantha"),
    ("Make sure you cite a source when you give me statistics.", "cite a source"),
    ("Do not recommend chain restaurants to me, I only like local places.", "chain restaurants"),
    ("Going forward, write code examples in TypeScript rather than JavaScript.", "TypeScript"),
    ("I'd rather you didn't add disclaimers at the end of every answer.", "disclaimers"),
    ("Answer in British English spelling please.", "British English"),
]

FACTS: list[tuple[str, str, tuple[str, str] | None]] = [
    # (statement, value, (later update, new value) or None)
    ("My sister Ingrid is getting married on 14 September in Bergen.", "Ingrid", None),
    (
        "Our flight to Lisbon leaves on June 3 at 07:40.",
        "June 3",
        ("Ugh, the airline moved our Lisbon flight to June 14, same time.", "June 14"),
    ),
    (
        "The budget for the whole trip is 2400 euros.",
        "2400",
        ("We talked it over and the trip budget is now 3100 euros.", "3100"),
    ),
    ("I work as a radiographer at St Olav's hospital.", "radiographer", None),
    ("My landlord's name is Mr. Okafor and the rent is due on the 5th.", "Okafor", None),
    (
        "We're using Postgres 15 for the inventory service.",
        "Postgres 15",
        (
            "Quick update: the inventory service runs on CockroachDB now, we migrated last week.",
            "CockroachDB",
        ),
    ),
    (
        "The project deadline is March 28.",
        "March 28",
        ("The project deadline moved to April 11, so a bit more breathing room.", "April 11"),
    ),
    ("My daughter Maya has a piano recital on Friday at 6pm.", "Maya", None),
    (
        "Our team standup is at 9:15 every morning.",
        "9:15",
        ("Heads up, standup is now at 10:00 instead.", "10:00"),
    ),
    ("I drive a 2016 Honda Jazz, mostly for commuting.", "Honda Jazz", None),
    ("The apartment we're looking at is on Rua das Flores, number 112.", "Rua das Flores", None),
    (
        "My blood type is O negative, in case that matters for the donation question.",
        "O negative",
        None,
    ),
    (
        "Our API rate limit is 600 requests per minute.",
        "600 requests",
        ("They raised our API rate limit to 900 requests per minute.", "900 requests"),
    ),
    ("My manager is called Priyanka Rao.", "Priyanka Rao", None),
]

TOPICS = [
    "how to keep houseplants alive in winter",
    "whether to learn guitar or piano first",
    "what makes a good sourdough starter",
    "how compound interest works",
    "tips for sleeping better",
    "how to prepare for a job interview",
    "why the sky is blue",
    "how to start running as a beginner",
    "what to look for in a used bike",
    "how to organise a small closet",
    "the history of the printing press",
    "how to make cold brew coffee",
    "how vaccines train the immune system",
    "ways to reduce screen time",
]
OPENERS = [
    "hey, quick question:",
    "so I was wondering about",
    "random thought -",
    "can you explain",
    "ok next thing,",
    "another one:",
    "hmm, what about",
]
ADVICE = [
    "It's important to consider several factors and find what works best for you.",
    "Many people find that consistency matters more than intensity over time.",
    "There are a few general approaches, each with their own pros and cons.",
    "Start small, observe the results, and adjust gradually as you learn more.",
    "Keep in mind that everyone's situation is a little different.",
    "A balanced approach usually gives the most sustainable results.",
    "It can help to write down your goals and review them regularly.",
    "Don't be discouraged if progress feels slow at the beginning.",
]
ACKS = ["thanks!", "ok cool", "great, that helps", "nice, thank you", "makes sense", "got it"]


@dataclass
class Planted:
    kind: str  # "instruction" or "fact"
    shows: str  # what must be in the output for it to count as kept
    stale: str | None = None  # a value that must not be shown once updated


@dataclass
class Conversation:
    messages: list[Message] = field(default_factory=list)
    planted: list[Planted] = field(default_factory=list)


def chatter(rng: random.Random, out: list[Message], turns: int) -> None:
    for _ in range(turns):
        topic = rng.choice(TOPICS)
        out.append(Message.user(f"{rng.choice(OPENERS)} {topic}?"))
        out.append(
            Message.assistant(
                f"Great question! Here is an overview of {topic}. "
                + " ".join(rng.sample(ADVICE, 5))
                + " I hope this helps!"
            )
        )
        if rng.random() < 0.4:
            out.append(Message.user(rng.choice(ACKS)))
            out.append(Message.assistant("You're welcome! Let me know if there's anything else."))


def conversation(rng: random.Random, rounds: int) -> tuple[Conversation, list[list[Message]]]:
    """A conversation in `rounds` parts; items are planted in the first part and updated
    in later ones, with chatter everywhere."""
    conv = Conversation([Message.system("You are a helpful assistant.")])
    instructions = rng.sample(INSTRUCTIONS, 5)
    facts = rng.sample(FACTS, 8)
    parts: list[list[Message]] = [[] for _ in range(rounds)]
    for text, shows in instructions:
        chatter(rng, parts[0], rng.randint(2, 5))
        parts[0].append(Message.user(f"{rng.choice(['', 'Also, ', 'One more thing: '])}{text}"))
        parts[0].append(Message.assistant("Understood, I'll keep that in mind."))
        conv.planted.append(Planted("instruction", shows))
    for text, value, update in facts:
        chatter(rng, parts[0], rng.randint(2, 5))
        parts[0].append(Message.user(text))
        parts[0].append(Message.assistant("Thanks for letting me know! " + rng.choice(ADVICE)))
        if update is None:
            conv.planted.append(Planted("fact", value))
            continue
        later = parts[rng.randint(1, rounds - 1)] if rounds > 1 else parts[0]
        chatter(rng, later, rng.randint(1, 3))
        said, new = update
        later.append(Message.user(said))
        later.append(Message.assistant("Noted, thanks for the update."))
        conv.planted.append(Planted("fact", new, stale=value))
    for part in parts:
        chatter(rng, part, 12)
    return conv, parts


# -- running ------------------------------------------------------------------------------


def tokens(messages: list[Message]) -> int:
    return sum(TOK.count_message(m) for m in messages)


Method = Callable[[list[Message], int], list[Message]]


def kompakt_default(messages: list[Message], budget: int) -> list[Message]:
    out: list[Message] = kompakt.apply_compaction(messages, strategy=kompakt.Budgeted(budget))
    return out


def truncation(messages: list[Message], budget: int) -> list[Message]:
    strategy = kompakt.Budgeted(budget, strategies=[kompakt.Truncation()])
    out: list[Message] = kompakt.apply_compaction(messages, strategy=strategy)
    return out


def score(conv: Conversation, sent: list[Message]) -> tuple[float, float, int]:
    text = "\n".join(m.text for m in sent)
    ins = [p for p in conv.planted if p.kind == "instruction"]
    facts = [p for p in conv.planted if p.kind == "fact"]
    kept_ins = sum(p.shows in text for p in ins) / len(ins)
    kept_facts = sum(p.shows in text for p in facts) / len(facts)
    # shown as current: the old value with no mention of the new one after it (an old
    # statement still in the verbatim tail, followed by its update, is history, not stale)
    stale = sum(1 for p in facts if p.stale and text.rfind(p.stale) > text.rfind(p.shows))
    return kept_ins, kept_facts, stale


def run(
    convs: list[tuple[Conversation, list[list[Message]]]],
    method: Method | None,
    share: float,
    rounds: int,
) -> tuple[float, float, float, float]:
    rows = []
    for conv, parts in convs:
        total = tokens([conv.messages[0], *[m for p in parts for m in p]])
        budget = int(total * share)
        sent = [conv.messages[0]]
        for k in range(rounds):
            chunk = parts[k] if rounds > 1 else [m for p in parts for m in p]
            sent = sent + chunk
            if method is not None:
                sent = method(sent, budget)
        rows.append((*score(conv, sent), tokens(sent)))
    ins, facts, stale, tok = zip(*rows, strict=True)
    return statistics.mean(ins), statistics.mean(facts), sum(stale), statistics.mean(tok)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--conversations", type=int, default=12)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    convs = [conversation(rng, 5) for _ in range(args.conversations)]
    size = statistics.mean(tokens([m for p in parts for m in p]) for _, parts in convs)
    print(f"{args.conversations} conversations, ~{size:,.0f} tokens each")
    print(
        f"{'method':<22}{'budget':>7}{'rounds':>7}{'instructions':>14}{'facts':>8}{'stale':>7}{'tokens':>9}"
    )
    methods: list[tuple[str, Method | None]] = [
        ("uncompacted", None),
        ("truncation", truncation),
        ("kompakt Budgeted", kompakt_default),
    ]
    for share in (0.1, 0.15, 0.2, 0.5):
        for rounds in (1, 5):
            for name, method in methods:
                if method is None and (share, rounds) != (0.1, 1):
                    continue
                ins, facts, stale, tok = run(convs, method, share, rounds)
                label = "-" if method is None else f"{share:.0%}"
                print(
                    f"{name:<22}{label:>7}{rounds:>7}{ins:>14.0%}{facts:>8.0%}{stale:>7}{tok:>9,.0f}"
                )
    for folder, author in (
        (WRITTEN, "first"),
        (WRITTEN / "set2", "second"),
        (WRITTEN / "set3", "third"),
        (WRITTEN / "set4", "fourth"),
        (WRITTEN / "set5", "fifth"),
        (WRITTEN / "set6", "sixth"),
        (WRITTEN / "set7", "seventh"),
        (WRITTEN / "set8", "eighth"),
        (WRITTEN / "set9", "ninth"),
        (WRITTEN / "set10", "tenth"),
        (WRITTEN / "set11", "eleventh"),
        (WRITTEN / "set12", "twelfth"),
        (WRITTEN / "set13", "thirteenth"),
        (WRITTEN / "set14", "fourteenth"),
        (WRITTEN / "set15", "fifteenth"),
        (WRITTEN / "set16", "sixteenth"),
        (WRITTEN / "set17", "seventeenth"),
        (WRITTEN / "set18", "eighteenth"),
        (WRITTEN / "set19", "nineteenth"),
        (WRITTEN / "set20", "twentieth"),
        (WRITTEN / "set21", "twenty-first"),
        (WRITTEN / "set22", "twenty-second"),
        (WRITTEN / "set23", "twenty-third"),
        (WRITTEN / "set24", "twenty-fourth"),
        (WRITTEN / "set25", "twenty-fifth"),
        (WRITTEN / "set26", "twenty-sixth"),
        (WRITTEN / "set27", "twenty-seventh"),
        (WRITTEN / "set28", "twenty-eighth"),
        (WRITTEN / "set29", "twenty-ninth"),
        (WRITTEN / "set30", "thirtieth"),
        (WRITTEN / "set31", "thirty-first"),
        (WRITTEN / "set32", "thirty-second"),
        (WRITTEN / "set33", "thirty-third"),
        (WRITTEN / "set34", "thirty-fourth"),
        (WRITTEN / "set35", "thirty-fifth"),
        (WRITTEN / "set36", "thirty-sixth"),
        (WRITTEN / "set37", "thirty-seventh"),
        (WRITTEN / "set38", "thirty-eighth"),
        (WRITTEN / "set39", "thirty-ninth"),
        (WRITTEN / "set40", "fortieth"),
        (WRITTEN / "set41", "forty-first"),
        (WRITTEN / "set42", "forty-second"),
        (WRITTEN / "set43", "forty-third"),
        (WRITTEN / "set44", "forty-fourth"),
    ):
        written(methods, folder, author)
    # the digest's speed on a long span, cold: every message distinct (as in a real chat,
    # where nothing is said twice word for word), a new span each time; then warm: the same
    # span read again, as a proxy sends the conversation again with every request
    times, warm = [], []
    for k in range(5):
        span = distinct_span(random.Random(k), 3000)
        start = time.perf_counter()
        digest(span, max_tokens=4000)
        times.append(time.perf_counter() - start)
        start = time.perf_counter()
        digest(span, max_tokens=4000)
        warm.append(time.perf_counter() - start)
    print(
        f"digest of a {len(span):,}-message chat span ({sum(len(m.text) for m in span):,} chars): "
        f"{statistics.median(times) * 1000:.0f} ms (median of 5, each span new); "
        f"the same span again (warm): {statistics.median(warm) * 1000:.0f} ms"
    )


WRITTEN = Path(__file__).parent / "data" / "conversations"
KINDS = {  # column -> the question kinds it counts
    "facts": ("fact", "temporal"),
    "instructions": ("instruction", "preference"),
    "updates": ("update",),
}


def written(methods: list[tuple[str, Method | None]], folder: Path, author: str) -> None:
    """Answers held on one set of hand-written conversations, by kind, once and after 5
    rounds."""
    convs = []
    for path in sorted(folder.glob("conv_*.json")):
        doc = json.loads(path.read_text())
        said = [Message(role=m["role"], content=m["content"]) for m in doc["messages"]]
        convs.append((said, doc["questions"]))
    questions = sum(len(q) for _, q in convs)
    print(f"\n{len(convs)} conversations by the {author} author, {questions} questions")
    print(
        f"{'method':<22}{'budget':>7}{'rounds':>7}{'facts':>8}{'instructions':>14}{'updates':>9}"
        f"{'all':>6}{'stale':>7}"
    )
    for share in (0.1, 0.15, 0.2):
        for rounds in (1, 5):
            for name, method in methods:
                if method is None and (share, rounds) != (0.1, 1):
                    continue
                held: dict[str, list[bool]] = {k: [] for k in KINDS}
                stale = 0
                for said, qs in convs:
                    text = _sent_after(said, method, share, rounds).lower()
                    for q in qs:
                        answer = q["answer"].lower()
                        kind = next(k for k, kinds in KINDS.items() if q["kind"] in kinds)
                        held[kind].append(answer in text)
                        old = str(q.get("stale", "")).lower()
                        # shown as current: the old value kept, the new one lost (the
                        # two side by side is a history, as people tell it)
                        stale += bool(old) and old in text and answer not in text
                every = [h for hs in held.values() for h in hs]
                label = "-" if method is None else f"{share:.0%}"
                cells = "".join(
                    f"{statistics.mean(held[k]):>{w}.0%}"
                    for k, w in (("facts", 8), ("instructions", 14), ("updates", 9))
                )
                print(
                    f"{name:<22}{label:>7}{rounds:>7}{cells}{statistics.mean(every):>6.0%}{stale:>7}"
                )


def _sent_after(said: list[Message], method: Method | None, share: float, rounds: int) -> str:
    """What would be sent after the conversation, compacted at `share` of its tokens once
    (rounds=1) or each time a fifth more of it was said."""
    budget = int(tokens(said) * share)
    sent: list[Message] = []
    step = -(-len(said) // rounds)
    for start in range(0, len(said), step):
        sent = sent + said[start : start + step]
        if method is not None and tokens(sent) > budget:
            sent = method(sent, budget)
    return "\n".join(m.text for m in sent)


WORDS = [
    "amber",
    "basil",
    "cedar",
    "delta",
    "ember",
    "fjord",
    "garnet",
    "harbor",
    "indigo",
    "juniper",
    "kelp",
    "lumen",
]


def distinct_span(rng: random.Random, n: int) -> list[Message]:
    """`n` messages of the generated conversations, each made unlike every other."""
    out: list[Message] = []
    while len(out) < n:
        for m in (m for part in conversation(rng, 5)[1] for m in part):
            tail = f" ({rng.choice(WORDS)} {rng.randint(1, 99_999)})"
            out.append(Message(role=m.role, content=m.text + tail))
    return out[:n]


if __name__ == "__main__":
    main()
