"""Salience: how much a unit of conversation is worth keeping, read from its content.

No model and no vocabulary of a domain: each signal is a small, separately tested
reading of the text, and their sum is the unit's salience (one signal, and the reading of
rules no cue reads, are weights fitted on hand-written conversations:
`kompakt.notes.fitted`). What counts:

* **instructions** and preferences the user states ("always ...", "never ...",
  "from now on ...", "I prefer ...", "please don't ...", and the same in Chinese);
* **constraints** and commitments (must, only, at most, deadlines, budgets, limits)
  and **values**: numbers with units, money, dates, times, versions;
* **changes** of state (decided, switched to, moved to, now, updated, blocked on);
* **entities** and identifiers: names, codes, URLs, e-mails, paths, hashes, ids;
* **facts the user states about themselves** ("my sister lives in Oslo");
* **rarity** within the conversation: a unit whose words are rare here says more
  than one repeating what everybody says.
* **what facts are said like**: how likely the fitted weights find in the unit a fact
  a question later asks for.

Filler (greetings, thanks, acknowledgements, pleasantries, generic advice) scores
near zero. Who said a unit is one signal among the others, not a rank.

>>> s = Salience.of(["Thanks, that's great!", "My flight to Lisbon leaves on 12 March."])
>>> s.score("Thanks, that's great!", "user") < 1 < s.score(
...     "My flight to Lisbon leaves on 12 March.", "user")
True
"""

from __future__ import annotations

import itertools
import math
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache

from kompakt.notes.fitted import factual, told
from kompakt.notes.vocabulary import everyday

__all__ = [
    "Salience",
    "acknowledged_rule",
    "acknowledgement",
    "change_signal",
    "constraint_signal",
    "content_words",
    "entity_signal",
    "is_filler",
    "is_instruction",
    "is_question",
    "names_in",
    "self_fact_signal",
    "value_signal",
    "word_atoms",
]


def _wordset(words: str) -> frozenset[str]:
    return frozenset(re.split(r"\s+", words.strip()))


# -- instructions and preferences ------------------------------------------------------

# verbs a rule opens with, told: "use", "run", "end every ..." (one list: the pattern
# below, and the words that let a sentence be tried against it)
_IMPERATIVE_VERBS = """use run write put add end start begin include keep make give show send
    format sign mark label spell round list cite quote flag tag number call address reply
    answer respond check double-check leave stick avoid skip finish open close lead sort
    group convert translate summarise summarize bold highlight link attach copy cc date"""
_IMPERATIVE = "(?:" + "|".join(_IMPERATIVE_VERBS.split()) + ")"
# what a told rule may open with before its verb: "also", "oh and", "btw"
_TOLD_OPENER = r"(?:(?:also|and|oh|so|ok|plus|but|btw|then)[,]? )*"
_INSTRUCTION_EN = re.compile(
    r"\b(?:always|never|from now on|going forward|from here on|in (?:the )?future"
    r"|(?:^|[,;:]\s*)for (?:anything|everything|all|any|every)\b(?! else)|in general|as a rule"
    r"|by default"
    r"|whenever (?:i|you|we)|every time (?:i|you|we)|each time (?:i|you|we)|any time (?:i|you|we)"
    # told, for everything: "run everything with --dry-run first", "end every bit of
    # feedback with ...", "run things as svc-migr, not as me"
    r"|^(?:[^:.!?]{0,30}: )?"  # "One more format thing: end every ..."
    + _TOLD_OPENER
    + _IMPERATIVE
    + r" [^.?!]{0,60}?\b(?:every|everything|each|always|throughout"
    r"|anything (?:to do with|about|related to|regarding))\b"
    r"|^" + _TOLD_OPENER + _IMPERATIVE + r" [^.?!]{1,60}?,? not "
    r"(?!sure|yet|now\b)[^.?!]{0,40}\b(?:please|pls)\b"  # "send me links not screenshots pls"
    r"|^" + _TOLD_OPENER + r"(?:use|run|write|spell|format|reply"
    r"|answer|respond|sign|address) [^.?!]{1,60}, not (?!sure|yet|now\b)"
    r"|(?:^|[,;:]\s*|\b(?:please|pls|and|but|also|so|you|just)\s+)"
    r"(?:do not|don't|dont) (?:ever )?(?!(?:worry|laugh|jinx|judge|panic|mind|care|ask|get me"
    r" started|get your hopes|tell anyone|feel|dare|you dare|stress|apologi[sz]e|blame|rush"
    r"|bother|fret|beat yourself|be (?:hard|sorry|silly|shy|afraid|scared|a stranger|so|too))\b)\w+"
    r"|(?:please|pls) (?:always|never|make sure"
    r"|no(?! (?:worries|problem|rush|pressure|stress|need))|remember|keep|use|avoid|stop"
    r"|only|write|answer|reply|respond|call|address|include|add|format|give|label|cc|mark"
    r"|tag)"
    r"|\w+ throughout,? (?:please|pls)\b"
    # "also times in 24h please": what things are to be given in
    r"|^(?:(?:also|and|oh|ok|btw|so),? )*\w+s in [\w-]+(?: \w+)?,? (?:please|pls)\b"
    r"|\b(?:please|pls)\b[^.?!]{0,40}\bthroughout\b"
    r"|(?<!\byou )remember (?:to|that)|make sure (?:to|you|that)|be sure to"
    r"|(?<!\bi )(?<!\bcan )(?<!\bcould )(?<!\bwill )(?<!\bto )stop (?:using|doing|adding)"
    r"|(?:^|[,;:]\s*|\b(?:please|pls|and|but|also|so|just)\s+)stop \w+ing\b"
    r"|(?:keep|bear) (?:that |this |it )?in mind|note that i\b"
    r"|\b(?:can|could|would|will) you (?:please |pls )?stop \w+ing\b"  # "can you stop opening"
    r"|\bi only want (?!to\b)"  # "I only want force-free advice"
    r"|\bunless i (?:ask|say|tell)\b"  # "three lines max unless I ask for more"
    r"|please \w+(?: [\w'-]+){0,8},? (?:not(?! (?:sure|yet|now|urgent|really))|rather than"
    r"|instead of)\b"  # "please use X, not Y"
    r"|(?:^|[,;.]\s*)(?:\w+ )?(?:preference|rule)s?(?: for you| of (?!thumb\b)[\w ]{1,20})?:"
    r"|\brule (?:number |no\.? ?|#)?(?:one|two|three|four|five|\d)\b"
    # "house rule I forgot to mention, potions are a bonus action": a rule said it is one
    r"|^(?:(?:also|and|oh|ok|btw|so),? )*(?:another|one|a|new|house|small|quick|ground|golden)"
    r" (?:rule|preference)\b(?! of thumb)"
    r"|\b(?<!thanks )(?<!thank you )(?:in|for|on|to|off|into|with)"
    r" (?:anything|everything|whatever|all|any \w+|every \w+)"
    r" (?:that )?you (?:write|draft"
    r"|send|make|give me|produce|create|post|suggest|recommend)\b"  # "in anything you write"
    r"|^(?:no more \w+|avoid \w+)"
    r"|(?<!\bi )(?<!\bi'd )(?<!\bi'll )(?<!\bwe )(?<!\bwe'd )(?<!\bwe'll )(?<!\bto )"  # told
    r"(?<!n't )(?<!not )(?:keep|make) (?:it(?! (?:going|up|together|real|coming|quiet|to|through"
    r"|home|back|in|on|out|work|happen)\b)(?!\s*[,.!?]|\s*$)"
    r"|(?:your |the )?(?:answers?|replies|responses)\b|them (?:under|short|brief|below|to)\b)"
    r"|\b(?:i|we)(?:'d|’d| would)?(?: really| much| honestly| strongly| definitely)?"
    r" (?:prefer|rather|like you to|love it if|want you to"
    r"|need you to)"
    r"|\b(?:i|we) (?:like my|like it when|hate it when|don't like|do not like|dislike"
    r"|can't stand|can't eat|cannot eat|never eat|don't eat|am allergic|am vegetarian|am vegan)"
    r"|\bi['’]m (?:allergic|vegetarian|vegan|lactose)"
    r"|(?:my|our|the \w+|house) (?:preference|rule) is\b"
    r"|(?<!to )(?<!video )call me (?!(?:and|when|if|back|later|tomorrow"
    r"|on|at|about|before|after|so|but|or|to|today|tonight|now|again|first|please|the|a|an|up"
    r"|out|in|every|whenever|any|sometime)\b)\w+|refer to me as|address me as"
    r"|(?:answer|reply|respond|write) (?:only )?in \w+|use (?:only )?(?:metric|imperial|celsius|"
    r"fahrenheit|british|american|formal|informal|bullet|numbered)|"
    r"(?:answers?|replies|responses) (?:should|must) (?:be|always|never|include))",
    re.IGNORECASE,
)
# "总是", "以后", "记得" describe as often as they ask ("为什么周一总是这么累", "以后可能会
# 常来", "我记得那天"): they ask when said to the assistant or followed by what to do
_INSTRUCTION_ZH = re.compile(
    r"(?:请|你要?|要|都)(?:总是|始终|一直)|永远不要|永远别|一直要|每次|"
    r"(?:以后|从现在起|从现在开始|今后)[^，。！？,.!?]{0,10}?(?:请|都|别|不要|用|叫|给我|记得|要|一律|只)"
    r"|(?<!要)不要(?!不)|别再|请勿|务必|必须|(?<![我你他她还不])记得|记住|我(?:更|最|比较)?喜欢|我偏好|我希望你"
    r"|我不喜欢|我讨厌|请用|请不要|叫我|别给我|别跟我|别推荐|不要给我"
    # Japanese: "from now on / every time / always ... please", "please don't ..."
    r"|(?:これから|今後|毎回|いつも|常に|必ず)[^。！？!?]{0,40}?(?:てください|でください|て下さい"
    r"|てほしい|でほしい|お願いします|お願い|ようにして|にして)|ないでください|ないで下さい"
    # "長い説明のときは箇条書きにして", "日付は西暦でお願い", "選択肢は3つまでにして", "タメ口で"
    r"|(?:ときは|時は|場合は|ときには)[^。！？!?]{0,40}?(?:てください|でください|てほしい|でほしい"
    r"|お願い|にして|もらえる|くれる)|は[^。！？!?]{1,30}(?:で|に)お願い|までにして|タメ口|ため口|敬語で"
)
# a question said without its mark, as chats do: "怎么整理衣柜比较好", "你觉得呢"
# asking the other to do it: Chinese "你", "请", "别"; Japanese "もらえる?", "ください"
_ASKS_CJK = re.compile(r"你|您|请|别|(?<!要)不要(?!不)|もらえ|くれ|ほしい|ください|お願い")
_QUESTION_ZH = re.compile(
    r"^(?:为什么|为啥|怎么|怎样|如何|哪|有没有|是不是|能不能|可不可以)|(?:吗|呢|么|怎么办)[。！!.~～]*$"
)
_STANDING_QUESTION = re.compile(
    r"\b(?:can|could|would|will) you (?:please |pls )?(?:always|never|stop|not|start|keep|use"
    r"|skip|drop|remember (?:to|that|i|i'm|we)|make sure|avoid|try to)\b.*"
    r"|\b(?:from now on|going forward|in (?:the )?future"
    r"|any ?more|every time|whenever)\b|以后|从现在起|每次"
    r"|\bcan we (?:keep|put|use|do|have|move|stick)\b[^?]{0,60}\b(?:instead of|rather than)\b"
    r"|\b(?:on|in|to|for|with|at the (?:end|start|top|bottom) of) (?:every|each) (?:day|answer"
    r"|reply|response|message|email|plan|recipe|post|list|page|step)\b",
    re.IGNORECASE,
)


# -- constraints, values, changes, entities --------------------------------------------

# Constraints and changes: most cues are one word, read from the unit's word set; the
# few phrases are searched only when their first word is there.
_CONSTRAINT_WORDS = _wordset(  # not "only", "can't": "the only one", "I can't believe it"
    """must mustn't maximum minimum max min limit limited cap capped deadline due budget
    require requires required requirement mandatory forbidden allowed commit
    committed promise promises promised agreed guarantee guarantees guaranteed"""
)
_CONSTRAINT_PHRASE = re.compile(
    r"\b(?:at (?:most|least)|no (?:more|less|later|earlier) than|up to|by (?:monday|tuesday"
    r"|wednesday|thursday|friday|saturday|sunday|tomorrow|tonight|end of))\b",
    re.IGNORECASE,
)
_CONSTRAINT_PHRASE_GATE = _wordset("at no up by")
_CONSTRAINT_ZH = re.compile(r"必须|只能|最多|最少|不超过|截止|预算|限制|不能")
_CHANGE_WORDS = _wordset(
    """decide decided deciding decision switch switched switching moved moving changed
    changing update updated updating anymore instead replace replaced replacing dropped
    dropping cancel canceled cancelled postpone postponed reschedule rescheduled chose picked
    upgrade upgraded downgrade downgraded migrate migrated migrating raised lowered
    increased decreased extended shortened confirmed approved rejected"""
)
_CHANGE_PHRASE = re.compile(
    r"\b(?:no longer|any more|push(?:ed)? (?:back|to)|went with|going with|settled on"
    r"|blocked (?:on|by)|next step|plan (?:is|to)|we'll use|will use|turns out)\b",
    re.IGNORECASE,
)
_CHANGE_PHRASE_GATE = _wordset(
    "no any push pushed went going settled blocked next plan we'll will turns"
)
_CHANGE_ZH = re.compile(r"决定|改成|改为|换成|换到|搬到|现在|不再|取消|推迟|更新|下一步")
# A capitalized word that does not start the sentence: a name, a place, a product.
# (led by the capital, not the look behind it: the engine skips to capitals fast)
# a capitalised word past a sentence's start: after a word, a comma or a title ("Mrs. Okafor")
_NAME = re.compile(
    r"[A-Z](?:(?<=[\w,;:)] [A-Z])|(?<=\b(?:Mr|Ms|Dr|St)\. [A-Z])|(?<=\b(?:Mrs|Rev)\. [A-Z])"
    r"|(?<=\bProf\. [A-Z]))(?:[\w'’&.-]*[a-z0-9][\w'’&.-]*|[A-Z]+\b)"
)
_NOT_NAMES = _wordset(
    "I I'm I've I'll I'd OK Ok AI Mr Mrs Ms Dr The This That These Those It My Your Our"
)
# -- filler ------------------------------------------------------------------------------

_FILLER = re.compile(
    r"^(?:(?:hi|hello|hey|yo|thanks?|thank you|thx|ty|ok(?:ay)?|k|cool|great|nice|awesome|"
    r"perfect|sure|yes|yeah|yep|no|nope|got it|sounds good|makes sense|i see|right|alright|"
    r"of course|certainly|absolutely|you're welcome|no problem|np|good (?:morning|evening|"
    r"night|afternoon)|bye|goodbye|see you|cheers|lol|haha|wow|hmm+|oh|ah|great question|"
    r"good question|happy to help|glad (?:to|i could) help|i hope (?:this|that) helps|"
    r"let me know if.*|feel free to.*|is there anything else.*|hope (?:this|that) helps|"
    r"that's (?:great|good|helpful|awesome|all)|this is (?:great|helpful)|"
    r"(?:that|this) (?:helps|works|is perfect)|"
    r"how are you(?: doing)?(?: today)?|how's it going|what's up|"
    r"there|everyone|all|guys|folks|friend|so much|a lot|very much|again|for (?:that|this|"
    r"the (?:help|info|information|answer|explanation|suggestions?|tips?|advice))|"
    r"(?:speak|talk|chat) (?:soon|later)|catch you later|take care|(?:i'll|i will|i should) let"
    r" you go|gotta (?:run|go)|have a (?:good|great|nice) (?:day|night|one|weekend|evening)|"
    r"good luck|congrats|congratulations|miss you|love you|same here|me too|fair enough|"
    r"no worries|omg|aw+|yay|ha(?:ha)*|"
    r"你好|谢谢|好的|没问题|不客气|嗯|好)"
    r"[\s,!.?;:)(~-]*)+$",
    re.IGNORECASE,
)
_FILLER_VOCABULARY = _wordset(
    """hi hello hey yo thanks thank thx ty you ok okay k cool great nice awesome perfect sure
    yes yeah yep no nope got it sounds good makes sense i see right alright of course
    certainly absolutely you're welcome problem np morning evening night afternoon bye
    goodbye see cheers lol haha wow hmm hmmm oh ah question happy to help glad could hope
    this that helps let me know if feel free is there anything else that's helpful all how
    are doing today how's going what's up everyone guys folks friend so much a lot very
    again for the info information answer explanation suggestion suggestions tip tips
    advice works speak talk chat soon later catch take care i'll will should let go gotta
    run have day one weekend luck congrats congratulations miss love same here me too fair
    enough worries omg aw aww yay ha"""
) | {"你好", "谢谢", "好的", "没问题", "不客气", "嗯", "好"}
_GENERIC_OPENERS = re.compile(
    r"^(?:(?:here (?:are|is)|below (?:are|is)|sure|certainly|of course|absolutely|great|"
    r"i'd be happy to|i can help|let's|remember that|keep in mind|it's important to|"
    r"don't forget|in summary|overall|in conclusion|ultimately|additionally|however|"
    r"that said)\b)",
    re.IGNORECASE,
)


_WORD = re.compile(r"[^\W\d_][\w'’-]*|\d[\d.,:/-]*\w*", re.UNICODE)
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]")
_STOP = (
    _wordset(
        """a about above after again against all also am an and any are as at be because been
    before being below between both but by can could did do does doing down during each few
    for from further had has have having he her here hers herself him himself his how i if in
    into is it its itself just me more most my myself no nor not now of off on once only or
    other our ours ourselves out over own same she should so some such than that the their
    theirs them themselves then there these they this those through to too under until up
    very was we were what when where which while who whom why will with would you your yours
    yourself yourselves i'm i've i'd i'll you're it's that's there's let's don't doesn't
    didn't can't won't isn't aren't wasn't weren't we're we've we'd we'll you've you'd you'll
    he's she's he'd she'd they're they've they'd they'll it'll what's who's here's haven't
    hasn't hadn't couldn't wouldn't shouldn't get got like also one two really much many
    well even still may might must shall us okay ok yes yeah sure thanks thank please"""
    )
    | _wordset(  # the same small words as chats spell them
        """u ur im ive dont cant didnt doesnt isnt wasnt thats whats theres pls plz thx ya tho
    bc cuz coz lol btw rn tbh idk omg gonna wanna gotta kinda sorta"""
    )
    | _wordset(  # the small words of Spanish, Portuguese, French, German and Italian
        """de del el la las los y que en un una unos unas al lo se su sus por para con le les
    et du des aux est une der das und den dem ein eine einer zu im mit della di che gli
    dos das em um uma os ao pela pelo"""
    )
)
# Cheap gates: a pattern is searched only when a word it needs is there.
_INSTRUCTION_GATE = _wordset(
    """for general rule default always never now here forward future whenever every each any
    anything everything whatever all skip drop
    mind bear note start try
    don't dont do not please pls
    remember sure stop more avoid keep make prefer rather want need like hate dislike stand
    eat allergic vegetarian vegan preference rule call refer address answer reply respond
    write use answers replies responses"""
)
_SELF_WORDS = _wordset("i i'm i've i'd i'll my mine me we we're we've our us")
_DATE_WORDS = _wordset(
    """jan january feb february mar march apr april may jun june jul july aug august sep sept
    september oct october nov november dec december monday tuesday wednesday thursday friday
    saturday sunday"""
) | _wordset(  # the same in Spanish, Portuguese, French, German and Italian
    """lunes martes miércoles jueves viernes sábado domingo lundi mardi mercredi jeudi
    vendredi samedi dimanche montag dienstag mittwoch donnerstag freitag samstag sonntag
    montags dienstags mittwochs donnerstags freitags samstags sonntags lunedì martedì
    mercoledì giovedì venerdì sabato domenica enero febrero abril mayo junio julio agosto
    septiembre octubre noviembre diciembre janvier février avril juin juillet août
    septembre octobre novembre décembre januar februar märz juni juli oktober dezember
    gennaio febbraio aprile maggio giugno luglio settembre ottobre dicembre janeiro
    fevereiro março maio junho julho setembro outubro novembro dezembro"""
)
_DIGIT = re.compile(r"\d")
_MONEY_CHARS = re.compile("[$€£¥₹元]")  # one search: a set's test reads every character
_CURRENCY_WORDS = _wordset("usd eur gbp dollar dollars euro euros pound pounds yen bucks")
# 2024-05-01, 5/1/24, 5月, 2024年; one leading digit, then the alternatives: a third the cost
_NUMERIC_DATE = re.compile(r"\d(?:\d{3}-\d\d-\d\d|\d?[/.]\d{1,2}[/.]\d{2,4}|月|\d{3}年)")
_CLOCK = re.compile(r"\d:\d\d|\d\s?[ap]\.?m\b|\d\s?(?:分钟|小时|天|周|个月|年)", re.IGNORECASE)
_DURATION_WORDS = _wordset(
    """ms s sec secs second seconds min mins minute minutes h hr hrs hour hours day days week
    weeks month months year years am pm"""
)
_QUANTITY_WORDS = _wordset(
    """percent kg g lb lbs km mi mile miles m cm mm ft gb mb kb tb token tokens request
    requests user users rps qps people person items item degrees words pages"""
)
_DOTTED = re.compile(r"\d\.\d")
_NAMED_VERSION = re.compile(r"\b(?:version|python|node|java)\s?\d", re.IGNORECASE)
_TWO_DIGITS = re.compile(r"\d\d")
_EMAIL = re.compile(r"[\w.+-]+@[\w-]+\.\w")
_PATHLIKE = re.compile(r"(?:^|\s)(?:~|\.{1,2})?/[\w.@+-]+/|\w/[\w./-]+\.\w{1,5}\b")
_HASH = re.compile(r"\b(?=[a-f]*\d)(?=\d*[a-f])[0-9a-f]{7,40}\b")
_HEX_RUN = re.compile(r"[0-9a-f]{7}")  # what a hash holds, found fast (led by a class)
_ID = re.compile(r"\b[A-Z]{2,}[A-Z0-9]*-?\d|\b[A-Z0-9]+-[A-Z0-9]+-[A-Z0-9]")
_QUOTED_CODE = re.compile(r"`[^`\n]{2,60}`")
_SNAKE = re.compile(r"[a-z]_[a-z0-9]")
_CAMEL = re.compile(r"\b[a-z]+[A-Z]\w")
_CAMEL_GATE = re.compile(r"[A-Z](?<=[a-z][A-Z])")  # what it needs, found fast
_NAMING = re.compile(r"\b(?i:called|named|nicknamed|name is|name's|name’s)\s+[\"'“‘]?[A-Z]")
_NAMING_WORDS = _wordset("called named nicknamed name name's")
# Japanese: someone by name and title, or a word spelled in katakana (a foreign name or
# word); four characters at least, so the common loanwords ("カフェ", "バイト") are not
_NAMED_ZH = re.compile(r"[「《『][^」》』]{2,20}[」》』]|[A-Z][A-Za-z]{2,}")
_NAMED_JA = re.compile(
    r"[\u4e00-\u9fff\u30a1-\u30fa]{1,6}(?:さん|先生|様|くん|ちゃん|氏)|[\u30a1-\u30fa・ー]{4,}"
)
_FILLER_JA = re.compile(
    r"(?:なるほど|はい|ええ|うん|そうですね|そうなんですね|そうなんだ|ありがとう(?:ございます)?"
    r"|よろしく(?:お願いします)?|了解(?:です)?|わかりました|分かりました|お疲れ様です|こんにちは"
    r"|こんばんは|おはよう(?:ございます)?|楽しみです|大丈夫です)[、,。！!？?～〜…笑w]*"
    r"(?:[^。！？!?\d]{0,12}[。！？!?…]*)?$"
)
_NAMING_ZH = re.compile(r"(?:叫|名叫|叫做|名字是|名为)(?!我|你|他|她)[\u4e00-\u9fff\w]{2,}")
_SELF_VERBS = _wordset(
    """am was have had got live lives lived work works worked study studied bought own owns
    use used uses moved born married graduated started finished visited went travel
    traveled travelled adopted named called is are were will plan planned booked signed
    joined left lost won play played drive drove speak spoke learn learned learnt i'm i've
    i'd we're we've 'm 've 'd has love loves loved enjoy enjoys enjoyed hate hates hated
    prefer prefers adore dislike favourite favorite proposed engaged pregnant divorced
    retired hired fired promoted quit met ran sold passed failed broke"""
)
_SELF_FACT_ZH = re.compile(r"是|有|住|在|买|叫")
_ENTITY_CHARS = frozenset("@/`_")


@dataclass(slots=True)
class _Text:
    """A unit read once: what every signal needs, and the signals read so far (the
    score, supersession and the boilerplate check all ask for its values and names)."""

    text: str
    lower: str
    words: frozenset[str]
    content: tuple[str, ...]
    cjk: bool
    digits: bool
    capitals: bool
    question: bool
    value: float | None = None
    entity: float | None = None
    rule: bool | None = None
    names: tuple[str, ...] = ()  # the names it says past its first word (with `entity`)
    atoms: frozenset[str] | None = None  # its words as `\b` sees them (`word_atoms`)


def _unmarked_question(text: str, cjk: bool) -> bool:
    """A question said without its mark, as chats do ("how do I pin the python version",
    "怎么整理衣柜比较好"): one clause alone, that opens as a question (or, in Chinese, ends
    as one); "when I ask, ..." opens a clause that a rule follows."""
    if cjk:
        return "，" not in text and bool(_QUESTION_ZH.search(text))
    return (
        "," not in text
        and not text.rstrip().endswith((".", "!"))
        and bool(_QUESTION_EN.match(text))
    )


# ("random q — how do I ...", "ok next: how do I ...": what opens a question said first)
_QUESTION_EN = re.compile(
    r"(?:[^.!?:—–]{0,24}[:—–]\s*)?(?:how|what|why|where|which|who|whose|is there|are there"
    r"|is it|can (?:i|we)|could (?:i|we)|should (?:i|we)|do (?:i|you|we)|does|did (?:i|you|we))\b",
    re.IGNORECASE,
)


_TAG = re.compile(
    r"[,.!]\s*(?:ok|okay|k|yeah|yes|alright|all right|deal|got it|understood)\s*\?+\s*$"
)


@lru_cache(maxsize=1 << 16)
def _read(text: str) -> _Text:
    plain = text.isascii()  # known at once
    lower = text.lower()
    if not plain:
        lower = lower.replace("’", "'")  # one apostrophe: "we’re" is "we're"
    words = _WORD.findall(lower)
    cjk = not plain and bool(_CJK.search(text))
    content = tuple(itertools.filterfalse(_STOP.__contains__, words))  # filtered in C
    if cjk:
        content = tuple(pair for w in content for pair in _cjk_pairs(w))
    digits = _DIGIT.search(text) is not None
    # (in ASCII, lower-casing keeps every character in its place)
    capitals = text[1:] != (lower[1:] if plain else text[1:].lower())
    wordset = frozenset(words)
    marked = text.rstrip().endswith(("?", "？"))
    # "no emojis ever in anything I send, ok?": a tag asks for a nod, not an answer
    question = (marked and not _TAG.search(lower)) or _unmarked_question(text, cjk)
    return _Text(text, lower, wordset, content, cjk, digits, capitals, question)


def _cjk_pairs(word: str) -> list[str]:
    """A word as content: CJK characters as pairs (or the one alone), else itself."""
    if not _CJK.search(word):
        return [word]
    chars = [c for c in word if _CJK.match(c)]
    pairs = [a + b for a, b in itertools.pairwise(chars)]
    return pairs if len(chars) != 1 else [*pairs, chars[0]]


def content_words(text: str) -> list[str]:
    """The words of `text` that carry content: lower-cased, stop words out; CJK text as
    character pairs (no spaces to split on).

    >>> content_words("The deadline moved to April 5")
    ['deadline', 'moved', 'april', '5']
    >>> content_words("预算五百")
    ['预算', '算五', '五百']
    """
    return list(_read(text).content)


def date_word(word: str) -> bool:
    """Whether a lower-cased word names a month or a weekday ("23 april" is a date, not
    23 of something).

    >>> date_word("april"), date_word("guests")
    (True, False)
    """
    return word in _DATE_WORDS


def word_atoms(text: str) -> frozenset[str]:
    """The lower-cased words of `text` as a ``\\b``-bounded pattern sees them (runs of
    word characters): a cheap gate before a pattern of many words.

    >>> sorted(word_atoms("It's now-or-never, v2.1"))
    ['1', 'it', 'never', 'now', 'or', 's', 'v2']
    """
    return _atoms(_read(text))


def _atoms(t: _Text) -> frozenset[str]:
    if t.atoms is None:  # read once: rules and supersession both ask
        t.atoms = frozenset(_ATOM.findall(t.lower))
    return t.atoms


_ATOM = re.compile(r"\w+")


def _instruction(t: _Text) -> bool:
    if t.rule is None:
        # what no cue reads, the fitted weights may ("bullet points not essays")
        t.rule = _reads_as_instruction(t) or told(t.text) > _RULE_LIKELY
    return t.rule


# how sure the weights must be: held out by set, five in six of the sentences they read as
# rules past it told a rule or taste a question later asked for, and most of the rest
# told one nobody asked about
_RULE_LIKELY = 0.8
# in a conversation with an assistant, where the weights were learnt, they are trusted
# further for the ledger: held out by set (thirty-two sets, two halves), 0.4 kept the most
# instructions and answers at 10%, 15% and 20% budgets, once and five times over (0.3 to
# 0.5 alike; 0.8 kept 3% fewer instructions): a rule read wrongly costs a line of the
# ledger, a rule missed is lost. An agent's task is not what they learnt from.
_RULE_LIKELY_IN_CHAT = 0.4


def _reads_as_instruction(t: _Text) -> bool:
    if len(t.text) < 8:
        return False
    if not t.words.isdisjoint(_PERSONAL_WORDS) and _PERSONAL.search(t.text):
        return True  # "is peanut oil ok, given my peanut allergy?": it holds for good
    if t.cjk and _PERSONAL_ZH.search(t.text):
        return True  # "我最喜欢的作家是余华，你能推荐…吗？"
    if not t.question and "?" in t.text:  # "can you keep it short? like 3 lines."
        asked = t.text[: t.text.index("?") + 1]
        if asked != t.text and _instruction(_read(asked)):
            return True
    if t.cjk:  # "别再发表情了好吗" asks for good, question or not
        if _INSTRUCTION_ZH.search(t.text) is None:
            return False
        # "换城市以后银行卡需要换吗": a question of one's own, asking nothing of the other
        return not (t.question or _QUESTION_ZH.search(t.text)) or bool(_ASKS_CJK.search(t.text))
    if _one_off(t) and not _standing_cued(_atoms(t)):
        return False  # "wait, don't answer that": what was just said, not for good
    said = _CLAUSE_BREAK.split(t.text, maxsplit=1)[0] if t.question else t.text
    if said != t.text and _instruction(_read(said)):  # "I don't like X — can we ...?"
        return True
    if ("you" in t.words or "ever" in t.words or "i" in t.words) and _conditional_ask(t):
        return True
    if t.question:  # "could you stop using emojis from now on?" asks for good
        return (
            bool(t.words & _INSTRUCTION_GATE)
            and _standing_cued(_atoms(t))
            and bool(_STANDING_QUESTION.search(t.text))
        )
    if not t.words.isdisjoint(_EUROPEAN_WORDS) and _european_instruction(t):
        return True
    if "no" in t.words and _prohibits(t):
        return True
    if not t.words & _INSTRUCTION_GATE or not _instruction_cued(_atoms(t)):
        return False
    text = t.text.replace("’", "'")
    return any(not _narrated(text, m) for m in _INSTRUCTION_EN.finditer(text))


_CLAUSE_BREAK = re.compile(r"\s[—–]\s|;\s|\s-\s")


def _prohibits(t: _Text) -> bool:
    """A clause that rules a thing out by naming it ("no spoilers for Slow Horses", "no
    recordings on Mondays please", "whatever you do, no saxophone"), said as asked: with
    a "please", an "ever", "at all", "whatever you do", or as what a request or rule is.
    "no luck yet", "no worries", "No, I think so" say nothing of the kind."""
    m = _NO_THING.search(t.lower)
    if m is None or m.group(1) in _NO_IDIOMS:
        return False
    return _ASKED_SO.search(t.lower) is not None or _TAG.search(t.lower) is not None


def _conditional_ask(t: _Text) -> bool:
    """What to do whenever the other does a thing ("when you send me flats, send me the
    listing link", "if you ever visit the truck, text me first", "when you send me edits
    can you send WAV not MP3?"): an ask for every time, not once."""
    m = _WHEN_YOU.match(t.lower)
    if m is None:
        return False
    rest = t.lower[m.end() :].lstrip(" ,")
    first = rest.split(None, 1)[0] if rest else ""
    return bool(first) and (first not in _NOT_TOLD or rest.startswith(_ASK_OPENERS))


# "when you send me ...", "if you ever ...": the clause, up to its comma (or its "can you")
_WHEN_YOU = re.compile(
    r"^(?:[^:.!?]{0,30}: )?(?:(?:also|and|oh|so|ok|one thing|plus|but)[,:]? )*"
    r"(?:when|whenever|every time|if) (?:(?:you|i) ever [\w'-]+"
    r"|i (?:ask|send|paste|share|give|write|mention|message|text|upload)\b"
    # "when you pay a bill", "if you're bringing someone home"
    r"|you(?:['’]re| are)? (?:ring|call|phone|text|email|message|visit|come round|send|write"
    r"|draft|give|make|book|pick|suggest|recommend|answer|reply|explain|show|plan|list|put"
    r"|post|mention|pay|bring|borrow|order|cook|leave|use|take)(?:ing)?\b)"
    r"[^,?.!]{0,60}?(?:,|(?= (?:can|could|would) you\b))"
)
_NOT_TOLD = _wordset(
    """i i'm i'd i'll i've it it's that's this that there they we we're he she you you're
    you'll the a an my your our is are was were will would can could should do does did
    then so maybe probably"""
)
_ASK_OPENERS = ("can you", "could you", "would you", "please", "pls")


# "no" + a word, opening the sentence or a clause (after "also", "and", "oh", "just", a
# colon or a comma): what it rules out
_NO_THING = re.compile(
    r"(?:^|[,;:—–-]\s*|\b(?:also|and|oh|but|so|just|please|pls|plus)\s+)no ([a-z][a-z'-]+)"
)
_NO_IDIOMS = _wordset(
    """worries worry problem problems rush pressure stress need idea way thanks thank doubt
    kidding joke big offence offense harm clue wonder luck matter one chance sweat comment
    news reply answer word sign change signal time longer more less i i'm i'd i've you
    you're we we're it it's that that's this he she they there the a an my your our his her
    their not don't didn't can't won't sorry problemo biggie danger fear hurry hard clear
    surprise surprises shame complaints complaint excuse excuses question questions"""
)
_ASKED_SO = re.compile(
    r"\b(?:please|pls|ever|at all|whatever you do|request|rule|rules|thanks|thank you"
    r"|from now on|going forward|for me)\b"
)


def _instruction_cued(atoms: frozenset[str]) -> bool:
    """Whether the words one of `_INSTRUCTION_EN`'s alternatives needs are all there:
    the pattern is dear (tens of microseconds a sentence), the test is not."""
    if not atoms.isdisjoint(_CUE_ALONE):
        return True
    if atoms.isdisjoint(_CUE_FIRSTS):  # no pair's first word: most sentences
        return False
    return any(not atoms.isdisjoint(a) and not atoms.isdisjoint(b) for a, b in _CUE_PAIRS)


_CUE_ALONE = _wordset(
    """always never future general default whenever please pls remember stop mind note unless
    anything everything whatever
    preference preferences rule rules avoid prefer rather hate dislike stand eat allergic
    vegetarian vegan lactose refer address don dont"""
)
_CUE_PAIRS = [
    (_wordset(first), _wordset(second))
    for first, second in (
        ("from", "now here"),
        ("going", "forward"),
        ("for", "anything everything all any every"),
        ("every each any", "time"),
        ("do", "not"),
        ("make be", "sure"),
        ("no", "more"),
        ("keep make", "it your the them answers replies responses answer"),
        ("only", "want"),
        (_IMPERATIVE_VERBS.replace("-", " "), "every everything each always throughout not"),
        ("like want need", "you"),
        ("like", "my it"),
        ("love", "if"),
        ("call", "me"),
        ("answer reply respond write", "in"),
        (
            "use",
            "metric imperial celsius fahrenheit british american formal informal bullet numbered",
        ),
        ("answer answers replies responses", "should must"),
    )
]
_CUE_FIRSTS = frozenset().union(*(first for first, _ in _CUE_PAIRS))


# What the user's body or beliefs rule out, said in passing (often inside a question)
_PERSONAL = re.compile(
    r"\bmy (?:[\w-]+ ){0,2}(?:allerg(?:y|ies)|intolerances?)\b"
    r"|\bi(?:'m|’m| am) (?:(?:very|severely|badly|quite|so|also|now) )?(?:allergic|intolerant"
    r"|vegetarian|vegan|pescatarian|lactose|diabetic|pregnant|celiac|coeliac|kosher|halal)\b"
    r"|\bi (?:can't|can’t|cannot|don't|don’t|do not) (?:eat|drink) \w+"
    r"|\b(?:ich bin|je suis|soy|sou|sono) (?:\w+ )?(?:vegetari\w+|végétarien\w*|vegan\w*"
    r"|végan\w*|allergi\w+|allergique|alérgic\w+|celiac\w*|cœliaque|zöliakie\w*)",
    re.IGNORECASE,
)
_PERSONAL_ZH = re.compile(
    r"我(?:最|很|比较)?(?:喜欢|讨厌|不吃|不喝)|我(?:对\w{1,6})?过敏|我吃素"
    r"|[がは](?:苦手|嫌い|大嫌い|大好き)|アレルギー"  # Japanese: dislikes, loves, allergies
)
_PERSONAL_WORDS = _wordset(
    """bin suis soy sou sono
    allergy allergies allergic intolerance intolerances intolerant vegetarian vegan
    pescatarian lactose diabetic pregnant celiac coeliac kosher halal eat drink"""
)


def _standing_cued(atoms: frozenset[str]) -> bool:
    """Whether the words `_STANDING_QUESTION` needs are there (its Chinese cues aside)."""
    if not atoms.isdisjoint(_STANDING_ALONE):
        return True
    if any(not atoms.isdisjoint(a) and not atoms.isdisjoint(b) for a, b in _STANDING_PAIRS):
        return True
    return not atoms.isdisjoint(_ASKING) and "you" in atoms and not atoms.isdisjoint(_ASKED_TO)


# "don't answer that", "never mind this one": about what was just said
_ONE_OFF = re.compile(
    r"\b(?:don['’]?t|do not|never) (?:\w+ ){1,2}?(?:that|this|this one|that one|it)[.!?…]*$",
    re.IGNORECASE,
)


def _one_off(t: _Text) -> bool:
    """`_ONE_OFF`, searched only where its words may be (it tries every character)."""
    lower = t.lower
    return ("do" in lower or "never" in lower) and _ONE_OFF.search(t.text) is not None


_STANDING_ALONE = _wordset("future whenever anymore")
_STANDING_PAIRS = [
    (_wordset(a), _wordset(b))
    for a, b in (
        ("from", "now"),
        ("going", "forward"),
        ("any", "more"),
        ("can", "instead rather"),
        (
            "every each",
            "time day answer reply response message email plan recipe post list page step",
        ),
    )
]
_ASKING = _wordset("can could would will")
_ASKED_TO = _wordset("always never stop not start keep use remember make avoid try skip drop")


def acknowledged_rule(reply: str) -> frozenset[str]:
    r"""What a reply's opening acknowledges the user asked for good ("Noted — type hints
    in every snippet", "Entendido, a partir de ahora todos los precios con IVA"), as its
    content words: a rule the user said in words no cue reads is still one. Empty when
    the reply opens with no acknowledgement of a standing rule ("Noted: dentist on the
    14th" acknowledges a fact).

    >>> sorted(acknowledged_rule("Will do — date at the top each time.\n| Date |"))
    ['date', 'time', 'top']
    >>> acknowledged_rule("Noted: fasting blood test on the 14th.")
    frozenset()
    """
    head = acknowledgement(reply)
    if not head:
        return frozenset()
    said = _read(_ANSWER_OPENER.sub("", _ACK.sub("", head, count=1), count=1)).content
    parts = [p for w in said for p in (w, *w.split("-")[: 3 if "-" in w else 0])]  # sign-off
    # (CJK words are character pairs: two characters say as much as a longer word)
    return frozenset(w for w in parts if (len(w) > 2 or _CJK.match(w)) and w not in _FUNCTION_WORDS)


def acknowledgement(reply: str) -> str:
    r"""The words in which a reply acknowledges a standing rule ("Will do — date at the
    top each time."), "" when it acknowledges none (see `acknowledged_rule`).

    >>> acknowledgement("Will do — date at the top each time.\n| Date |")
    'Will do — date at the top each time.'
    """
    opening = reply.lstrip(" \n-*•>")
    head = opening[:_ACK_CHARS].split("\n", 1)[0]  # "- Of course, ..."
    if (ack := _ACK.match(head)) or (_dashed(head) and _ACK_AFTER.match(head)):  # "No X — noted"
        # what is acknowledged is said in the sentence of the acknowledgement ("Noted. A
        # generic inbox isn't disqualifying ..." goes on to something else)
        said = _SENTENCE_END.split(head[ack.end() :] if ack else head, maxsplit=1)[0]
        if ack and _STOPPED.search(ack.group()) and not _ACK_STANDING.search(said):
            said = ""  # "Noted." alone, then what the reply goes on to
        head = head[: ack.end()] + said if ack else said
        if head.rstrip().endswith(":"):  # "Noted for every invitation:\n1. No emojis\n2. ..."
            head = " ".join([head, *_listed(opening)])
        # a rule acknowledged says for good, or states no value nor name as a fact does
        # ("Noté : courtes listes à puces" is a rule, "Noted: blood test on the 14th" a
        # fact; in CJK text, where values and names are read less well, it says for good)
        standing = _ACK_STANDING.search(head) is not None or not (
            _CJK.search(head) or value_signal(head) or entity_signal(head)
        )
    else:  # "Sure. Always warm up first." answers; "Sure, from now on ..." acknowledges
        # ("Ab jetzt schließe ich jede Antwort mit ..." opens on it)
        opens = _ANSWER_OPENER.match(head) or _FROM_NOW.match(head)
        standing = bool(opens and _FROM_NOW.search(head))
    if not standing:  # said after a draft: "I'll put that line on every email from now on."
        return _promised(reply)
    return head.strip()


def _dashed(head: str) -> bool:
    """Whether `head` has a dash `_ACK_AFTER` needs: its lazy run tries every character."""
    return "-" in head or "—" in head or "–" in head


def _listed(reply: str) -> list[str]:
    """The list items right after a reply's first line, which ends with a colon."""
    lines = reply.split("\n")[1 : 1 + _ACK_LINES + 1]
    return [x for x in lines if _LIST_ITEM.match(x)][:_ACK_LINES]


_ACK_LINES = 6
_STOPPED = re.compile(r"[.!。！]")
_LIST_ITEM = re.compile(r"\s*(?:[-*•]|\d+[.)])\s+\S")
# an acknowledgement that closes the restated rule: "No protein powder — understood."
_ACK_AFTER = re.compile(
    r"[^\n]{1,80}?\s[—–-]\s(?:understood|noted|got it|will do|compris|noté|entendido)\b",
    re.IGNORECASE,
)


def _promised(reply: str) -> str:
    """The sentence of a reply, past its opening, that promises to keep a rule ("I'll put
    that line above the sign-off on every customer email from now on", "And noted:
    WhatsApp version without emojis") ("" when none does)."""
    if reply.isascii() and not _may_promise(reply.lower()):
        return ""  # what the gate needs is not there: its pattern tries every character
    if not _PROMISE_GATE.search(reply):
        return ""  # most replies: nothing promised, and the sentences are not read
    for sentence in _SENTENCE_END.split(reply):
        said = sentence.strip(" -*•>")
        if _ACK.match(_AND.sub("", said, count=1)):
            if _ACK_STANDING.search(said):
                return _AND.sub("", said, count=1)
        elif (_PROMISE.search(said) or _FROM_NOW.match(said)) and _ACK_STANDING.search(said):
            return said  # "Ab jetzt schließe ich jede Antwort mit ...": a promise too
    return ""


_PROMISES = r"i['’]ll|i will|i won['’]t|i will not|i['’]m going to"
_PROMISE = re.compile(rf"\b(?:{_PROMISES})\b", re.IGNORECASE)
# a promise, or a "noted" said past the opening, as `_promised` reads them
# a sentence opening on one of these promises too ("Ab jetzt schließe ich jede Antwort ...")
_FROM_NOW_PHRASES = (
    "from now on",
    "going forward",
    "ab jetzt",
    "ab sofort",
    "von nun an",
    "a partir de ahora",
    "de ahora en adelante",
    "désormais",
    "dorénavant",
    "d'ora in poi",
    "de agora em diante",
)
_PROMISE_GATE = re.compile(
    rf"\b(?:{_PROMISES}|noted|anotado|anotada|apuntado|notiert|noté|c'est noté"
    rf"|{'|'.join(_FROM_NOW_PHRASES)})\b",
    re.IGNORECASE,
)


def _may_promise(lower: str) -> bool:
    """Whether lower-cased ASCII text holds a word `_PROMISE_GATE` finds (its others are
    not ASCII): substring tests, each a fast scan."""
    return any(map(lower.__contains__, _PROMISE_WORDS))  # (mapped in C)


_PROMISE_WORDS = (
    "i'll",
    "i will",
    "i won't",
    "i'm going to",
    "noted",
    "anotad",
    "apuntado",
    "notiert",
    *(p for p in _FROM_NOW_PHRASES if p.isascii()),
)
_AND = re.compile(r"^(?:and|also|e|y|et|und|anche)\s+", re.IGNORECASE)
# a sentence ends at a stop and a space, not after a title ("Dr. Nwosu") or "e.g."
_SENTENCE_END = re.compile(
    r"(?<!\bDr\.)(?<!\bMr\.)(?<!\bMs\.)(?<!\bSt\.)(?<!\bMrs\.)(?<!\bvs\.)(?<!\be\.g\.)"
    r"(?<!\bi\.e\.)(?<=[.!?])\s+|\n+"
)


# what the English stop words leave of other languages' small words: no content to share
_FUNCTION_WORDS = _wordset(
    """con los las del por para que una uno les des pour avec sur dans und der die das den
    dem mit für von auf ein eine dei per che gli nel com não uma"""
)


_ACK_CHARS = 240
_ACK = re.compile(
    r"(?:noted|understood|got it|will do|i'll remember|i will remember|great idea|good idea"
    r"|good rule|good call|fair enough|makes sense|entendido|anotado|ricevuto|inteso"
    r"|apuntado|de acuerdo|verstanden|notiert|alles klar|compris|c'est noté|noté|entendu"
    r"|capito|combinado|pode deixar|好的|明白|收到|知道了|记住了|了解"
    r"|承知(?:しました|いたしました)|かしこまりました|わかりました|分かりました"
    r"|договорились|понял|поняла|принято|записал|записала|учту|учтём|запомнил|запомнила"
    r"|알겠습니다|알겠어요|기억할게요|기억하겠습니다|명심할게요)\b[\s,.:;!—–。、-]*",
    re.IGNORECASE,
)
# what opens an answer as often as an acknowledgement: only "from now on" makes it one
_ANSWER_OPENER = re.compile(
    r"(?:done|of course|sure thing|sure|okay|ok|perfect|yes|yep|absolutely|certainly"
    r"|no problem|alright|all right|claro|vale|perfecto|d'accord"
    r"|parfait|klar)\b[\s,.:;!—–-]*",
    re.IGNORECASE,
)
_FROM_NOW = re.compile(
    r"\b(?:from now on|going forward|from here on|each time|every time|a partir de ahora"
    r"|de ahora en adelante|à partir de maintenant|désormais|dorénavant|ab jetzt|ab sofort"
    r"|von nun an|d'ora in poi|de agora em diante)\b|以后",
    re.IGNORECASE,
)
_ACK_STANDING = re.compile(
    # ("instead of", "no longer", "now" say a change was made, not a rule kept)
    r"\b(?:always|never|every|each time|from now on|going forward|whenever|unless"
    r"|rather than|by default|in future|i'll keep|i'll stick|i won't|i will keep|i will stick"
    r"|in everything|in anything|in all"
    r"|siempre|nunca|a partir de ahora|de ahora en adelante|cada vez|immer|nie|niemals"
    r"|ab jetzt|ab sofort|von nun an|künftig|toujours|jamais|désormais|dorénavant"
    r"|à partir de maintenant|sempre|mai|d'ora in poi|de agora em diante"
    # a limit kept, or a rule for each of a kind: "höchstens fünf Stichpunkte"
    r"|at most|no more than|höchstens|maximal|máximo|au maximum|al massimo|no máximo"
    r"|jede[nmrs]?|chaque|cada|ogni)\b"
    r"|(?:^|[,;:!.—–-]\s*)(?:no|sin|kein|keine|pas de|niente|nada de|sem) \S"
    r"|\b(?:sem|sans|senza) \w"
    r"|以后|每次|一律|不再|都用"
    r"|これから|今後|毎回|必ず|앞으로|항상|매번|절대|всегда|никогда|впредь|каждый раз",
    re.IGNORECASE,
)


def _european_instruction(t: _Text) -> bool:
    """Spanish, Portuguese, French, German and Italian: "from now on", a preference, or
    "always"/"never"/"no"/"without" said with a "please"."""
    words = t.words
    if not words.isdisjoint(_FROM_NOW_ON) or _FROM_NOW_ON_PHRASE.search(t.text):
        return True
    if not words.isdisjoint(_PREFER) or not words.isdisjoint(_RULE_WORDS):
        return True
    if _ADDRESS_OR_ANSWERS.search(t.lower):
        return True  # "bitte duze mich", "tutoie-moi", "fais court dans tes réponses"
    if not words.isdisjoint(_WANT) and _WANT_THAT.search(t.lower):
        return True  # "le dico come voglio che siano scritti i capitoli: in terza persona"
    if not words.isdisjoint(_ASK_YOU) and _ASK_YOU_PHRASE.search(t.lower):
        return True  # "le chiedo una cortesia: non usi la parola 'nostalgia'"
    polite = not words.isdisjoint(_PLEASE) or _PLEASE_PHRASE.search(t.text) is not None
    if polite and not words.isdisjoint(_ALWAYS_NEVER_NO):
        return True
    # a clause that opens with its verb and says always or never is told, not narrated:
    # "schreib nie 'lecker'", "utilise toujours le tu", "nunca uses emojis"
    return not words.isdisjoint(_TOLD_ALWAYS_NEVER) and _TOLD.search(t.text) is not None


_FROM_NOW_ON = _wordset("désormais dorénavant künftig zukünftig fortan d'ora voortaan")
_FROM_NOW_ON_PHRASE = re.compile(
    r"\b(?:a partir de (?:ahora|agora|maintenant|hoy|hoje)|de ahora en adelante|en adelante"
    r"|daqui (?:em|para) (?:diante|frente)|ab (?:jetzt|sofort|heute)|von nun an|d'ora in poi"
    r"|vanaf nu|van nu af aan"
    r"|da ora in (?:poi|avanti))\b",
    re.IGNORECASE,
)
# how to address the user, or what goes in every answer
_ADDRESS_OR_ANSWERS = re.compile(
    r"\b(?:duze mich|duz mich|sieze mich|tutoie-moi|vouvoie-moi|tutéame|tuteame|trátame de tú"
    r"|dammi del tu|dame del tú|(?:dans|en|in|nelle|nas|em) (?:tes|vos|tus|sus|deinen|ihren"
    r"|tue|sue|tuas|suas) (?:réponses|respuestas|antworten|risposte|respostas))\b"
)
_PREFER = _wordset("prefiero preferimos prefiro préfère préférons bevorzuge preferisco")
_PLEASE = _wordset("bitte porfa stp svp alsjeblieft alstublieft aub")
_ASK_YOU = _wordset("chiedo pido peço demande bitte")
_ASK_YOU_PHRASE = re.compile(
    r"\b(?:le|ti|vi) chiedo\b|\b(?:le|te|les|os) pido\b|\b(?:lhe|te) peço\b"
    r"|\bje (?:vous|te) demande\b|\bich bitte (?:dich|sie)\b"
)
_WANT = _wordset("voglio vorrei quiero quisiera veux voudrais quero gostaria möchte")
_WANT_THAT = re.compile(
    r"\b(?:voglio|vorrei|quiero|quisiera|je veux|je voudrais|quero|gostaria|ich möchte),?"
    r" (?:che|que|qu['’]|dass)"
)
_PLEASE_PHRASE = re.compile(
    r"\bpor favor\b|\bs'il (?:te|vous) pla[iî]t\b|\bper favore\b|\bpor gentileza\b",
    re.IGNORECASE,
)
_ALWAYS_NEVER_NO = _wordset(
    """siempre nunca jamás jamas no sin sempre nunca não sem toujours jamais pas sans ne
    immer nie niemals nicht kein keine keinen ohne mai non senza nada ningún ninguna
    niente nessun nessuna nenhum nenhuma aucun aucune altijd nooit geen zonder"""
)
_TOLD_ALWAYS_NEVER = _wordset(
    "nie niemals immer jamais toujours nunca jamás siempre sempre altijd nooit"
)
# a rule said to be one: "otra regla: ...", "ancora una regola: le date sempre per esteso"
_RULE_WORDS = _wordset("regla reglas regra regras règle règles regel regeln regels regola regole")
_TOLD = re.compile(
    r"(?:^|[:;,.!]\s+)(?:(?:nunca|jamás) \w+(?:es|as)\b"  # "nunca uses": you, told
    r"|(?!(?:ich|wir|er|sie|es|man|das|du|ihr|der|die|den|dem|dies\w*|je|il|elle|on|nous"
    r"|vous|tu|ils|elles|ce|c|j|y|yo|él|ella|ellos|io|lui|lei|noi|eu|ele|ela|nós"
    # "como siempre", "wie immer": as always, no rule
    r"|como|come|comme|wie|per|para|por|de|da|quasi|casi|presque|fast|é|è|es|est|ist"
    r"|zoals|ik|jij|hij|zij|ze|wij|het|dat|dit|er|is)\b)"
    r"(?:n')?[^\W\d_]+ (?:nie|niemals|immer|jamais|toujours|siempre|sempre|altijd|nooit)\b)",
    re.IGNORECASE,
)
_EUROPEAN_WORDS = (
    _wordset(
        """duze duz sieze tutoie-moi vouvoie-moi tutéame tuteame trátame dammi dame réponses
        respuestas antworten risposte respostas"""
    )
    | _TOLD_ALWAYS_NEVER
    | _FROM_NOW_ON
    | _PREFER
    | _PLEASE
    | _RULE_WORDS
    | _WANT
    | _ASK_YOU
    | _wordset("partir ahora adelante daqui ab von d'ora da por s'il per vanaf")
)


def _narrated(text: str, cue: re.Match[str]) -> bool:
    """An "always"/"never" that tells what someone did or does ("I have never been so
    angry", "it's always the same"), not how the work is to be done."""
    said = cue.group().lower()
    if said.startswith(_EVERY_TIME) and cue.start():
        # "my knee clicks every time I go upstairs": what happens then, not what to do
        return _HAPPENS.match(text, 0, cue.start()) is not None
    if said not in ("always", "never") or _ASKED.search(text):
        return False  # "I always sign off with just 'Best,' please": asked, not told
    if _PAST.match(text, cue.end()) or _IDIOM.match(text, cue.end()):
        return True  # "never wrote my own", "always had"; "never too early", "always a joy"
    if text[max(0, cue.start() - 3) : cue.start()].lower() == "as ":
        return True  # "thanks for listening, as always"
    before = _NARRATOR.search(text, 0, cue.end())
    return before is not None and before.end() == cue.end() and not _WANTS.match(text, cue.end())


_ASKED = re.compile(r"\b(?:please|pls)\b", re.IGNORECASE)
_EVERY_TIME = ("whenever", "every time", "each time", "any time")
# a clause before "every time I ..." that tells what someone or something does, asking
# nothing of the reader ("you", "please", "should" ask)
_HAPPENS = re.compile(
    r"(?:(?:lol|haha|ha|oh|ugh|and|so|but|also|tbh|honestly|like)[,!]?\s+)*"
    r"(?:my|our|his|her|their|i|i'm|we|he|she|it|it's|they|there|this|that)\b"
    r"(?:(?!\b(?:you|your|please|pls|should|must|need|want|prefer|like)\b)[^?])*$",
    re.IGNORECASE,
)
_NARRATOR = re.compile(
    r"\b(?:(?:i|we|he|she|it|its|they|you|u|there|that|this|who|which)"
    r"(?:['’](?:ve|d|s|re|m|ll)| have| had| has| was| were| am| is| are| can| could| will)?"
    r"|\w+(?:['’]s| is| are| was| were)"
    r"|\w+ (?:would|will|could|can|did|does|do|has|had|have)"  # "the cat would never"
    r"|(?:my|our|his|her|their) \w+)"  # "my players never read the handouts"
    r"\s+(?:never|always)$",
    re.IGNORECASE,
)  # "I have never", "it's always", "they'll never", "I can never": what is, not what to do
_IDIOM = re.compile(
    r"\s+(?:too|a|an|fun|easy|mind|again|ever|late|early|wrong|right|sure|there|here|home)\b",
    re.IGNORECASE,
)
_PAST = re.compile(
    r"\s+(?:(?!(?:embed|need|exceed|proceed|feed|seed|speed|succeed|shed|shred)\b)\w+ed|been|had"
    r"|was|were|did|(?:has|have) been|went|saw|seen|wrote|written|made|got|thought|knew"
    r"|known|heard|done|gone|told|took|taken|came|felt|found|left|lost|said|won|ate|eaten|sent"
    r"|gave|bought|brought|kept|paid|ran|sat|spent|forgot|forgotten)\b",
    re.IGNORECASE,
)
# "I always want X", "one thing I always do: X": what is to be done, said as a habit
_WANTS = re.compile(r"\s+(?:want|need|prefer|like|use|go for|pick|choose|do:)(?!\w)", re.IGNORECASE)


def _constraint(t: _Text) -> float:
    cued = _cued(t, _CONSTRAINT_WORDS, _CONSTRAINT_PHRASE_GATE, _CONSTRAINT_PHRASE, _CONSTRAINT_ZH)
    if cued and "must" in t.words and _GUESSED.search(t.text):
        # "Biscuit must be thrilled", "that must have been scary": a guess, no rule
        return _constraint(_read(_GUESSED.sub(" ", t.text)))
    return 1.0 if cued else 0.0


# "must" guessing at how someone feels or how something was, not requiring it
_GUESSED = re.compile(
    r"\bmust(?:'ve| have) been\b|\bmust be (?:(?:so|really|very|such|pretty|quite|super|"
    r"absolutely|a bit|kind of) )*(?:an? )?(?:thrilled|excited|exciting|exhausted|exhausting|"
    r"tired|tiring|hard|tough|fun|nice|lovely|amazing|awesome|great|awful|terrible|wild|"
    r"crazy|chaos|chaotic|scary|stressful|stressed|proud|relieved|happy|sad|gutted|"
    r"devastated|overwhelming|overwhelmed|weird|strange|surreal|relief|nightmare|joking|"
    r"kidding|freezing|boiling|starving|busy|bored|lonely|nervous|worried|cute|gorgeous|"
    r"beautiful|delicious|heaven|torture|brutal|rough|frustrating|annoying)\b",
    re.IGNORECASE,
)


def _cued(
    t: _Text,
    words: frozenset[str],
    phrase_gate: frozenset[str],
    phrase: re.Pattern[str],
    chinese: re.Pattern[str],
) -> bool:
    """A one-word cue in the word set, a phrase whose first word is there, or (in CJK
    text, which has no spaces to split words on) the Chinese cues."""
    if not t.words.isdisjoint(words):
        return True
    if not t.words.isdisjoint(phrase_gate) and phrase.search(t.text):
        return True
    return t.cjk and chinese.search(t.text) is not None


def _value(t: _Text) -> float:
    if t.value is None:
        t.value = _values(t)
    return t.value


def _values(t: _Text) -> float:
    if t.cjk and _QUANTITY_ZH.search(t.text):  # "五岁", "十楼", "6楼": a count and its unit
        return 1.0 + (_values(_read(_QUANTITY_ZH.sub(" ", t.text))) if t.digits else 0.0)
    if not t.digits and t.words.isdisjoint(_DATE_WORDS):
        return 0.0
    text, words = t.text, t.words
    plain = text.isascii()  # known at once: in ASCII, a substring test stands for a search
    kinds = 0
    if ("$" in text if plain else _MONEY_CHARS.search(text)) or not words.isdisjoint(
        _CURRENCY_WORDS
    ):
        kinds += 1
    # each pattern is searched only when a character it needs is there
    if not words.isdisjoint(_DATE_WORDS) or (
        _date_chars(text, plain) and _NUMERIC_DATE.search(text)
    ):
        kinds += 1
    if t.digits:
        if not words.isdisjoint(_DURATION_WORDS) or (
            _clock_chars(t, plain) and _CLOCK.search(text)
        ):
            kinds += 1
        if "%" in text or not words.isdisjoint(_QUANTITY_WORDS):
            kinds += 1
        if _version(t):
            kinds += 1
        if not kinds and _TWO_DIGITS.search(text):
            kinds = 1
    return float(kinds)


_QUANTITY_ZH = re.compile(
    # a count and its unit ("两百多杯", "八十多个人", "6楼"); "一只", "一个" say "a", no count
    r"(?:\d+|(?![一几][多]?(?:只|个|次|套|块|杯|件|张|本|份|位|间|天|下|点))[零一二三四五六七八九十百千万两几]+)"
    r"多?\s?(?:岁|楼|层|套|只|块|元|万|斤|公斤|平米|平|公里|次|号|周|个月|个|杯|人|天|小时|分钟|年"
    r"|份|张|本|家|间|位|名|件|台|度|米|克|晚|澳元|美元|欧元|英镑|日元)"
)


def _date_chars(text: str, plain: bool) -> bool:
    """Whether `text` may hold the characters a numeric date needs: in ASCII (`plain`),
    a dash (2024-05-01) or two of dot and slash (5/1/24): searches in C, where a set's
    test reads every character in Python's loop."""
    return not plain or "-" in text or text.count(".") + text.count("/") >= 2


def _clock_chars(t: _Text, plain: bool) -> bool:
    """Whether `_CLOCK` may find a time: in ASCII (`plain`), a colon or an am/pm."""
    if not plain or ":" in t.text:
        return True
    lower = t.lower
    return "am" in lower or "pm" in lower or "a.m" in lower or "p.m" in lower


def _version(t: _Text) -> bool:
    """3.11, v2.0.1, "Python 3": each pattern searched only when it could match."""
    if "." in t.text and _DOTTED.search(t.text):
        return True
    lower = t.lower
    named = "version" in lower or "python" in lower or "node" in lower or "java" in lower
    return named and bool(_NAMED_VERSION.search(t.text))


def _code_name(t: _Text) -> bool:
    """A `quoted` name, a snake_case or a camelCase one."""
    text = t.text
    return bool(
        ("`" in text and _QUOTED_CODE.search(text))
        or ("_" in text and _SNAKE.search(text))
        or (t.capitals and _CAMEL_GATE.search(text) and _CAMEL.search(text))
    )


def _change(t: _Text) -> float:
    cued = _cued(t, _CHANGE_WORDS, _CHANGE_PHRASE_GATE, _CHANGE_PHRASE, _CHANGE_ZH)
    return 1.0 if cued else 0.0


def _entity(t: _Text) -> float:
    if t.entity is None:
        t.entity = _entities(t)
    return t.entity


def _entities(t: _Text) -> float:
    text = t.text
    kinds = 0
    if "://" in text or "www." in text:
        kinds += 1
    if "@" in text and _EMAIL.search(text):
        kinds += 1
    if "/" in text and _PATHLIKE.search(text):
        kinds += 1
    if t.digits and _HEX_RUN.search(text) and _HASH.search(text):
        kinds += 1
    if t.digits and (t.capitals or "-" in text) and _ID.search(text):  # capitals, or dashes
        kinds += 1
    if _code_name(t):
        kinds += 1
    if t.cjk and _NAMED_JA.search(text):
        kinds += 1  # "ミラーさん", "田中先生", "エア・カナダ": a person by title, a foreign name
    if t.cjk and _NAMING_ZH.search(text):
        kinds += 1  # "新公司叫星河数据", "猫叫豆包": a name given, where no capital marks one
    if t.cjk and _NAMED_ZH.search(text):
        kinds += 1  # "叫「半山咖啡」", "找到Brunswick一个单间": quoted, or in Latin letters
    if not t.capitals:  # no capital past the first letter: no name
        return float(kinds)
    if not t.words.isdisjoint(_NAMING_WORDS) and _NAMING.search(text):
        kinds += 1  # "a company called Brightwater", "his name is Biscuit": a name given
    names = [
        m.group()
        for m in _NAME.finditer(text)
        if m.group().rstrip(".") not in _NOT_NAMES
        and (t.digits or m.group().rstrip(_TRAILING).lower() not in _DATE_WORDS)
        and not _vocative(text, m)
    ]
    if any(n.isupper() for n in names) and _shouted(text):
        names = [n for n in names if not n.isupper()]  # "I GOT THE JOB": no names
    t.names = tuple(_name_key(n) for n in names)
    return float(kinds + min(2, (len(names) + 1) // 2))


def _shouted(text: str) -> bool:
    """Whether most of the letters are capitals: words in capitals there are shouted,
    not acronyms."""
    letters = [c for c in text if c.isalpha()]
    return sum(c.isupper() for c in letters) * 2 > len(letters)


def _vocative(text: str, name: re.Match[str]) -> bool:
    """A name the sentence ends by calling ("It's December, Tom."): who is spoken to,
    not what is spoken of."""
    return text[name.start() - 2] == "," and not text[name.end() :].strip(" .!?…")


def _name_key(word: str) -> str:
    """A name as its mentions share it: "Sheldon's", "Sheldon." and "Sheldon" are one."""
    bare = word.rstrip(_TRAILING)
    return bare.removesuffix("'s").removesuffix("’s").rstrip(_TRAILING).lower()


_TRAILING = ".,;:!?\"')]}”’…-"


def _opening_name(t: _Text, names: frozenset[str]) -> bool:
    """Whether the unit opens with a name this conversation uses elsewhere ("Lila started
    violin"): a capital that starts a sentence says nothing alone, a known name does."""
    first = t.text.split(None, 1)[0] if t.text else ""
    return first[:1].isupper() and _name_key(first) in names and first not in _NOT_NAMES


def _self_fact(t: _Text) -> float:
    if t.question:
        return 0.0
    if t.cjk and "我" in t.text:
        return 1.0 if _SELF_FACT_ZH.search(t.text) else 0.0
    return 1.0 if t.words & _SELF_WORDS and t.words & _SELF_VERBS else 0.0


def _preference(t: _Text) -> float:
    """A taste stated ("I hate cilantro", "my favourite flavour is pistachio", "I'm not
    going on roller coasters", "朝南的最好"): 1, else 0."""
    if t.cjk and _PREFERENCE_ZH.search(t.text):
        return 1.0
    if t.words.isdisjoint(_PREFERENCE_WORDS):
        return 0.0
    return 1.0 if _PREFERENCE.search(t.text) else 0.0


_PREFERENCE = re.compile(
    r"\b(?:i|we)(?:['’]m| am| really| honestly| just| totally)? (?:hate|love|adore|loathe"
    r"|can['’]t stand|cannot stand|refuse|detest|don['’]t (?:like|eat|drink|do))\b"
    # someone the user looks after: "he can't stand fish pie", "my dad hates onions"
    r"|\b(?:he|she|they|(?:my|our) \w+)(?: really| just| absolutely)? (?:hates|loves|likes"
    r"|prefers|adores|loathes|detests|refuses|can['’]t stand|cannot stand"
    r"|doesn['’]t (?:like|eat|drink))\b"
    r"(?! (?:it|this|that|them|him|her|me|you|us)\b)"  # "she loves it": a reaction
    r"|\bfavou?rite\b|\bfaves?\b|\bi(?:['’]m| am) (?:not going(?! to lie)|never going|not a fan)"
    r"|\b(?:won['’]t|will not|never) (?:eat|drink|touch)\b"  # "Theo won't eat mushrooms"
    # a habit: "I never run with headphones", "I always write longhand first"
    r"|\bi (?:never|always|only) (?!(?:\w+ed|been|had|was|got|knew|know|thought|said)\b)\w+"
    r"|\bdrives? me (?:up the wall|crazy|mad|nuts|insane)\b|\bje (?:ne )?veux (?:pas|plus)\b"
    # Spanish, Portuguese, French, German, Italian: "a mí el pulpo no me gusta nada"
    r"|\b(?:me gustan?|me encantan?|odio|detesto|no soporto|prefiero|gosto d[eoa]s?|adoro"
    r"|odeio|prefiro|j['’]aime|n['’]aime|j['’]adore|je déteste|je préfère|supporte pas"
    r"|ich (?:mag|hasse|liebe|bevorzuge)|mi piace|mi piacciono|preferisco"
    r"|non sopporto|favorit[oa]|preferit[oa]|préférée?|hekel aan|helemaal weg van"
    r"|ik hou(?:d)? van|favoriete)\b"
    # "mi piace come scrive", "sì, mi piace", "me encanta esto": a reaction, no taste
    r"(?!\s*(?:[.!?,]|$|come\b|così\b|molto\b|tanto\b|quest|esto\b|eso\b|mucho\b"
    r"|muito\b|isso\b|ça\b|cela\b|das\b|es\b|sehr\b|beaucoup\b))",
    re.IGNORECASE,
)
_PREFERENCE_WORDS = _wordset(
    """hate love adore loathe stand refuse detest don't favorite favourite going fan hates
    always only drive drives veux
    loves likes prefers adores loathes detests refuses doesn't won't will never
    gusta gustan encanta encantan odio detesto soporto prefiero gosto adoro odeio prefiro
    j'aime n'aime j'adore déteste préfère supporte mag hasse liebe bevorzuge piace
    piacciono preferisco sopporto favorito favorita preferito preferita préféré préférée
    hekel weg hou houd favoriete fave faves"""
)
_PREFERENCE_ZH = re.compile(
    r"最好|最喜欢|更喜欢|比较喜欢|偏好|宁愿|宁可|受不了|讨厌|不喜欢"
    r"|一番好き|いちばん好き|絶対(?:いや|嫌)|好きじゃない"  # Japanese: favourite, never
)
_PREFERENCE_WEIGHT = 1.5
# leaving the chat: going, not going somewhere ("I have to go to Berlin" is news)
_LEAVING = re.compile(
    r"\b(?:gotta|got to|have to|need to|must|should) (?:go|run|dash|head off|fly)\b(?! to\b)"
    r"|\b(?:talk|speak|chat) (?:later|soon|tomorrow)\b|\bttyl\b",
    re.IGNORECASE,
)
_SMALL_TALK = 0.4  # naming nothing and said in everyday words: whatever is rare here


def _filler(t: _Text) -> bool:
    if t.cjk and _FILLER_JA.match(t.text.strip()):
        return True
    if len(t.words) > 16:
        return False
    if not t.words <= _FILLER_VOCABULARY:
        return _greets_by_name(t)
    return bool(_FILLER.match(t.text.strip()))


def _greets_by_name(t: _Text) -> bool:
    """A greeting or thanks with the name of who is spoken to ("Hi Rui.", "Thanks, Tom!"):
    the name says who, the rest says nothing."""
    other = t.words - _FILLER_VOCABULARY
    if len(other) != 1 or not t.capitals:
        return False
    name = next(iter(other))
    said = re.sub(rf"(?i),?\s*\b{re.escape(name)}\b", "", t.text, count=1)
    if said == t.text or not re.search(rf"\b{re.escape(name.capitalize())}\b", t.text):
        return False
    rest = _read(said)
    return bool(rest.words) and rest.words <= _FILLER_VOCABULARY and _filler(rest)


def is_instruction(text: str, *, chat: bool = False) -> bool:
    """Whether `text` reads as a standing instruction or preference (how the work is to
    be done from now on), not a one-off request or a question; `chat` when it was said
    to an assistant in conversation (not an agent's task), where the fitted weights read
    more of them.

    >>> is_instruction("Always include version numbers when I ask about libraries.")
    True
    >>> is_instruction("以后请用中文回答我。")
    True
    >>> is_instruction("Can you do that for me?"), is_instruction("Fix the login bug.")
    (False, False)
    """
    return _instruction(_read(text)) or (chat and told(text) > _RULE_LIKELY_IN_CHAT)


def is_question(text: str) -> bool:
    """Whether `text` asks (ends with a question mark, Latin or CJK).

    >>> is_question("Is it Friday?"), is_question("是周五吗？"), is_question("It is Friday.")
    (True, True, False)
    """
    return _read(text).question


def is_filler(text: str) -> bool:
    """Greetings, thanks, acknowledgements and pleasantries: nothing to keep.

    >>> is_filler("Thanks so much!"), is_filler("Ok, sounds good."), is_filler("OK, use Redis.")
    (True, True, False)
    """
    return _filler(_read(text))


def constraint_signal(text: str) -> float:
    """Constraints and commitments: 1 when the text states one, else 0.

    >>> constraint_signal("Never exceed the $500 budget"), constraint_signal("Nice day")
    (1.0, 0.0)
    """
    return _constraint(_read(text))


def value_signal(text: str) -> float:
    """How many kinds of value (money, date, time, quantity, version, number) it states.

    >>> value_signal("Meet on May 5 at 10:30, budget $200"), value_signal("see you")
    (3.0, 0.0)
    """
    return _value(_read(text))


def change_signal(text: str) -> float:
    """A decision or a change of state: 1 when the text reports one.

    >>> change_signal("We switched to Postgres"), change_signal("Postgres is a database")
    (1.0, 0.0)
    """
    return _change(_read(text))


def entity_signal(text: str) -> float:
    """Named entities and identifiers: how many kinds (names count once per two).

    >>> entity_signal("Ask Maria Lopez at maria@example.org"), entity_signal("ask her")
    (2.0, 0.0)
    """
    return _entity(_read(text))


def names_in(text: str) -> frozenset[str]:
    """The names `text` says past its first word, lower-cased, as their mentions share
    them ("Sheldon's" is "sheldon").

    >>> sorted(names_in("We sold the Skoda to Maria's brother."))
    ['maria', 'skoda']
    """
    t = _read(text)
    _entity(t)
    return frozenset(t.names)


def self_fact_signal(text: str) -> float:
    """A fact the speaker states about themselves (first person and a verb of state or
    event, not a question): 1, else 0.

    >>> self_fact_signal("My daughter started school in Bern"), self_fact_signal("Is it?")
    (1.0, 0.0)
    """
    return _self_fact(_read(text))


# -- the score ---------------------------------------------------------------------------


def _self_fact_weight(t: _Text, source: str, specific: bool) -> float:
    """The user telling about themselves weighs most; the other side of a conversation
    (a second person in a chat between two) counts when it names something specific,
    so "I adopted a puppy named Luna" counts and "I can help with that" does not."""
    if source == "user" or (source == "assistant" and specific):
        return _SELF_FACT_WEIGHT * _self_fact(t)
    return 0.0


def _worded(content: tuple[str, ...]) -> bool:
    """Whether a word of `content` opens with a letter (most open the unit: one test)."""
    return content[0][0].isalpha() or any(w[0].isalpha() for w in content)


_COMMON_NAME = 4
_COMMON_SHARE = 0.02
# what each signal is worth in a unit's salience, and what a unit saying little keeps
# (fitted on the hand-written sets, held out by set: see docs/memory.md, Salience)
_CONSTRAINT_WEIGHT = 1.5
_VALUE_WEIGHT = 2.25  # a value (up to three count)
_CHANGE_WEIGHT = 1.5
_ENTITY_WEIGHT = 2.4  # a name or identifier (up to three count)
_SELF_FACT_WEIGHT = 1.5
_RARITY_WEIGHT = 4.5
_FACT_WEIGHT = 5.0  # how likely the fitted weights find a fact asked for later in it
_FEW_WORDS = 0.2  # under three content words, naming nothing
_QUESTION_WEIGHT = 0.9  # a question that asks no value
_GENERIC = 0.4  # a reply's generic advice
_AUTHOR_WEIGHT = {"user": 1.25, "system": 1.25, "assistant": 0.6, "tool": 0.6}


class Salience:
    """Scores units of one conversation: the signals above plus rarity within it.

    Build it over every unit's text (`Salience.of`) so that rarity is measured against
    this conversation, then `score` each unit.
    """

    def __init__(
        self, document_frequency: Counter[str], documents: int, names: frozenset[str] = frozenset()
    ) -> None:
        self.df = document_frequency
        self.names = names  # said past a sentence's first word somewhere in the conversation
        self.n = max(1, documents)
        self._norm = math.log((1 + self.n) / 2 + 1)
        self._unseen = math.log(1 + self.n)  # the IDF of a word said nowhere here
        self._idf: dict[str, float] = {}

    @classmethod
    def of(cls, texts: Iterable[str]) -> Salience:
        said = Counter(texts)  # a unit said again counts again, but is read once
        df: Counter[str] = Counter()
        names: set[str] = set()
        once: list[str] = []  # the words of the texts said once, counted in one call
        for text, times in said.items():
            t = _read(text)
            if times == 1:
                once.extend(set(t.content))
            else:
                for w in set(t.content):
                    df[w] += times
            if t.capitals and _entity(t):
                names.update(t.names)
        df.update(once)
        return cls(df, said.total(), frozenset(names))

    def rarity(self, text: str) -> float:
        """0..1: how rare the unit's rarest words are here (mean of its top three IDFs,
        over the IDF of a word seen once)."""
        return self._rarity(_read(text))

    def _rarity(self, t: _Text) -> float:
        if not t.content:
            return 0.0
        idf = self._idf
        if not idf and self.df:  # each word's IDF, computed once per conversation
            n, unseen = 1 + self.n, self._unseen
            idf.update({w: math.log(n / (1 + c)) if c else unseen for w, c in self.df.items()})
        # the distinct weights, mapped in C; at most as many as the distinct words, so the
        # top three of them are the top min(3, distinct words)
        weights = set(map(idf.get, t.content, itertools.repeat(self._unseen)))
        top = sorted(weights, reverse=True)[:3]
        return min(1.0, sum(top) / len(top) / self._norm)

    def _everywhere(self, name: str) -> bool:
        """Whether a name is said so often here that naming it tells nothing."""
        return self.df.get(name, 0) > max(_COMMON_NAME, self.n * _COMMON_SHARE)

    def query(self, text: str) -> dict[str, float]:
        """The rare words of what is asked (`text`), each with its weight here (its IDF):
        what `relevance` looks for. Words said everywhere weigh nothing.

        >>> s = Salience.of(["The cat sat.", "The cat ran.", "Dinner at Mamma Rosa."])
        >>> sorted(s.query("Where was dinner?"))
        ['dinner']
        """
        out: dict[str, float] = {}
        for w in set(_read(text).content):
            df = self.df.get(w, 0)
            weight = math.log((1 + self.n) / (1 + df))
            if 0 < df <= max(2, self.n // 4) and weight > 0:  # used here, not everywhere
                out[w] = weight
        return out

    def relevance(self, text: str, query: dict[str, float]) -> float:
        """0..1: how much of what is asked (`query`, from `query`) the unit speaks of,
        weighted by rarity.

        >>> s = Salience.of(["The cat sat.", "The cat ran.", "Dinner at Mamma Rosa."])
        >>> q = s.query("Where was dinner?")
        >>> s.relevance("Dinner at Mamma Rosa.", q), s.relevance("The cat sat.", q)
        (1.0, 0.0)
        """
        if not query:
            return 0.0
        shared = sum(query.get(w, 0.0) for w in set(_read(text).content))
        return min(1.0, shared / max(query.values()))

    def score(self, text: str, source: str) -> float:
        """The salience of one unit said by `source` (user, assistant, tool, system)."""
        t = _read(text)
        if not t.content or _filler(t) or not _worded(t.content):
            return 0.0  # nothing said, or a number alone ("(10)"): nothing to keep
        values = _value(t)
        entities = _entity(t)
        if t.names and entities and all(self._everywhere(n) for n in t.names):
            entities -= 1  # "Maya!", "Tom: MAYA.": who the chat is between, no news
        if self.names and _opening_name(t, self.names):
            entities += 1
        signal = (
            _CONSTRAINT_WEIGHT * _constraint(t)
            + _VALUE_WEIGHT * min(values, 3.0)
            + _CHANGE_WEIGHT * _change(t)
            + _ENTITY_WEIGHT * min(entities, 3.0)
            + _self_fact_weight(t, source, bool(values or entities))
            + _PREFERENCE_WEIGHT * _preference(t)
            + _RARITY_WEIGHT * self._rarity(t)
            + _FACT_WEIGHT * factual(text, source)
        )
        if len(t.content) < 3 and not (values or entities):
            signal *= _FEW_WORDS  # "sounds fine to me": a few words with nothing specific
        elif not (values or entities or _preference(t)) and everyday(t.content):
            signal *= _SMALL_TALK  # "I got lost using the map again"
        if not values and _LEAVING.search(t.text):
            signal *= _SMALL_TALK  # "anyway, gotta go pick up Lila": the chat ends, no news
        if t.question and not values:
            signal *= _QUESTION_WEIGHT  # what was asked says less than what was told
        generic = source == "assistant" and not (values or entities)
        if generic and _GENERIC_OPENERS.match(text):
            signal *= _GENERIC  # generic advice
        return round(signal * _AUTHOR_WEIGHT.get(source, 1.0), 4)
