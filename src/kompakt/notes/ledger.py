"""The ledger of standing instructions, and updates that supersede stale facts.

Standing instructions and preferences are kept verbatim, deduplicated, and carried
forward by every later note; a newer instruction on the same subject replaces the
older one. A fact whose value a later statement changes ("the deadline moved to
April 5") gives way to the newer statement, so a note never shows a stale value as
current.

>>> ledger = Ledger()
>>> ledger.add("Always answer in English.", order=1)
>>> ledger.add("Keep answers under 100 words.", order=2)
>>> ledger.add("Actually, answer in French from now on instead of English.", order=3)
>>> [e.text for e in ledger.entries()]
['Keep answers under 100 words.', 'Actually, answer in French from now on instead of English.']
"""

from __future__ import annotations

import bisect
import itertools
import re
import string
from collections import Counter
from collections.abc import Container, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from functools import lru_cache
from typing import NamedTuple

from kompakt.notes.salience import (
    content_words,
    date_word,
    entity_signal,
    is_question,
    names_in,
    value_signal,
    word_atoms,
)

__all__ = [
    "Entry",
    "Ledger",
    "Supersessions",
    "drop_superseded",
    "same_subject",
    "superseded",
    "supersessions",
    "update_cue",
]

_UPDATE_CUE = re.compile(
    r"\b(?:now|no longer|any ?more|instead|actually|changed?|changing|moved?|moving|switch(?:ed)?"
    r"|updated?|replaced?|dropped|cancel(?:l?ed)?|postponed|rescheduled|pushed|revised?"
    # "the new date is", "new budget:", "my new goal"; not "congrats on the new job"
    r"|new (?:[\w-]+ ){0,2}(?:is|are|will be)\b|new [\w -]{1,24}:|(?:my|our) new"
    r"|correction|corrected|scratch that|forget|not .{1,30} but|rather than|from now on"
    r"|going forward|changed my mind|raised|lowered|increased|decreased|extended|shortened"
    r"|upgraded|downgraded|migrated|became|becomes|turned)\b"
    r"|改成|改为|换成|现在|不再|取消|推迟|更新|其实|调到|调成|涨到|涨价|降到|降价|变成|搬到|搬去"
    # the same in Spanish, Portuguese, French, German and Italian
    r"|\b(?:ahora|agora|maintenant|désormais|jetzt|nun|adesso|ora"
    r"|ya no|já não|não mais|ne \w+ plus|nicht mehr|kein \w+ mehr|non più"
    r"|en vez de|en lugar de|em vez de|au lieu de|stattdessen|anstatt|invece"
    r"|cambi(?:ó|ado|ada|amos)|mud(?:ou|ado|amos)|changée?s?|changeons|geändert"
    r"|cambiato|actualizad[oa]|actualizo|atualizad[oa]|mis à jour|aktualisiert|aggiornat[oa]"
    r"|movid[oa]|pasa de|passa de|pasó a|déplacée?s?|verschoben|spostat[oa]|aplazad[oa]"
    r"|pospuest[oa]|adiad[oa]|reportée?s?|rinviat[oa]|cancelad[oa]|annulée?s?|abgesagt|annullat[oa]"
    r"|al final|finalmente|finalement|en fait|en realidad|eigentlich|doch nicht"
    r"|corrijo|corrección|correção|korrektur|correggo|correzione|corrigo|je corrige)\b"
    # "Neuer Termin: Donnerstag", "nueva fecha: el 14", "nouvelle date :"
    r"|\b(?:neuer?|neues|nuev[oa]|nouvel(?:le)?|nouveau|nuov[oa]|nov[oa]) [\w -]{1,24}\s?:",
    re.IGNORECASE,
)
# Words that say how or when, not what: two units sharing only these share no subject.
_GENERIC = frozenset(
    [
        "always",
        "never",
        "now",
        "from",
        "going",
        "forward",
        "future",
        "whenever",
        "every",
        "time",
        "each",
        "use",
        "using",
        "used",
        "make",
        "sure",
        "remember",
        "keep",
        "please",
        "answer",
        "answers",
        "reply",
        "replies",
        "respond",
        "response",
        "responses",
        "write",
        "want",
        "like",
        "prefer",
        "would",
        "rather",
        "instead",
        "actually",
        "changed",
        "change",
        "moved",
        "move",
        "new",
        "updated",
        "update",
        "switch",
        "switched",
        "also",
        "still",
        "just",
        "really",
        "thing",
        "things",
        "something",
        "anything",
        "everything",
        "stuff",
        "way",
        "ways",
        "lot",
        "bit",
        "good",
        "great",
        "well",
        # what names a thing, not what it is: "it's called The Ashen Crown"
        "called",
        "named",
        # what labels an instruction, not what it is about ("rule for vendor emails: ...")
        "rule",
        "rules",
        "preference",
        "preferences",
        "pls",
        "btw",
        "oh",
        "thing",
    ]
)


def update_cue(text: str) -> bool:
    """Whether `text` says that something changed.

    >>> update_cue("The meeting is now on Friday"), update_cue("The meeting is on Friday")
    (True, False)
    """
    return _statement(text).cue


class _Statement(NamedTuple):
    """What supersession reads of a statement, read once per text; what only a change
    said needs is read when asked (most pairs are out before)."""

    text: str
    subject: frozenset[str]  # content words that name what it speaks of
    words: frozenset[str]  # all its content words
    cue: bool  # it says something changed
    stateful: bool  # it states a value or names a thing: it can go stale
    ends: bool  # it says something ended ("the trip is cancelled", "no longer")
    gone: bool  # it says a thing is gone ("we sold the Skoda")
    valued: bool  # it states a value (a date, an amount, a count)

    @property
    def amounts(self) -> frozenset[tuple[str, str]]:
        """What it counts and how many: ("guests", "120")."""
        return _amounts(self.text) if self.stateful else frozenset()

    @property
    def cjk(self) -> bool:
        """Said in Chinese, Japanese or Korean: its words are character pairs, many to a
        word, so a share of them says less."""
        return _CJK_ANY.search(self.text) is not None

    @property
    def names(self) -> frozenset[str]:
        return names_in(self.text) if self.stateful else frozenset()

    @property
    def removed(self) -> frozenset[str]:
        """The names it says are gone."""
        return self.names if self.gone else frozenset()

    @property
    def renewed(self) -> frozenset[str]:
        """What it says is new ("that's my new goal": "goal")."""
        return _renewed(self.text)


# The same words in Spanish, Portuguese, French, German and Italian: they say that
# something changed, never what (no subject of a change, as "updated" is none)
_OTHER_LANGUAGE_CUES = frozenset(
    re.findall(
        r"\S+",
        """
    ahora agora maintenant désormais jetzt nun adesso ora ya já não ne nicht kein non en
    em au stattdessen anstatt invece cambió cambiado cambiada cambiamos mudou mudado
    mudamos changé changée changeons geändert cambiato actualizado actualizada actualizo
    atualizado atualizada mis aktualisiert aggiornato aggiornata movido movida pasa
    passa pasó déplacé déplacée verschoben spostato spostata aplazado aplazada pospuesto
    pospuesta adiado adiada reporté reportée rinviato rinviata cancelado cancelada
    annulé annulée abgesagt annullato annullata al finalmente finalement eigentlich doch
    corrijo corrección correção korrektur neu neue neuer neues nuevo nueva nouveau nouvel
    nouvelle nuovo nuova novo nova""",
    )
)
# The words one of _UPDATE_CUE's alternatives needs: the pattern is searched only when
# the text holds one (or is CJK), which most statements do not.
_UPDATE_GATE = _OTHER_LANGUAGE_CUES | frozenset(
    re.findall(
        r"\S+",
        """
    now longer any anymore more instead actually change changed changing move moved
    moving switch switched update updated replace replaced dropped cancel canceled
    cancelled postponed rescheduled pushed new revise revised correction corrected
    scratch forget not rather going forward raised lowered increased decreased extended
    shortened upgraded downgraded migrated became becomes turned""",
    )
)


# The commonest function words of Spanish, Portuguese, French, German, Italian and
# Catalan (those that are no English word): a rule's "sempre", "bitte" or "quand" is how
# rules are said in that language, no subject two rules could share
_OTHER_LANGUAGE_FUNCTION_WORDS = frozenset(
    re.findall(
        r"\S+",
        """
    siempre nunca favor porfa cuando que qué del las los una unos unas pero para por mis
    tus sus les nos yo usted más menos muy también todo todos toda todas cada vez este
    esta esto ese esa eso como cómo hay ser está están nada algo sempre quando dos das
    os um uma ou mas com sem pelo pela na nas meu minha teu tua seu sua lhe eu você vocês
    mais muito isso esse essa isto há são estão toujours jamais svp quand qui du des les
    une et avec dans sur mon mes tes ses lui leur je tu vous nous elle très aussi tout
    tous toute toutes chaque fois ce cette cet ces comme sont rien immer nie niemals bitte
    wenn dass der das dem ein eine einen einem und oder aber mit ohne für von zu im auf
    mein meine dein deine sein seine mir mich dir dich sich ich du sie wir er es mehr
    weniger sehr alle alles jede jeder jedes dies diese dieser wie ist sind noch schon
    nichts mai per favore che di della dei delle il lo la gli le uno senza da su mio mia
    tuo suo io noi più meno molto anche tutto tutti ogni volta questo questa è sono niente
    si us plau quan els amb sense meva teva em et jo més molt també tot vegada aquest
    aquesta és són res""",
    )
)
_GENERIC |= _OTHER_LANGUAGE_CUES | _OTHER_LANGUAGE_FUNCTION_WORDS


def _update_cue(text: str, words: frozenset[str]) -> bool:
    if words.isdisjoint(_UPDATE_GATE) and (text.isascii() or not _CJK_UPDATE.search(text)):
        return False
    return _UPDATE_CUE.search(text) is not None


_CJK_UPDATE = re.compile(r"[改换现不取推更其调涨降变搬]")
_CJK_ANY = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]")


def _days_and_months() -> dict[str, str]:
    """A weekday's or month's name in Spanish, Portuguese, French, German and Italian
    (and the plurals "Mondays", "lunes", "montags"), as its English name: "we close on
    Mondays" and "cerramos los martes en vez de los lunes" speak of one day."""
    names = {
        "monday": "lunes segunda lundi montag montags lunedì lunedi",
        "tuesday": "martes terça mardi dienstag dienstags martedì martedi",
        "wednesday": "miércoles miercoles quarta mercredi mittwoch mittwochs mercoledì",
        "thursday": "jueves quinta jeudi donnerstag donnerstags giovedì giovedi",
        "friday": "viernes sexta vendredi freitag freitags venerdì venerdi",
        "saturday": "sábado sabado samedi samstag samstags sabato",
        "sunday": "domingo dimanche sonntag sonntags domenica",
        "january": "enero janeiro janvier januar gennaio",
        "february": "febrero fevereiro février februar febbraio",
        "march": "marzo março mars märz",
        "april": "abril avril aprile",
        "may": "mayo maio mai maggio",
        "june": "junio junho juin juni giugno",
        "july": "julio julho juillet juli luglio",
        "august": "agosto août",
        "september": "septiembre setembro septembre settembre",
        "october": "octubre outubro octobre oktober ottobre",
        "november": "noviembre novembro novembre",
        "december": "diciembre dezembro décembre dezember dicembre",
    }
    out = {f"{day}s": day for day in names if day.endswith("day")}
    for english, said in names.items():
        out.update(dict.fromkeys(said.split(), english))
    return out


_SAME_DAY = _days_and_months()
_DAY_WORDS = frozenset(_SAME_DAY)
_CALENDAR = frozenset(_SAME_DAY.values())
# a change in Chinese names its new value after the verb: "改成新西兰了"
_CJK_NEW_VALUE = re.compile(
    r"(?:改成|改为|改到|换成|换到|搬到|定在|改在|调到|调成|涨到|降到|变成)[^\s，。！？了]"
)


@lru_cache(maxsize=1 << 14)
def _statement(text: str) -> _Statement:
    said = content_words(text)
    words = frozenset(map(_SAME_DAY.get, said, said))  # each day's name as English says it
    subject = _subject(text)
    # a question states nothing that could go stale
    told = not is_question(text)
    valued = told and bool(value_signal(text) or _CJK_NEW_VALUE.search(text))
    stateful = valued or (told and bool(entity_signal(text)))
    atoms = word_atoms(text)
    gone = stateful and not atoms.isdisjoint(_REMOVAL_GATE) and bool(_REMOVAL.search(text))
    cue = gone or _update_cue(text, atoms)
    ends = cue and (not atoms.isdisjoint(_ENDED) or "不再" in text or "取消" in text)
    return _Statement(text, subject, words, cue, stateful, ends, gone, valued)


@lru_cache(maxsize=1 << 14)
def _subject(text: str) -> frozenset[str]:
    """The content words that name what a statement speaks of: read of every statement
    of a span, where the rest of `_statement` is read of the few compared."""
    words = frozenset(content_words(text))
    if not words.isdisjoint(_DAY_WORDS):
        words = frozenset(_SAME_DAY.get(w, w) for w in words)
    subject = words - _GENERIC  # set operations: a loop in C, over the few words said
    # "switched classes" speaks of the puppy class: one subject in the singular
    # (a name stays as written: "Leeds" is no plural)
    subject = frozenset(_singular(w) if w in text else w for w in subject)
    # a word opens with a letter or a digit, and ASCII digits sort before every letter:
    # in ASCII text the least word tells whether any opens with a digit
    if subject and not text.isascii():
        subject = frozenset(w for w in subject if not w[0].isdigit())
    elif subject and min(subject) < ":":  # the words from the first that opens with a letter
        ordered = sorted(subject)
        subject = frozenset(ordered[bisect.bisect_left(ordered, ":") :])
    # "Dr Shah changed his bisoprolol": the pills changed
    if _agent_verb(text, words) and (agent := _AGENT.match(text)):
        subject -= frozenset(content_words(agent.group(1)))
    return subject


def _singular(word: str) -> str:
    """An English plural as its singular, near enough to compare ("classes", "boxes",
    "tickets"); other words as they are ("bus", "glass", "its"). A word in "-y" after a
    consonant is read as its plural is ("summary" and "summaries": "summarie")."""
    if len(word) >= 4 and word[-1] == "y" and word[-2] not in "aeiouy":
        return word[:-1] + "ie"
    if len(word) < 4 or word[-1] != "s" or word[-2] in "siu'" or word in _NOT_PLURAL:
        return word
    if word.endswith(("sses", "ches", "shes", "xes")):
        return word[:-2]
    return word[:-1]


_NOT_PLURAL = frozenset(["news", "series", "species", "lens", "always", "perhaps", "whereas"])


def _agent_verb(text: str, words: AbstractSet[str]) -> bool:
    """Whether `text` (its content `words`) may say who made a change (`_AGENT`): in ASCII
    text, its verb is one of the words; the pattern is tried otherwise."""
    if not text.isascii():
        return True  # (the pattern's case-blind letters match more than lower-cased words)
    return not words.isdisjoint(_AGENT_VERBS)


_AGENT_VERBS = frozenset(
    re.findall(
        r"\S+",
        """changed stopped switched replaced swapped cancelled canceled moved upped raised
        lowered increased reduced dropped pushed put rescheduled postponed updated""",
    )
)


@lru_cache(maxsize=1 << 12)
def _renewed(text: str) -> frozenset[str]:
    if "new" not in text.lower():
        return frozenset()
    return frozenset(_NEW_THING.findall(text.lower()))


# "my new goal", "the new date", and a sentence opening on it: "new appointment is ..."
_NEW_THING = re.compile(r"(?:\b(?:my|our|the) |(?:^|[.!?:]) ?)new ([a-z][a-z-]+)")


# who made a change to something ("Dr Shah changed his bisoprolol", "Thermobake moved
# the delivery to 2 April"): what changed is what follows the verb, not who changed it
_AGENT = re.compile(
    r"\W*([^\W\d][\w .'’-]{0,40}?)\s+(?:has |have |had )?"
    rf"(?:{'|'.join(sorted(_AGENT_VERBS))})\s+(?:his|her|their|my|our|your|its|the|a|an)\b"
    r"(?! mind\b)",  # who "changed his mind" is what changed
    re.IGNORECASE,
)


# what says a thing ended, with no value to replace it: "the trip is cancelled"
_ENDED = frozenset(
    ["cancel", "cancelled", "canceled", "longer", "anymore", "dropped", "scratch", "forget"]
)


_DIGIT = re.compile(r"\d")


# what says a named thing is gone: what was said of it is no longer current (searched
# only when a word it needs is there)
_REMOVAL = re.compile(
    r"\b(?:got rid of|sold|gave up|quit|no longer|traded in|broke up with|gave away)\b",
    re.IGNORECASE,
)
_REMOVAL_GATE = frozenset(["rid", "sold", "gave", "quit", "longer", "traded", "broke"])


@lru_cache(maxsize=1 << 12)
def _amounts(text: str) -> frozenset[tuple[str, str]]:
    """What a statement counts and how many: "120 guests" is ("guests", "120"), "€189"
    is ("€", "189")."""
    if _DIGIT.search(text) is None:
        return frozenset()
    counted = [(unit.lower(), n) for n, unit in _COUNTED.findall(text)]
    priced = _PRICED.findall(text) + [(c, n) for n, c in _PRICED_AFTER.findall(text)]
    return frozenset([c for c in counted if not date_word(c[0])] + priced)


# led by the digit, the look behind after it: the engine skips to digits fast, where a
# pattern led by a look behind is tried at every character
_COUNTED = re.compile(r"(\d(?<![\w.,:$€£¥-]\d)(?:[\d,.]*\d)?)\s?([^\W\d_]{2,})")
_PRICED = re.compile(r"([$€£¥])\s?(\d(?:[\d,.]*\d)?)")
_PRICED_AFTER = re.compile(r"(\d(?:[\d,.]*\d)?)\s?([$€£¥])")  # "19.380 €", as Europe writes it


def _recounted(a: _Statement, b: _Statement) -> int:
    """How many subject words the two statements must share for the newer to recount
    what the older counts, with another number: one for a count ("120 guests", then
    "95 guests": the noun is shared), two for a sum of money ("the budget is €60,000",
    then "the budget is now €48,000", not "the price is now €179 ex-VAT"; one where the
    newer names only one thing: "retail is €179 now"). A large number when it recounts
    nothing."""
    if not (a.stateful and b.stateful) or not (a.amounts and b.amounts):
        return _NEVER  # most statements count nothing: nothing recounted
    older: dict[str, set[str]] = {}
    newer: dict[str, set[str]] = {}
    for amounts, by_unit in ((a.amounts, older), (b.amounts, newer)):
        for unit, n in amounts:
            by_unit.setdefault(unit, set()).add(n)
    # a recap that says the old amount again beside others changes nothing
    units = [unit for unit, ns in newer.items() if unit in older and older[unit].isdisjoint(ns)]
    if not units:
        return _NEVER
    return min(2 if unit in _CURRENCY else 1 for unit in units)


_NEVER = 1 << 30
_CURRENCY = frozenset("$€£¥")


def _subject_words(text: str) -> frozenset[str]:
    return _statement(text).subject


def same_subject(older: str, newer: str) -> bool:
    """Whether two statements speak of the same thing: most of their subject words are
    shared, or the newer one says it changes something the older one names.

    >>> same_subject("The deadline is March 1.", "The deadline moved to April 5.")
    True
    >>> same_subject("My cat is named Tom.", "The deadline moved to April 5.")
    False
    """
    return _same_subject(_statement(older), _statement(newer))


def _same_subject(
    a: _Statement, b: _Statement, *, firm: bool = False, rare: AbstractSet[str] = frozenset()
) -> bool:
    if not a.subject or not b.subject:
        return False
    if _alike(a, b):
        return True
    if firm or not b.cue:  # what follows takes a change said, and no reply's recap
        return False
    common = a.subject & b.subject
    shared = len(common)
    if b.removed & a.names:  # "we got rid of the Skoda" after "we drive a Skoda Fabia"
        return True
    if not a.valued and not b.ends and common and common <= a.names:
        return False  # "Okonkwo wants rent on the 28th now": Okonkwo is still who he was
    if common and common <= _CALENDAR and len(b.subject & _CALENDAR) < 2:
        # "did 22 km in them Sunday" after "the marathon is Sunday 12 April": one day in
        # common is no subject ("los martes en vez de los lunes" changes the day)
        return False
    if b.stateful and b.renewed & a.subject:  # "... under 1:55. That's my new goal."
        return True
    if b.stateful and b.subject <= a.subject and not b.subject & b.names:
        return True  # "the flight moved, it's the 16th now": all it names, the older did
    if shared and _changed_mind(b):
        return True  # "alfie changed his mind. now he's a knight": what Alfie wanted
    need = _recounted(a, b)
    if need < _NEVER:  # "we're at 95 guests now" after "about 120 guests"
        return shared >= min(need, len(b.subject))
    if b.stateful and a.cjk and not rare.isdisjoint(a.subject & b.subject):
        return True  # "蜜月…改成新西兰了" after "蜜月想去冰岛": a pair said almost nowhere else
    # a change said in passing ("it's now basically a donation") shares a word with many
    # a statement: it names the older one's subject when it shares a fair part of it
    if shared < _CHANGED_SHARE * len(a.subject):
        return False
    # one word in common outdates only with a value or a name to replace it: "she is due
    # any day now" leaves "the due date is 30 August" standing
    # (a word said all through a span, "ask", names no one subject)
    return shared > 1 or (b.stateful and (not rare or common <= rare or common <= b.names))


def _changed_mind(b: _Statement) -> bool:
    """Whether it says someone changed their mind: what they wanted before is stale."""
    return "mind" in b.words and _CHANGED_MIND.search(b.text) is not None


_CHANGED_MIND = re.compile(r"\bchanged (?:his|her|my|their|our) minds?\b", re.IGNORECASE)
_CHANGED_SHARE = 0.3
_RARE = 2  # statements: a word said in no more names one subject


def superseded(older: str, newer: str) -> bool:
    """Whether `newer` replaces `older`: the same subject, and the newer says it changed
    (or they are near the same statement with different values).

    >>> superseded("Response time is 400 ms.", "Response time is now 250 ms.")
    True
    >>> superseded("We use Redis for caching.", "We dropped Redis.")
    True
    >>> superseded("I live in Oslo.", "I love Oslo in winter.")
    False
    """
    return _superseded(_statement(older), _statement(newer))


def _alike(a: _Statement, b: _Statement) -> bool:
    """Most subject words shared: two statements of one thing, whatever they say of it."""
    shared = len(a.subject & b.subject)
    return shared >= 2 and shared >= 0.6 * min(len(a.subject), len(b.subject))


def _superseded(
    a: _Statement, b: _Statement, *, firm: bool = False, rare: AbstractSet[str] = frozenset()
) -> bool:
    """`rare`: the words said in so few statements that one names their subject."""
    if not a.stateful or not _same_subject(a, b, firm=firm, rare=rare):
        return False  # only a statement of a value or a named thing can go stale
    # "now waiting on the fit" replaces no value (who changed their mind replaces a wish)
    if b.cue and (b.stateful or b.ends or _changed_mind(b)):
        # nor does "the Bongard has now moved twice" replace its date: it says no new
        # value, and names nothing new ("switched the holiday to Lisbon" does)
        if a.valued and not (b.ends or b.gone):
            old, new = _amounts_said(a.words), _amounts_said(b.words)
            if old and old == new:
                return False  # "Updated: Bongard now due 2 April" after "2 April now."
            if not b.valued or (old and not new):  # (an order number is no new value)
                return _names_new(a, b)
        return True
    if a.valued and b.valued and (key := _key(a.text)) and key == _key(b.text):
        # "Price: £38 a head" then "Price: £42 a head": one key, none of its values again
        # ("Kyoto: Gion (HNR-2291), 11-15 Oct" restates "Kyoto: Gion, code HNR-2291")
        old, new = _figures(a.words), _figures(b.words)
        return bool(old and new) and old.isdisjoint(new)
    # a total said again with new figures: most words of each are the other's
    shared = len(a.subject & b.subject)
    if shared >= 0.6 * max(len(a.subject), len(b.subject)) and _recounted(a, b) < _NEVER:
        return True
    # near the same statement, with another value
    return len(a.words & b.words) >= 0.75 * max(len(a.words), len(b.words)) and a.words != b.words


def _key(text: str) -> str:
    """The key of a ``key: value`` line ("Price: £42 a head" -> "price"), "" for others:
    a later line of one key states its new value."""
    head, colon, value = text.partition(":")
    head = head.strip(" -*•")
    if not colon or not value.strip() or len(head) > _KEY_CHARS or head.count(" ") > 2:
        return ""
    return head.lower() if head[:1].isalpha() else ""  # not "11" of "11:15", not a table


_KEY_CHARS = 24


def _names_new(a: _Statement, b: _Statement) -> bool:
    """Whether `b` names something `a` does not say (read in `a`'s words, not its names:
    "BG-22817" in brackets is a name in one and not the other)."""
    said = a.text.lower()
    return any(n not in said for n in names_in(b.text))


def _figures(words: frozenset[str]) -> frozenset[str]:
    return frozenset(w for w in words if _DIGIT.search(w))


def _amounts_said(words: frozenset[str]) -> frozenset[str]:
    """The figures that are amounts, dates or times ("2", "87.5kg", "3:58:41"), not codes
    ("BG-22817", "v2"): a unit after the number is still a number."""
    return frozenset(w for w in _figures(words) if _NUMBER.fullmatch(w.rstrip(_UNIT_LETTERS)))


_NUMBER = re.compile(r"[£$€¥]?\d[\d.,:/–-]*")
_UNIT_LETTERS = string.ascii_lowercase + "%°"


@dataclass
class Entry:
    """One standing instruction: its verbatim text, when it was said (later is larger)
    and how salient it is."""

    text: str
    order: float
    salience: float = 0.0
    shown: bool = True
    """False for an instruction still sent after the note: it only replaces older ones."""
    rule: str = ""
    """The instruction alone, without the reasons said with it: what a newer one must
    speak of to replace it (the text when empty)."""

    @property
    def brief(self) -> str:
        """The instruction without the reasons said with it, with the words the reply
        acknowledged it in: what a note shows when its room is short."""
        rule = self.rule or self.text
        at = self.text.rfind(" (noted: ")
        noted = self.text[at:] if at >= 0 else ""
        return rule + noted if noted and noted not in rule else rule


class Ledger:
    """Standing instructions, deduplicated; a newer one on the same subject replaces
    the older."""

    def __init__(self) -> None:
        self._entries: list[Entry] = []

    def add(
        self,
        text: str,
        *,
        order: float,
        salience: float = 0.0,
        shown: bool = True,
        rule: str = "",
        replaces: bool = True,
    ) -> None:
        """Add an instruction said at `order`; `rule` is the instruction alone where
        `text` also says why it holds (what a newer instruction must speak of to replace
        it); `replaces` False when it may only be added (read less surely than others)."""
        text = text.strip()
        if not text:
            return
        key = _norm(text)
        rule = rule.strip() or text
        for e in list(self._entries):
            if _norm(e.text) == key or key in _norm(e.text):
                e.order = max(e.order, order) if _norm(e.text) == key else e.order
                return  # said again (or contained in what is kept): nothing new
            if _norm(e.text) in key:
                self._entries.remove(e)
            elif (
                replaces
                and e.order <= order
                and _replaces(e.rule or e.text, rule, together=_said_together(e.order, order))
            ):
                self._replace(e, rule)
        self._entries.append(Entry(text, order, salience, shown, "" if rule == text else rule))

    def _replace(self, e: Entry, newer: str) -> None:
        """`newer` replaces `e`: whole, or the clauses of it that speak of what `newer`
        does ("Arial 12, a key words box at the top, never more than two sides" then "use
        Century Gothic instead of Arial" leaves the box and the two sides)."""
        parts = [p.strip() for p in _CLAUSE.split(e.text) if p and p.strip()]
        said = _subject_words(newer)
        left = [p for p in parts if _subject_words(p).isdisjoint(said)]
        if len(parts) < _LISTED or not left:  # a rule and its reason go together
            self._entries.remove(e)
        elif len(left) < len(parts):
            e.text, e.rule = "; ".join(left), ""

    def entries(self) -> list[Entry]:
        """The instructions in force that the note shows, oldest first."""
        return sorted((e for e in self._entries if e.shown), key=lambda e: e.order)

    def __len__(self) -> int:
        return len(self._entries)


_LISTED = 3  # clauses of an instruction that list several rules
_FROM_NOW_ON = re.compile(r"\b(?:from now on|going forward|from here on)\b", re.IGNORECASE)


def _said_together(a: float, b: float) -> bool:
    """Whether two orders are of one message (a message's units are its fractions)."""
    return int(a) == int(b)


def _replaces(older: str, newer: str, *, together: bool = False) -> bool:
    """Whether the rule `newer` replaces `older`; rules said `together` in one message
    both stand."""
    if together:
        return False
    a, b = _subject_words(older), _subject_words(newer)
    if not a or not b:
        return False
    shared = a & b
    # "forget stern, just use kubectl logs" changes what names stern: "write kubectl in
    # full" stands
    instead = _INSTEAD_OF.search(newer)
    if instead and _singular(instead.group(1).lower()) in a:
        return True  # "Century Gothic instead of Arial": what it names, it replaces
    dropped = _DROPPED.search(newer)
    if dropped is None or dropped.group(1).lower() in older.lower():
        if update_cue(newer) and _negates(older, newer) and _enough(shared, a, b):
            return True  # "don't ring me" then "from now on you can ring me": turned around
        # "from now on" says a rule is one, not that it changes another ("Letters to him
        # from now on" leaves "Some rules for all letters from now on: ..." standing)
        if _enough(shared, a, b) and update_cue(_FROM_NOW_ON.sub("", newer)):
            return True
    return len(shared) >= 0.6 * min(len(a), len(b)) and len(shared) >= 2


def _enough(shared: frozenset[str], a: frozenset[str], b: frozenset[str]) -> bool:
    """Whether the subject words two rules share say they speak of one thing, beside a
    change said: one word of several is a word in passing ("easy runs by heart rate"
    then "my long run moves to Saturdays")."""
    return len(shared) >= 2 or (len(shared) == 1 and min(len(a), len(b)) <= 2)


_INSTEAD_OF = re.compile(
    r"\b(?:instead of|rather than|in place of|en vez de|en lugar de|au lieu de|statt|anstatt"
    r"|invece di|em vez de|em lugar de) (?:the |a |an |el |la |los |las |le |les |der |die "
    r"|das |den |il |lo |o |os |as )?([^\W\d_][\w-]*)",
    re.IGNORECASE,
)
_DROPPED = re.compile(
    r"\b(?:forget|drop|scrap|ditch|stop using|no more|never mind|cancel) (?:the |about )?([\w-]+)",
    re.IGNORECASE,
)


def _negates(older: str, newer: str) -> bool:
    """`always X` then `never X` (or the reverse) on the same words."""
    pol_a = bool(re.search(r"\b(?:never|don't|do not|no)\b|不要|别", older, re.I))
    pol_b = bool(re.search(r"\b(?:never|don't|do not|no)\b|不要|别", newer, re.I))
    return pol_a != pol_b and bool(_subject_words(older) & _subject_words(newer))


@lru_cache(maxsize=1 << 12)  # each entry is compared with every instruction added after it
def _norm(text: str) -> str:
    return re.sub(r"[\s\W_]+", " ", text.lower()).strip()


def drop_superseded(texts: Sequence[tuple[str, float]]) -> dict[int, int]:
    """Which statements a later one supersedes: ``{older index: newest index}`` (`texts`
    are ``(text, order)``).

    >>> drop_superseded([("The deadline is May 1.", 1), ("I like tea.", 2),
    ...                  ("The deadline moved to June 3.", 3)])
    {0: 2}
    """
    return {old: newer[-1] for old, newer in supersessions(texts).items()}


def supersessions(
    texts: Sequence[tuple[str, float]], *, replies: Container[int] = ()
) -> dict[int, list[int]]:
    """Every later statement that supersedes each older one, oldest first: ``{older
    index: [newer indexes]}`` (`texts` are ``(text, order)``). One statement may be
    outdated in parts by several ("price €189, warranty 2 years", then the price, then
    the warranty). A reply (by index in `replies`) outdates only a statement that shares
    most of its subject words, not one it shares a word or two with beside a change said:
    a recap ("your sequence now looks like: start on the 17th, then ...") touches many
    statements and changes none.

    Only statements that share a subject word are compared, and a word said in very
    many statements names no subject: near-linear in practice.

    >>> supersessions([("Price €189, warranty 2 years.", 1), ("The price is now €179.", 2),
    ...                ("The warranty is now 3 years.", 3)])
    {0: [1, 2]}
    """
    index = Supersessions(texts, replies=replies)
    return {i: newer for i in range(len(texts)) if (newer := index.newer(i))}


class Supersessions:
    """The statements of a span indexed by their subject words: `newer(i)` is every later
    statement that supersedes statement `i` (see `supersessions`). Asked only of the
    statements a note could keep, it reads whole only those and their rivals, not the
    thousands of a long span.

    >>> index = Supersessions([("The deadline is May 1.", 1), ("I like tea.", 2),
    ...                        ("The deadline moved to June 3.", 3)])
    >>> index.newer(0), index.newer(1)
    ([2], [])
    """

    def __init__(self, texts: Sequence[tuple[str, float]], *, replies: Container[int] = ()):
        self.texts = texts
        self.replies = replies
        self.subjects = [_subject(t) for t, _ in texts]
        # how many statements name each word (counted in one call)
        said = Counter(itertools.chain.from_iterable(self.subjects))
        common = max(8, min(64, len(texts) // 20))  # a word said everywhere names no subject
        self.rare = {w for w, n in said.items() if n <= _RARE}
        self.moves = _moves(texts)  # most spans: none, and no home is read
        self.by_word: dict[str, list[int]] = {}
        for j, subject in enumerate(self.subjects):
            for w in subject:
                if said[w] <= common:
                    self.by_word.setdefault(w, []).append(j)

    def newer(self, i: int) -> list[int]:
        """The later statements that supersede statement `i`, oldest first."""
        text, when = self.texts[i]
        old = _statement(text)
        if not old.stateful:  # only a statement of a value or a named thing can go stale
            return []
        rivals: set[int] = set()
        for w in self.subjects[i]:
            rivals.update(self.by_word.get(w, ()))
        texts, replies, rare = self.texts, self.replies, self.rare
        gone = [
            j
            for j in rivals
            if texts[j][1] > when
            and _superseded(old, _statement(texts[j][0]), firm=j in replies, rare=rare)
        ]
        if self.moves and " in " in text and (home := _HOME.search(text)):
            gone += [j for j, place, moved in self.moves if moved > when and place != home[1]]
        return sorted(set(gone), key=lambda j: (texts[j][1], j))


def _moves(texts: Sequence[tuple[str, float]]) -> list[tuple[int, str, float]]:
    """The statements of a move, with where to: where someone lives changes with one,
    though the two share no word ("I'm in Columbus", then "we're moving to Pittsburgh")."""
    return [
        (j, found[1], when)
        for j, (text, when) in enumerate(texts)
        if ("mov" in text or "reloc" in text) and (found := _MOVE.search(text))
    ]


_HOME = re.compile(
    r"\b(?:I|[Ww]e)(?:['’]m| am|['’]re| are)?(?: (?:now|currently|still))?"
    r" (?:live in|living in|based in|settled in|in) ([A-Z][\w'’-]+)"
)
_MOVE = re.compile(
    r"\b(?:I|[Ww]e)(?:['’]m| am|['’]re| are|['’]ve| have)?(?: (?:just|finally|now|officially))?"
    r" (?:moving|moved|relocating|relocated) (?:back )?to ([A-Z][\w'’-]+)"
)


_CLAUSE = re.compile(r",?\s+(?:and|but|while|whereas)\s+|;\s*|,\s+|，|；")


# a clause that only says what a value no longer is ("$12,050 total, not $11,200"): with
# the changed clause gone, it would state the old value alone
_DENIED = re.compile(
    r"(?:not|no longer|instead of|rather than|nicht|pas|no|não|non)\s+\S+[\s.!]*$", re.IGNORECASE
)


def _other_names(clause: str, newer: str) -> bool:
    """Whether a clause names something `newer` does not."""
    said = newer.lower()
    return any(n not in said for n in names_in(clause))


def surviving_clauses(older: str, newer: str) -> str:
    """What of `older` a superseding `newer` leaves standing: its clauses that speak of
    something else ("" when none do).

    >>> surviving_clauses("My budget is $1200 and I must be back by May 5.",
    ...                   "Actually the budget is now $1500.")
    'I must be back by May 5.'
    """
    parts = [p.strip() for p in _CLAUSE.split(older) if p and p.strip()]
    if len(parts) < 2:
        return ""
    new = _statement(newer)
    # a new amount changes the clauses that say one: "putting Hollins Farm on the market
    # with Fletcher & Rowe" stands when "the asking" is "dropped to £1.05m"
    amounts = new.valued and _amounts_said(new.words)
    apart = {
        p
        for p in parts
        if amounts and _other_names(p, newer) and not _amounts_said(_statement(p).words)
    }
    rest = [p for p in parts if p not in apart]
    changed = [p for p in rest if _superseded(_statement(p), new)]
    kept = [
        p for p in parts if (p in apart or (changed and p not in changed)) and not _DENIED.match(p)
    ]
    if len(kept) == len(parts) or not kept:
        return ""
    return "; ".join(kept)
