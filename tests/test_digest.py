"""The extractive digest on real agent transcripts and on generated conversations."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kompakt.formats import load
from kompakt.messages import Message, ToolCall
from kompakt.strategies.digest import SECTIONS, digest, digest_items
from kompakt.tokens import CharEstimator, TiktokenTokenizer

DATA = Path(__file__).resolve().parent / "data"
MINI = sorted((DATA / "mini-swe-agent").glob("*.traj.json"))
SWE = sorted((DATA / "swe-agent").glob("*.traj"))


FLAT = CharEstimator(chars_per_token=4)
"""The budgets of these notes were sized for four characters a token."""


def commands_of(messages: list[Message], width: int = 60) -> list[str]:
    out = []
    for m in messages:
        for c in m.tool_calls:
            args = c.parsed_arguments()
            if isinstance(args, dict) and isinstance(args.get("command"), str):
                out.append(args["command"].strip().splitlines()[0][:width])
    return out


def errors_of(messages: list[Message]) -> list[str]:
    pattern = re.compile(r"^\s*\w*(?:Error|Exception): |^FAILED|^ERROR: ")
    return [
        line.strip()[:50]
        for m in messages
        if m.role == "tool"
        for line in m.text.splitlines()
        if pattern.search(line)
    ]


@pytest.mark.parametrize("path", MINI, ids=lambda p: p.name.split(".")[0])
def test_mini_swe_agent_transcripts(path: Path) -> None:
    msgs = list(load(path))
    span = msgs[1:-6]
    tok = CharEstimator()
    note = digest(span, max_tokens=800, tokenizer=tok)
    assert tok.count_text(note) <= 800
    assert sum(tok.count_message(m) for m in span) > 10 * tok.count_text(note)
    headings = [line[3:] for line in note.splitlines() if line.startswith("## ")]
    # the task's standing rules first (the ledger), then the task and what was found
    assert headings[:3] == [SECTIONS["instructions"], SECTIONS["requests"], SECTIONS["decisions"]]
    assert "Do NOT commit your changes." in note  # a rule of the task, verbatim
    assert SECTIONS["commands"] in headings and SECTIONS["files"] in headings
    assert "Consider the following PR description" in note  # the task, verbatim
    assert re.search(r"→ exit \d+", note)  # a command with its exit status
    commands = commands_of(span)
    kept = [c for c in commands if c in note]
    assert kept and set(kept) <= set(commands)
    full = commands_of(span, width=10_000)
    for line in note.splitlines():  # every command line is verbatim from the span
        if line.startswith("- $ "):
            cmd = line[4:].rsplit(" → exit", 1)[0].removesuffix(" …").rstrip("…")
            assert any(c.startswith(cmd) for c in full), cmd


def test_errors_of_the_span_are_kept() -> None:
    msgs = list(load(MINI[1]))  # django-11797: tracebacks, a failing test run
    span = msgs[1:-6]
    errors = errors_of(span)
    note = digest(span, max_tokens=1_200)
    assert errors
    kept = [e for e in errors if e in note]
    assert len(kept) >= 3 and "AttributeError" in note


@pytest.mark.parametrize("path", SWE, ids=lambda p: p.name[:40])
def test_swe_agent_transcripts(path: Path) -> None:
    msgs = list(load(path))
    note = digest(msgs[1:], max_tokens=600)
    assert CharEstimator().count_text(note) <= 600
    assert f"## {SECTIONS['requests']}\n- " in note
    assert SECTIONS["commands"] in note


def test_fenced_actions_and_edited_files() -> None:
    msgs = list(load(DATA / "swe-agent" / "ctf__crypto__BabyEncryption.traj"))
    note = digest(msgs[1:], max_tokens=800)
    assert "$ create decrypt.py" in note and "decrypt.py (edited)" in note
    assert "ValueError: chr() arg not in range(0x110000)" in note


def test_exit_status_attaches_to_its_own_call() -> None:
    calls = [
        ToolCall(id="a", name="bash", arguments=json.dumps({"command": "make build"})),
        ToolCall(id="b", name="bash", arguments=json.dumps({"command": "make test"})),
    ]
    msgs = [
        Message.user("build and test"),
        Message.assistant("", tool_calls=calls),
        Message.tool("<returncode>0</returncode>", tool_call_id="a"),
        Message.tool("Exit code: 2\nFAILED test_x", tool_call_id="b"),
    ]
    note = digest(msgs)
    assert "- $ make build → exit 0" in note and "- $ make test → exit 2" in note
    assert "- FAILED test_x" in note


def test_rolling_notes_carry_old_items_forward() -> None:
    first = digest(
        [
            Message.user("port the cache to redis"),
            Message.assistant("I decided to use redis-py 5.0.1."),
        ]
    )
    later = [
        Message.user(first, synthetic="summary"),
        Message.user("now add metrics in app/metrics.py"),
    ]
    merged = digest(later)
    assert "port the cache to redis" in merged and "app/metrics.py" in merged
    assert "redis-py 5.0.1" in merged
    assert merged.count("## User requests") == 1


def test_free_text_previous_summary_is_kept_as_earlier_summary() -> None:
    prev = Message.user(
        "[Summary of 9 earlier messages]\nThe team chose Postgres 16.", synthetic="summary"
    )
    note = digest([prev, Message.user("add an index")])
    assert note.startswith("## Earlier summary\n- The team chose Postgres 16.")


def test_digest_is_deterministic_and_deduplicated() -> None:
    msgs = [Message.user("run tests"), Message.tool("ERROR: boom", tool_call_id="x")] * 3
    assert digest(msgs) == digest(list(msgs))
    assert digest(msgs).count("ERROR: boom") == 1


def test_items_are_ranked() -> None:
    items = digest_items([Message.user("fix src/a.py"), Message.assistant("The bug is in a.py.")])
    assert items[0][0] == "requests" and items == sorted(items, key=lambda i: -i[2])


def test_tiny_limits() -> None:
    msgs = [Message.user("x" * 5_000)]
    assert digest(msgs, max_tokens=0) == ""
    assert CharEstimator().count_text(digest(msgs, max_tokens=10)) <= 10


def test_real_tokenizer_limit() -> None:
    tok = TiktokenTokenizer()
    msgs = [
        Message.user("日本語のテキストを要約してください。" * 50),
        Message.assistant("了解 " * 300),
    ]
    assert tok.count_text(digest(msgs, max_tokens=120, tokenizer=tok)) <= 120


_text = st.text(
    alphabet=st.sampled_from(list("abc xyz/._-:0123456789\nERROR Traceback`#")), max_size=300
)


@settings(max_examples=60, deadline=None)
@given(
    parts=st.lists(st.tuples(st.sampled_from(["user", "assistant", "tool"]), _text), max_size=12),
    limit=st.integers(1, 400),
)
def test_never_over_the_limit(parts: list[tuple[str, str]], limit: int) -> None:
    msgs = [
        Message.tool(t, tool_call_id="c") if role == "tool" else Message(role=role, content=t)  # type: ignore[arg-type]
        for role, t in parts
    ]
    note = digest(msgs, max_tokens=limit)
    assert CharEstimator().count_text(note) <= limit


def _plant(messages: list[Message], position: int, statement: str) -> list[Message]:
    from kompakt.messages import Part

    m = messages[position]
    out = list(messages)
    out[position] = m.evolve(content=(*m.content, Part(text=statement)))
    return out


def test_a_constraint_planted_in_a_tool_result_is_kept() -> None:
    msgs = list(load(MINI[7]))  # django-14534: 183 messages, long file listings
    tool = [i for i, m in enumerate(msgs) if m.role == "tool"][10]
    span = _plant(msgs, tool, "Important: the API port must stay 8443 for the staging proxy.")
    # the task (the run's last user message) is never evicted: the span starts after it
    span = _plant(span, tool + 20, "The deploy key id is DK-7F3A-22B1.")[2:-6]
    note = digest(span, max_tokens=800, tokenizer=FLAT)
    quoted = note.split(f"## {SECTIONS['quoted']}\n")[1].split("\n## ")[0]
    assert quoted.startswith("<tool_output>\n") and quoted.endswith("</tool_output>")
    assert "the API port must stay 8443" in quoted and "DK-7F3A-22B1" in quoted
    assert (
        digest(msgs[2:-6], max_tokens=800, tokenizer=FLAT).count("8443") == 0
    )  # it came from the plant


def test_source_listings_and_grep_hits_are_not_facts() -> None:
    note = digest(list(load(MINI[0]))[1:-6], max_tokens=800)  # astropy: grep -n, sed -n output
    kept = [
        note.split(f"## {SECTIONS[s]}\n")[1].split("\n## ")[0]
        for s in ("facts", "quoted")
        if f"## {SECTIONS[s]}\n" in note
    ]
    assert kept  # the run states facts, and its tools print some
    for line in "\n".join(kept).splitlines():
        line = re.sub(r"^- \([^)]*\) ", "- ", line)  # a quoted line's label
        assert not re.match(r"- \d+[-:]", line) and not line.startswith("-     "), line


def test_reasoning_with_must_stays_a_decision_and_labelled_values_are_facts() -> None:
    msgs = [
        Message.user("fix the cache"),
        Message.assistant("So the bug must be in the eviction loop of cache.py."),
        Message.assistant("Decision DEC-0042: keep the LRU size at 512 entries."),
        Message.tool(
            "Config: redis 7.2.4 listens on port 6380\nNever flush the prod db.", tool_call_id="c"
        ),
    ]
    note = digest(msgs)
    facts = note.split(f"## {SECTIONS['facts']}\n")[1].split("\n## ")[0]
    decisions = note.split(f"## {SECTIONS['decisions']}\n")[1].split("\n## ")[0]
    quoted = note.split(f"## {SECTIONS['quoted']}\n")[1].split("\n## ")[0]
    assert "the bug must be in the eviction loop" in decisions
    assert "DEC-0042" in facts  # the assistant said it: a fact
    # the tool printed these: quoted data, attributed to the call, not facts of the run
    # (lines of one call under its label, written once)
    assert (
        "- (tool c) Config: redis 7.2.4 listens on port 6380\n  Never flush the prod db." in quoted
    )
    assert "port 6380" not in facts


def test_commands_with_the_same_head_prefer_failing_and_latest() -> None:
    calls, results = [], []
    for i in range(30):
        cmd = f"sed -n '{i * 10},{i * 10 + 9}p' src/module_{i}.py"
        calls.append(ToolCall(id=f"s{i}", name="bash", arguments=json.dumps({"command": cmd})))
        results.append(
            Message.tool("<returncode>0</returncode>\n" + "x = 1\n" * 40, tool_call_id=f"s{i}")
        )
    fail = ToolCall(id="t", name="bash", arguments=json.dumps({"command": "pytest -x tests"}))
    msgs = [Message.user("find the bug")]
    for call, result in zip(calls, results, strict=True):
        msgs += [Message.assistant("", tool_calls=[call]), result]
    msgs += [
        Message.assistant("", tool_calls=[fail]),
        Message.tool("exit code: 1", tool_call_id="t"),
    ]
    note = digest(msgs, max_tokens=200)
    assert "- $ pytest -x tests → exit 1" in note
    assert "- looked up: " in note and "sed -n '290,299p' src/module_29.py" in note
    assert "→ exit 0" not in note  # successful look-ups are listed tersely, without status
    rolled = digest([Message.user(note, synthetic="summary"), Message.user("go on")])
    assert "sed -n '290,299p' src/module_29.py" in rolled and "pytest -x tests" in rolled


def test_rolled_commands_keep_their_status_and_line_numbers_are_not_values() -> None:
    call = ToolCall(id="t", name="bash", arguments=json.dumps({"command": "make check"}))
    first = digest(
        [
            Message.user("make the checks pass"),
            Message.assistant("Line 520-522: `elif operand is None:`", tool_calls=[call]),
            Message.tool("exit code: 2", tool_call_id="t"),
        ]
    )
    assert SECTIONS["facts"] not in first  # a line number is not a value worth keeping
    rolled = digest([Message.user(first, synthetic="summary"), Message.user("go on")])
    assert "- $ make check → exit 2" in rolled and "→ exit 2 → exit" not in rolled


def test_rolling_over_real_runs_keeps_the_planted_facts() -> None:
    from kompakt.eval.probes import plant_needles

    kept, planted_count = [], 0
    for path in MINI:
        planted, needles = plant_needles(list(load(path)), per_kind=2)
        # the task is the run's last user message: a compaction never evicts it
        note, body = "", planted[2:-6]
        for start in range(0, len(body), 12):  # a compaction every 12 messages, notes rolling
            prior = [Message.user(note, synthetic="summary")] if note else []
            note = digest([*prior, *body[start : start + 12]], max_tokens=800, tokenizer=FLAT)
        kept += [n.kind for n in needles if n.value in note]
        planted_count += len(needles)
    # before facts were kept, none of the values and constraints survived
    assert kept.count("value") == 2 * len(MINI), kept
    assert len(kept) >= 0.75 * planted_count and kept.count("constraint") >= len(MINI) // 2


@given(st.text(alphabet=st.sampled_from(list("ab./-_ \n\t~:@<(\"'x1")), max_size=60))
def test_paths_are_found_in_the_words_that_can_hold_them(text: str) -> None:
    """The fast path search matches the pattern run over the whole text."""
    from kompakt.notes.digest import _PATH_RE, _find_paths

    assert _find_paths(text) == _PATH_RE.findall(text)


def test_a_chat_about_code_is_not_read_as_an_agents_commands() -> None:
    """Fenced code in a help chat is answered by a person, not by what it printed."""
    chat = [
        Message.user("How do I read a CSV file? We are on Python 3.9 and Postgres 13."),
        Message.assistant(
            "Use the csv module:\n```python\nimport csv\nrows = list(csv.reader(f))\n```"
        ),
        Message.user("Thanks! That works. Our deadline is 28 November, by the way."),
        Message.assistant(
            "Great. For big files:\n```python\nfor row in csv.reader(f):\n    ...\n```"
        ),
    ] * 3
    note = digest(chat, max_tokens=300)
    assert SECTIONS["commands"] not in note
    assert "28 November" in note


def test_a_text_agents_fenced_action_is_still_a_command() -> None:
    run = [
        Message.user("Fix the failing test in utils.py."),
        Message.assistant("Let me look.\n```bash\ngrep -n parse utils.py\n```"),
        Message.user("<returncode>0</returncode>\n<output>\n12:def parse(x):\n</output>"),
        Message.assistant("Now run the tests.\n```bash\npytest -q tests/test_utils.py\n```"),
        Message.user("<returncode>1</returncode>\n<output>\nFAILED tests/test_utils.py\n</output>"),
    ]
    note = digest(run, max_tokens=300)
    assert "$ pytest -q tests/test_utils.py" in note


_CHORES = [
    "washed the car",
    "baked some bread",
    "fixed the bike",
    "called my aunt",
    "cleaned the windows",
    "walked by the river",
    "read a chapter",
    "watered the plants",
    "sorted the post",
    "tidied the garage",
    "painted the fence",
    "ironed the shirts",
    "bought new socks",
]


def test_in_a_chat_between_two_people_either_side_s_facts_count() -> None:
    """When the other side writes like the user (a chat between friends), what it says
    about itself is kept like what the user says, not ranked as an assistant's reply."""
    user_chat = [
        "Long day at work, so many meetings.",
        "I finally cleaned the kitchen, it took hours.",
        "Watched a film last night, fell asleep halfway.",
        "The weather is grim again, rain all week.",
    ]
    other_chat = [
        "Ha, same here, work has been mad.",
        "I made pancakes this morning, they were fine.",
        "I went for a walk at lunch, it was nice.",
        "Rain here too, I need a holiday.",
    ]
    facts = {
        12: Message.user("Big news: I adopted a retired greyhound called Biscuit."),
        27: Message.assistant("Ines turns six on the 21st of March, she wants a dinosaur cake."),
        41: Message.assistant("Carla booked us a flat in Alfama for July, ten days in Lisbon."),
        55: Message.user("I start at Brightwater Analytics on the 15th of May."),
    }
    chat: list[Message] = []
    for k in range(70):
        said = user_chat if k % 2 == 0 else other_chat
        did = _CHORES[k % len(_CHORES)], _CHORES[(k * 7 + 3) % len(_CHORES)]
        text = f"{said[(k // 2) % 4]} Also {did[0]} and {did[1]} today."
        chat.append(facts.get(k) or (Message.user(text) if k % 2 == 0 else Message.assistant(text)))
    note = digest(chat, max_tokens=180)
    assert all(word in note for word in ("Biscuit", "21st of March", "Alfama", "Brightwater"))


def test_between_two_people_what_one_asks_of_the_other_for_good_outranks_chat() -> None:
    """Between people nothing goes to the ledger, but "please don't text me after 9pm"
    asked by either side is worth more than the same chat without the ask."""
    from kompakt.notes.digest import _asked_of
    from kompakt.notes.units import Unit

    asked = Unit("Please don't text me after 9pm unless it's urgent.", "assistant", 3)
    told = Unit("I texted Sam after 9pm about the tickets.", "assistant", 3)
    assert _asked_of(asked) > 0 == _asked_of(told)
    chat = [
        Message.user("Long day at work, so many meetings."),
        Message.assistant("Ha, same here, work has been mad."),
    ] * 20
    chat[11] = Message.assistant("Please don't text me after 9pm unless it's urgent.")
    chat[23] = Message.assistant("I texted Sam after 9pm about the tickets, all sorted.")
    note = digest(chat, max_tokens=40)
    assert "don't text me after 9pm" in note


def test_a_reply_that_restates_what_the_note_names_takes_no_line() -> None:
    """The assistant's recap of what the user said ("£18.50 on ParentPay by 26 April"),
    right after or later, adds nothing once the user's own words are in the note."""
    chat = [
        Message.user("Long day at work, so many meetings."),
        Message.assistant(
            "That sounds tiring. Meetings drain people more than they expect, so protect an "
            "hour of quiet in the evening: a walk, a book, an early night, no screens."
        ),
    ] * 10
    chat[4] = Message.user("mia's school trip is friday 17 may. £18.50 on parentpay by 26 april.")
    chat[9] = Message.assistant(
        "Reminders:\n- Zoo trip Fri 17 May\n- Pay £18.50 on ParentPay by 26 April"
    )
    note = digest(chat, max_tokens=200)
    assert "£18.50 on parentpay by 26 april" in note
    assert note.count("£18.50") == 1


def test_the_other_side_is_a_peer_when_it_writes_like_the_user() -> None:
    from kompakt.notes.digest import _peers

    friends = [
        Message.user("Back from Porto, tired!"),
        Message.assistant("Welcome back! How was it?"),
    ]
    helper = [
        Message.user("How do I boil an egg?"),
        Message.assistant("Put the egg in boiling water for seven minutes, then cool it. " * 4),
    ]
    assert _peers(friends * 4) and not _peers(helper * 4)
    assert not _peers(friends)  # too few messages to tell


def test_what_spells_out_a_rule_goes_with_it() -> None:
    from kompakt.notes import standing_instructions

    said = [
        Message.user("Can you keep replies short? Like two or three sentences. Thanks!"),
        Message.assistant("Will do."),
        Message.user("also can you skip the pleasantries? like the 'great question!' stuff"),
    ]
    assert standing_instructions(said) == [
        "Can you keep replies short?",
        "Like two or three sentences.",
        "also can you skip the pleasantries?",
        "like the 'great question!' stuff",
    ]


def _long_chat(n: int, seed: int = 3) -> list[Message]:
    """`n` messages of a chat where the user states a new fact in every one: far more than
    a note holds, none said twice."""
    import random

    rng = random.Random(seed)
    people = ["Amara", "Bjorn", "Chiara", "Dmitri", "Esme", "Farid", "Greta", "Hiro"]
    cities = ["Lisbon", "Quito", "Oslo", "Hanoi", "Tunis", "Perth", "Lyon", "Cork"]
    things = ["bike", "boat", "piano", "tent", "drone", "kiln", "loom", "kayak"]
    out: list[Message] = []
    for k in range(n // 2):
        who, where, what = rng.choice(people), rng.choice(cities), rng.choice(things)
        fact = f"{who} from {where} sold me a {what} for €{rng.randint(10, 9999)} on day {k}."
        out.append(Message.user(fact))
        out.append(Message.assistant(f"Noted: the {what} from {who} ({k})."))
    return out


def test_a_long_span_is_ranked_as_if_every_unit_were_read_whole(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import sys

    module = sys.modules["kompakt.notes.digest"]  # the package's `digest` is the function
    span = _long_chat(1_200)
    assert sum(len(m.text) for m in span) > 40 * 4 * 300  # far past what a note can hold
    bounded = digest(span, max_tokens=300, tokenizer=FLAT)
    # every unit read whole (supersession and items for all), as before the bound
    monkeypatch.setattr(module, "_CANDIDATE_ROOM", 10**9)
    assert digest(span, max_tokens=300, tokenizer=FLAT) == bounded


def test_an_update_outside_the_best_units_still_outdates_one_of_them() -> None:
    # the old value is among the best units of a long span, the update (long, said in
    # passing) among the rest: it is found, and takes the old one's place
    old = Message.user("Launch: 14 March 2025, 10:30, €40,000 max.")
    new = Message.user(
        "ok so after a lot of back and forth the launch is 9 October now, which honestly"
        " gives all of us a lot more breathing room than any of us had been expecting"
    )
    span = [
        *_long_chat(600),
        old,
        Message.assistant("Got it."),
        *_long_chat(400, seed=4),
        new,
        Message.assistant("Ok."),
        *_long_chat(600, seed=5),
    ]
    note = digest(span, max_tokens=150, tokenizer=FLAT)
    assert "9 October" in note and "14 March" not in note


def test_an_answered_question_is_worth_less_than_one_still_open() -> None:
    """The reply to a question holds what it asked: once answered, the question is
    context, and gives way to the facts around it."""
    question = "quick question, who pays for the dehumidifier hire at Rowan Close?"
    opening = [Message.user("hi"), Message.assistant("Hello! How can I help?")]
    answered = [*opening, Message.user(question), Message.assistant("We reimburse £2.80 a day.")]
    open_ = [*opening, Message.user(question), Message.user("also my name is Sam")]

    def worth(said: list[Message]) -> float:
        return next(score for _, text, score in digest_items(said) if text == question)

    assert worth(answered) < worth(open_)


def test_a_rule_keeps_the_words_the_reply_acknowledged_it_in() -> None:
    """The reply that acknowledges a rule often names it better than the user did ("if
    you ever find yourself guessing ..., don't"): its words go with the user's, marked as
    the reply's."""
    said = [
        Message.user(
            "Oh, and if you ever find yourself guessing who the killer is in your feedback, don't."
        ),
        Message.assistant("Understood. I won't guess the killer or float theories."),
        Message.user("Chapter two is attached."),
    ]
    note = digest(said, max_tokens=200)
    assert "don't. (noted: I won't guess the killer or float theories.)" in note
    assert "Understood" not in note


def test_past_a_share_of_the_note_the_rules_are_shown_without_their_reasons() -> None:
    """Rules said with why they hold: with room, the reasons stay; when the rules would
    fill the note, each is shown alone before any of them goes."""
    said = {
        "Please always answer in British English.": "My editor in Leeds is strict about it.",
        "Never use emojis when you reply to me.": "I read your replies out to my class.",
        "Always put the prices in euros.": "I live in Lisbon and think in euros now.",
        "Please keep every answer under a hundred words.": "I read them on my phone.",
        "Never suggest anything with peanuts in it.": "My son Tomas is allergic to them.",
    }
    msgs = [Message.user(f"{rule} {why}") for rule, why in said.items()]
    roomy = digest(msgs, max_tokens=2000)
    assert all(f"{rule} {why}" in roomy for rule, why in said.items())
    tight = digest(msgs, max_tokens=160)
    assert all(rule in tight for rule in said)
    assert not any(why in tight for why in said.values())
