"""The salience model's signals, each on its own, and the ledger of instructions."""

from __future__ import annotations

import pytest

from kompakt.notes import Ledger, Salience, is_filler, is_instruction, superseded
from kompakt.notes.ledger import drop_superseded, supersessions, surviving_clauses
from kompakt.notes.salience import (
    acknowledged_rule,
    change_signal,
    constraint_signal,
    content_words,
    entity_signal,
    is_question,
    names_in,
    self_fact_signal,
    value_signal,
)
from kompakt.notes.units import split_sentences


@pytest.mark.parametrize(
    "text",
    [
        "Always include version numbers when I ask about libraries.",
        "never put my real name in commit messages",
        "From now on, reply in German.",
        "Please don't summarize the article, I want the full text.",
        "I prefer tabs over spaces.",
        "I'd rather you skipped the small talk.",
        "Whenever I paste a stack trace, start with the root cause.",
        "Add the version number every time I ask about a library.",
        "Can you remember to cite a source?",
        "also times in 24h please.",
        "Und bitte duze mich, das Sie macht mich nervös",
        "Et tutoie-moi, stp, le vouvoiement me donne l'impression de parler à ma banque.",
        "Ah et fais court dans tes réponses, je lis tout sur mon téléphone.",
        "keep replies to like two lines pls.",
        "and keep them under 80 words",
        "when I ask a question, give me a hint first and let me try.",
        "Small thing, can you stop opening every answer with 'Great question'.",
        "oh and could you put a 'bail-out' option on every day of the plan?",
        "Before anything else — I only want force-free advice.",
        "Also, favour: if you ring, not before ten please.",
        "Ich bin Vegetarierin und hab echt keine Lust extra Fleisch zu kaufen.",
        "Reminder the screen rule is still no screens after 7:30 on school nights.",
        "also run everything with --dry-run first where the tool supports it",
        "oh and run things as the svc-migr service account, not as me.",
        "Use a table whenever we're comparing two or more records, please.",
        "One more format thing: end every bit of chapter feedback with the most important fix.",
        # asked of a flatmate, a sibling, a friend
        "and cc Tash on anything to do with the landlord pls, she's the one on the lease",
        "pls label your stuff in the fridge with your initials.",
        "when you pay a bill can you screenshot it in here?",
        "also if you're bringing someone home after midnight can you text me first?",
        "But rule number one: NOTHING about it in the family WhatsApp.",
        "Put guest list changes in the shared spreadsheet, not in texts please!",
        "send me links not screenshots pls, i can't click a screenshot",
        "and can we keep all the money stuff in the spreadsheet instead of in here?",
        "Make sure to double-check dates against my calendar.",
        "Call me Jo.",
        "Going forward, use ISO dates.",
        "Could you stop using emojis from now on?",
        "Can you always add the source?",
        "Keep in mind that I'm lactose intolerant.",
        "以后回答请用中文。",
        "不要在回答里用表情符号。",
        "我更喜欢简短的回答。",
        "You should always double-check the units.",
        "Please don’t use emojis with me.",  # a typographic apostrophe
        "Y otra cosa, sin emojis por favor.",
        "Aunque te escriba en español, respóndeme siempre en inglés, por favor.",
        "Désormais, réponds en français.",
        "Bitte antworte immer auf Deutsch.",
        "Also, stop suggesting pandas please, we can't install it.",
        "Personal preference: no quiero vender nada con aceite de palma.",
        "Another rule for you: we use pytest, not unittest.",
        "Never exceed the budget.",
        "Never embed secrets in code.",
        "Keep it short.",
        "Also, small request: please communicate by email or here in the chat, not by phone.",
        "Don't be verbose.",
        "I always want the cheapest option listed first.",
        "For everything billing-related, copy my manager.",
        # what the user's body or beliefs rule out holds for good, asked in passing or not
        "Is peanut oil ok given my peanut allergy?",
        "I'm vegetarian, so what could I cook for the party?",
        "I don't eat pork, is this dish ok?",
        "can you skip the pleasantries at the start of answers?",
        "please no spoilers though, I'm a week behind",
        "另外别给我推荐成功学那种书，我很反感",
        "我最喜欢的作家是余华，你能推荐一些类似风格的书吗？",
        "also pls sign off anything you draft for me as just 'Noor'",
        "And British spelling throughout please, I keep slipping into American.",
        # a clause that opens with its verb and says always or never is told
        "Eine Sache noch, die ist mir wichtig: schreib nie 'lecker' in einem Text.",
        "N'utilise jamais de tirets longs.",
        "Nunca uses emojis conmigo.",
        "another thing I always do: describe the weather at the start of every session.",
        "house rule I forgot to mention, potions are a bonus action at my table.",
        "Et stp, toujours les quantités en grammes, jamais de cups.",
        "I always sign off with just 'Best,' please, Kind regards feels like a bank.",
        "Also, I don't like desserts that are too sweet — can we cut the sugar?",
        "还有，别再发表情了好吗，上次你回复里一堆表情",  # asked as a question
        "说到钱，以后涉及钱的地方都用人民币计算",
        "记得提醒我周五交房租。",
    ],
)
def test_standing_instructions_are_recognised(text: str) -> None:
    assert is_instruction(text)


@pytest.mark.parametrize(
    "text",
    [
        "Can you do that for me?",  # a one-off question
        "Fix the login bug.",  # a one-off request
        "I don't know why it fails.",  # "don't" that is not an instruction
        "I have never been so angry at a piece of paper.",  # what happened, not a rule
        "It's always the same with the landlord.",
        "She has a spreadsheet for everything.",
        "Okay, don't jinx it, but I've got an interview next week.",  # an idiom
        "Siempre llueve en Bilbao en mayo.",  # what happens, not a rule
        "I use `with open()` but never wrote my own.",
        "Por favor, revisa el menú de mañana.",  # a one-off request
        "Biscuit is a perfect name, don't you dare change it.",  # said to a friend
        "Don't be hard on yourself.",
        "Never too early for tiny jumpers.",
        "Tacos are always the answer when the fridge is empty.",
        "Keep it going.",
        "My sister's allergy season is starting.",  # not the user's
        "Can I eat this after midnight?",
        "They'll never know.",
        "I can never sit still that long.",
        "Please no worries!",
        "I love everything you make!",
        "Thanks for everything you suggest.",
        "The rain kept on throughout the day, please send help.",
        "Ich war nie in Paris.",
        "Wir backen immer freitags.",
        "Je ne mange jamais de viande le soir.",
        "Nunca llueve en Bilbao en agosto.",
        # "always", "from now on", "remember" that describe, in Chinese
        "为什么周一总是这么累",
        "同事总是在群里发语音，好烦",
        "你好呀，我叫林晓，以后可能会经常来找你聊天。",
        "我记得那天下雨了。",
        "hey, I've got a bunch of questions, figured I'd keep it in one chat.",
        "my players never read the handouts",
        "Ha, good catch on Pierogi, the cat would never forgive us.",
        "But the pay's better and I can stop doing the 7am kennel shift.",
        "anyway, do you remember that awful pub quiz in second year",
        "A rule of thumb is to save a tenth of what you earn.",
        "The house rules are posted on the fridge.",
        # what happens every time, and a question that asks to recall, not to remember
        "lol my knee clicks every time I go upstairs now.",
        "It breaks every time I run the tests.",
        "ha can you remember the name of the chippy in Leek Grandad used to take us to?",
        # idioms of "make it", "call me", "don't"
        "If I don't make it, you can have my dahlias.",
        "Oh and my sister tried to video call me and I answered the telly remote",
        "Not crime, so don't get your hopes up.",
        # a question of one's own in Chinese ("should I or not?"), and who does what always
        "嗯，新家要不要买个洗碗机",
        "嗯，换城市以后银行卡需要换吗",
        "btw, any tips for dealing with a supplier who never answers emails",
        "its always me lol",
        "u always say that and get a 70 xx",
        "When I asked him, he said no.",
        "I only want to say thanks.",
        "The rule is simple.",
        "Add the eggs, not the flour.",
        "Call me tomorrow, not today.",
        "コーヒーでお願いします",
        "If you are unsure, ask your photographer how they would structure the day.",
        "when you get a chance, can you send me the file?",
        "if you call me tomorrow I will answer",
        "Quick one - Dave always sent me a Christmas calendar, do you lot still do that.",
        "Kasia's a great tenant, never late in four years.",
    ],
)
def test_requests_questions_and_reports_are_not_instructions(text: str) -> None:
    assert not is_instruction(text)


@pytest.mark.parametrize(
    "text",
    [
        "Thanks!",
        "ok cool",
        "Hi there!",
        "Great, that helps.",
        "谢谢",
        "Sounds good.",
        "I'll let you go, speak soon",  # closings
        "Take care! Talk soon.",
        "Ha, same here.",
        "Hi Rui.",  # a greeting with the name of who is spoken to
        "Thanks, Tom!",
    ],
)
def test_filler_is_recognised(text: str) -> None:
    assert is_filler(text)
    assert Salience.of([text, "My passport expires on 2027-03-01."]).score(text, "user") == 0


@pytest.mark.parametrize(
    "text",
    ["OK, use Redis.", "Thanks, the budget is $400.", "Good luck with the interview on Friday!"],
)
def test_filler_words_around_content_are_not_filler(text: str) -> None:
    assert not is_filler(text)


def test_each_signal_reads_what_it_names() -> None:
    assert constraint_signal("We can spend at most 3 hours on this.") == 1
    assert constraint_signal("The weather is nice.") == 0
    assert value_signal("Dinner is at 19:30 on 2024-05-02 for $85") == 3
    assert value_signal("It costs a lot.") == 0
    assert change_signal("We moved the launch to Tuesday.") == 1
    assert change_signal("The launch is on Tuesday.") == 0
    assert entity_signal("Send it to ops@acme.io, ticket PAY-4411") >= 2
    assert entity_signal("send it to them") == 0
    assert self_fact_signal("My son Leo started judo last month.") == 1
    assert self_fact_signal("Judo is a martial art.") == 0
    # a preference said about oneself is a fact about oneself; asking one is not
    assert self_fact_signal("I really enjoy hiking in the Alps.") == 1
    assert self_fact_signal("Do you enjoy hiking?") == 0


def test_rarity_beats_frequency() -> None:
    texts = ["we talked about the weather"] * 20 + ["my cousin breeds axolotls in Ghent"]
    s = Salience.of(texts)
    assert s.rarity(texts[-1]) > 0.8 > 0.3 > s.rarity(texts[0])
    assert s.score(texts[-1], "user") > 2 * s.score(texts[0], "user")


def test_authorship_is_a_signal_not_a_rank() -> None:
    s = Salience.of(["Our office moved to 14 Rue Cler, Paris.", "hello, how are you today"])
    said_by_assistant = s.score("Our office moved to 14 Rue Cler, Paris.", "assistant")
    assert said_by_assistant > s.score("hello, how are you today", "user")


def test_chinese_text_is_split_and_counted() -> None:
    assert split_sentences("我下周三去上海。预算是五千元！好的") == [
        "我下周三去上海。",
        "预算是五千元！",
        "好的",
    ]
    assert "上海" in content_words("我下周三去上海。")


def test_an_emoji_before_a_capital_ends_a_sentence() -> None:
    """Where no stop was typed, an emoji ends the sentence: the count is a statement and the
    question after it another, so the count can supersede the older one."""
    said = "We're now at 110 guests 🙃 Does that change anything for you?"
    assert split_sentences(said) == [
        "We're now at 110 guests 🙃",
        "Does that change anything for you?",
    ]
    assert superseded("We're at about 95 guests at the moment.", split_sentences(said)[0])
    assert split_sentences("love it 😍 and the cake ❤️ Also the band!") == [
        "love it 😍 and the cake ❤️",
        "Also the band!",
    ]


def test_an_update_supersedes_the_stale_value() -> None:
    assert superseded("The deadline is March 1.", "The deadline moved to April 5.")
    assert superseded("Response time is 400 ms.", "Response time is now 250 ms.")
    assert superseded("We use Redis for caching.", "We dropped Redis last sprint.")
    assert not superseded("My cat is called Tom.", "The deadline moved to April 5.")
    assert not superseded("I live in Oslo.", "I love Oslo in winter.")  # no change said
    # "called" says a thing has a name, not what the thing is
    assert not superseded(
        "it's called The Ashen Crown.", "now a cult called the Cinder Choir wants the crown."
    )
    assert superseded(
        "We're thinking Porto in July.", "We switched the holiday to Lisbon from Porto."
    )


@pytest.mark.parametrize(
    ("older", "newer"),
    [
        ("El vuelo de Marta sale el 9 de junio.", "Ahora el vuelo de Marta sale el 16 de junio."),
        ("Der Stand ist donnerstags auf dem Markt.", "Der Stand ist jetzt freitags auf dem Markt."),
        ("La réunion est le 3 mars à Lyon.", "La réunion à Lyon est reportée au 10 mars."),
    ],
)
def test_an_update_is_read_in_other_languages(older: str, newer: str) -> None:
    assert superseded(older, newer)
    # the noun "cambio" says what a change costs, not that something changed
    assert not superseded(older, "el cambio de vuelo cuesta 120 € más")


def test_a_reply_that_confirms_a_change_in_spanish_outdates_the_row_it_changes() -> None:
    """The words that say a change was made ("Actualizado") and a language's small words
    ("de", "el") name no subject: the reply speaks of most of what the row spoke of."""
    row = "| ALB-2315 | Marta Ruiz y pareja | Azores | 7 de junio | 9 de junio | Málaga |"
    reply = "Actualizado ALB-2315: boda el 14 de junio, vuelo a las Azores el 16 de junio."
    assert supersessions([(row, 1.0), (reply, 2.0)], replies={1}) == {0: [1]}


def test_a_day_changed_in_another_language_outdates_the_older() -> None:
    """A weekday or a month is one in any language: "lunes" is Monday."""
    assert superseded(
        "Right now we close on Mondays.",
        "Cambio importante: cerramos los martes en vez de los lunes.",
    )
    assert value_signal("Der Stand ist jetzt freitags da.") == 1.0


def test_a_total_said_again_with_new_figures_outdates_the_older() -> None:
    """A reply's table says a total again with new figures, the currency after the number
    as Europe writes it; a line that shares only "inc VAT" with it is no such total."""
    row = "| Gesamtpreis Corolla | 19.380 € (inkl. 390 € Überführung) |"
    new = "| **Gesamtpreis inkl. Überführung** | **18.840 €** |"
    assert supersessions([(row, 1.0), (new, 2.0)], replies={1}) == {0: [1]}
    quote = "Halvorsen's quote: £38,400 inc VAT for kitchen, bathroom, strip-out and plastering."
    window = "Also the kitchen window from Sashworks is £1,950 inc VAT."
    assert supersessions([(quote, 1.0), (window, 2.0)]) == {}


def test_a_chinese_change_names_its_new_value() -> None:
    """ "改成新西兰了" names the new value; "蜜月" (honeymoon), said nowhere else, is the
    subject though the older statement says much besides."""
    said = [
        ("我们打算明年结婚，日子暂定2025年10月5日，蜜月想去冰岛看极光", 1.0),
        ("最近工作好累", 2.0),
        ("蜜月那边也改主意了，北欧太贵了，改成新西兰了", 3.0),
    ]
    assert supersessions(said) == {0: [2]}


def test_a_count_said_again_with_another_number_is_an_update() -> None:
    assert superseded("roughly 120 guests, outdoors if possible.", "We're at 95 guests now.")
    assert superseded("The budget is €60,000 for launch.", "The budget is now €48,000.")
    # money alone is no subject: a price changing leaves a budget standing
    assert not superseded(
        "Updated: the marketing budget is €48,000 ex-VAT.",
        "Updated: the retail price is €179 ex-VAT (was €189).",
    )
    # a date is no count: "23 April" then "11 April" speak of different days
    assert not superseded(
        "The frame is rebooked for delivery on Tuesday 23 April.",
        "The refund was sent on 11 April but the card was cancelled.",
    )


def test_a_change_that_names_only_what_the_older_named_outdates_it() -> None:
    older = "My flight to Reykjavik with Icelandair leaves on 14 March at 07:40."
    assert superseded(older, "oh and the flight moved, it's the 16th now")
    # a name is no such subject: moving to Leeds leaves a sister living there
    assert not superseded("My sister lives in Leeds and works at Asda.", "I moved to Leeds.")


def test_what_is_said_to_be_new_outdates_the_older() -> None:
    older = "My goal is just to finish under 2:10, nothing heroic."
    newer = "I think I could do sub-2 now, maybe even under 1:55. That's my new goal."
    assert split_sentences(newer)[-1].endswith("That's my new goal.")  # one unit
    assert superseded(older, split_sentences(newer)[-1])
    assert not superseded("Otto got the Lisbon job.", "Congratulations on the new job!")


def test_a_named_thing_said_to_be_gone_outdates_what_was_said_of_it() -> None:
    older = "we still drive my old Skoda Fabia, it's making a weird noise"
    assert superseded(older, "we finally got rid of the Skoda.")
    assert surviving_clauses(older, "we finally got rid of the Skoda.") == (
        "it's making a weird noise"
    )
    assert not superseded(older, "my brother drives a Skoda too, he loves it.")


def test_a_new_amount_leaves_the_clauses_that_name_other_things() -> None:
    older = "They're putting Hollins Farm on the market with Fletcher & Rowe, asking £1.2m."
    newer = "Farm update: no offers, so Geoff has dropped the asking to £1.05m."
    assert superseded(older, newer)
    assert surviving_clauses(older, newer) == (
        "They're putting Hollins Farm on the market with Fletcher & Rowe"
    )


def test_a_name_a_day_or_a_common_word_in_common_is_no_subject() -> None:
    """A later statement about the same person, a day that is another week's, or a word
    said all through the span ("ask") outdates nothing."""
    assert not superseded(
        "My mentor Pat from Wrekin Beekeepers came to look at Duchess.",
        "Changed my mind, Pat says resistance to Apivar is showing up in our area.",
    )
    assert not superseded("Mr Okonkwo.", "also Okonkwo messaged, he wants rent on the 28th now")
    assert not superseded(
        "Rotterdam, Sunday 12 April.", "got Adidas Adios Pro 4 instead, did 22 km in them Sunday"
    )
    said = [
        "And there's a £2,000 signing bonus I didn't even ask for.",
        "Can I ask you something?",
        "I will ask Tom.",
        "Did you ask?",
        "One last CV ask: Sophie wants an updated version for Brightwater's HR file.",
    ]
    assert supersessions([(t, float(k)) for k, t in enumerate(said)]) == {}


def test_a_thing_said_in_the_plural_is_the_same_subject() -> None:
    older = "The yoga classes are on Wednesday evenings."
    assert superseded(older, "we've switched yoga class, it's Saturday mornings now")
    assert not superseded("My sister lives in Leeds.", "I moved to Leeds.")  # no plural


def test_a_german_ordinal_date_ends_no_sentence() -> None:
    said = "Die Küche wird am Samstag, 1. März abgebaut. Wir wohnen im 3. Stock."
    assert split_sentences(said) == [
        "Die Küche wird am Samstag, 1. März abgebaut.",
        "Wir wohnen im 3. Stock.",
    ]


def test_a_change_that_replaces_no_value_outdates_nothing() -> None:
    recap = (
        "Your sequence now looks like: start on the 17th of March, strip-out first, "
        "then the kitchen fit in the week of 14 April."
    )
    assert not superseded(recap, "Now waiting on the kitchen fit.")
    assert superseded("The trip to Lisbon is on 5 May.", "The Lisbon trip is cancelled.")


def test_a_replys_recap_outdates_only_what_it_speaks_of() -> None:
    said = [
        ("Booked the asbestos survey for the 9th of February with ClearAir.", 1.0),
        ("Kitchen fitters are booked for the week of 14 April.", 2.0),
        (
            "Your sequence now looks like: start on the 17th of March, asbestos removal "
            "first, then the kitchen fit.",
            3.0,
        ),
        ("The kitchen fitters are now booked for the week of 21 April.", 4.0),
    ]
    assert supersessions(said, replies={2}) == {1: [3]}
    assert 0 in supersessions(said)  # read as the user's, the recap would outdate it


def test_one_statement_may_be_outdated_in_parts_by_several() -> None:
    texts = [
        ("Nimbus retail price €189, warranty 2 years.", 1.0),
        ("The retail price is now €179.", 2.0),
        ("The warranty is now 3 years.", 3.0),
    ]
    assert supersessions(texts) == {0: [1, 2]}
    assert drop_superseded(texts) == {0: 2}


@pytest.mark.parametrize(
    ("older", "newer"),
    [  # a change said in passing shares a word with many statements, not their subject
        (
            "Second hand, from a guy in Drumcondra, 1,150 euro.",
            "I bought fancy hand soap and now I feel like a proper adult.",
        ),
        (
            "I signed up for the Cork half marathon, it's on the 8th of October.",
            "Signed up to a gym in January, it's now basically a donation.",
        ),
        ("Did Ines love the cake on the 21st?", "Somebody brought brownies and now I love them."),
        # one word in common, and nothing stated to replace the date
        ("Due date is 30 August.", "Renee is due any day now, I'm so anxious."),
        # "new" alone is no change said
        ("Otto got the Lisbon job.", "Congratulations on the new job, Jess."),
    ],
)
def test_chat_in_passing_does_not_outdate_a_fact(older: str, newer: str) -> None:
    assert not superseded(older, newer)


def test_only_the_changed_clause_goes() -> None:
    assert (
        surviving_clauses(
            "The budget is $1200 and the trip ends on May 5.", "The budget is now $1500."
        )
        == "the trip ends on May 5."
    )


def test_supersession_compares_only_statements_that_share_a_subject() -> None:
    texts = [(f"Locker L{i} is booked for {i + 2} days.", float(i)) for i in range(200)]
    texts.append(("Locker L7 moved to 30 days.", 1000.0))
    assert drop_superseded(texts) == {7: 200}


def test_the_ledger_deduplicates_and_the_newer_instruction_wins() -> None:
    ledger = Ledger()
    ledger.add("Always answer in English.", order=1)
    ledger.add("Always answer in English.", order=2)
    ledger.add("Use metric units.", order=3)
    ledger.add("Never use metric units, I'm in the US.", order=4)
    assert [e.text for e in ledger.entries()] == [
        "Always answer in English.",
        "Never use metric units, I'm in the US.",
    ]


def test_a_rule_that_drops_one_thing_leaves_the_rules_of_others() -> None:
    ledger = Ledger()
    ledger.add("Which reminds me: write kubectl in full, never the k alias.", order=1)
    ledger.add("Use stern for the logs.", order=2)
    ledger.add("forget stern, just use kubectl logs from now on.", order=3)
    assert [e.text for e in ledger.entries()] == [
        "Which reminds me: write kubectl in full, never the k alias.",
        "forget stern, just use kubectl logs from now on.",
    ]


def test_the_notes_are_a_leaf_of_the_package() -> None:
    """The digest depends on messages and tokens only: no strategy, model, view or index."""
    import subprocess
    import sys

    code = "import kompakt.notes, sys; print(' '.join(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = {m for m in out.stdout.split() if m.startswith("kompakt.")}
    assert loaded <= {
        "kompakt.errors",
        "kompakt.fencing",
        "kompakt.messages",
        "kompakt.repair",  # imported by the package itself: a leaf too (messages only)
        "kompakt._lazy",  # the package's import-on-first-use lookup (importlib only)
        "kompakt.tokens",
        "kompakt.notes",
        "kompakt.notes.digest",
        "kompakt.notes.ledger",
        "kompakt.notes.fitted",
        "kompakt.notes.salience",
        "kompakt.notes.sessions",
        "kompakt.notes.speakers",
        "kompakt.notes.units",
        "kompakt.notes.vocabulary",
    }, loaded


def test_the_other_speaker_of_a_chat_counts_when_specific() -> None:
    """In a chat between two people one of them is the "assistant": what they tell about
    themselves counts when it names something; an assistant's offer of help does not."""
    texts = ["I adopted a puppy named Luna last week.", "I can help you with that."]
    s = Salience.of(texts * 3)
    assert s.score(texts[0], "assistant") > 2 * s.score(texts[1], "assistant")


def test_a_title_does_not_end_a_sentence_and_a_bare_value_keeps_its_gloss() -> None:
    assert split_sentences("Her teacher is Mrs. Okafor. She is patient.") == [
        "Her teacher is Mrs. Okafor.",
        "She is patient.",
    ]
    assert split_sentences("He's fine, Dr. Halvorsen said so.") == [
        "He's fine, Dr. Halvorsen said so."
    ]
    assert split_sentences("1:58:40. Under two hours!") == ["1:58:40. Under two hours!"]
    assert split_sentences("It took long. 1:58:40.") == ["It took long. 1:58:40."]


def test_a_change_said_over_two_sentences_is_one_unit() -> None:
    """A change announced with no value, and the value said after it, are one statement:
    alone, the first says nothing and the second says nothing of what changed."""
    said = "bad news. IND emailed, they moved us. new appointment is Thursday 23 May. ugh"
    assert split_sentences(said) == [
        "bad news.",
        "IND emailed, they moved us. new appointment is Thursday 23 May.",
        "ugh",
    ]
    assert split_sentences("oven moved AGAIN. 2 April now. I could cry")[0] == (
        "oven moved AGAIN. 2 April now."
    )
    booked = "IND confirmed the biometrics appointment! Tuesday 14 May, 10.30, Rotterdam desk."
    assert split_sentences(booked + " we both need to go")[0] == booked
    assert superseded(booked, split_sentences(said)[1])  # "new appointment": the same one
    # what only looks like it stays apart: a mood "now", a change with its value in it
    assert split_sentences("I was so nervous. Now I'm just tired.") == [
        "I was so nervous.",
        "Now I'm just tired.",
    ]
    assert len(split_sentences("We moved it to May 3. 40 guests now.")) == 2


@pytest.mark.parametrize(
    "rule",
    [
        "Also, serious request: no spoilers for Slow Horses.",
        "also one thing for this season, no recordings on Mondays please.",
        "also for the theme tweak: whatever you do, no saxophone.",
        "please no emojis ever in anything I'd send to someone, ok?",
        "Three lines max unless I ask for more, ok?",
        "Ah, y otra cosa: nada de emojis, por favor, que parece un mensaje de mi sobrina",
        "Otra cosa: cuando me pongas las etapas, ponlas siempre en tabla con los km.",
        "Ancora una regola: le date sempre per esteso, scritte in lettere.",
        "le dico come voglio che siano scritti i capitoli: in terza persona.",
        "when you send me flats, send me the actual listing link, not screenshots.",
        "when you send me edits can you send WAV not MP3?",
        "ok so if I ever mention buying another bike, talk me out of it.",
        "E le chiedo una cortesia: non usi la parola 'nostalgia'.",
        "also I really prefer doing all this by email, not phone calls.",
        "Vanaf nu graag altijd de je-vorm.",
        "Gebruik nooit Engelse woorden.",
        "first rule of party club: NOTHING in the family group chat.",
        "Also before I forget: if you send anything about the twins, send it to Hana too.",
    ],
)
def test_a_rule_said_by_naming_what_it_rules_out_or_for_good_in_passing(rule: str) -> None:
    assert is_instruction(rule)


@pytest.mark.parametrize(
    "said",
    [
        "no luck yet, thanks though",
        "No, thanks!",
        "no worries at all, take your time",
        "Llegué tarde, como siempre.",
        "Il treno è sempre in ritardo.",
        "when you get a chance, I'd love to hear about it.",
        "If you send it by Friday, that would be great.",
        "if I ever win the lottery, I'm buying a boat.",
        "Zoals altijd, te laat.",
        "The rule of thumb: 1 litre per hour.",
        "Het regent altijd in Utrecht.",
    ],
)
def test_what_only_looks_like_a_rule_is_none(said: str) -> None:
    assert not is_instruction(said)


@pytest.mark.parametrize(
    "taste",
    [
        "Theo won't eat mushrooms, never has.",
        "Tema comida: a mí el pulpo no me gusta nada, ni en pintura.",
        "Il mio piatto preferito è la parmigiana.",
        "Je déteste le céleri.",
        "Não gosto de coentro.",
        "mum's fave is lemon drizzle.",
        "ik heb echt een hekel aan het woord duurzaam, iedereen roept het.",
        "Ik ben helemaal weg van bakfietsen trouwens.",
        # a habit, an annoyance, a refusal in French, a favourite in Japanese
        "I never run with headphones btw.",
        "the little green hint leaves on these tree sites drive me up the wall.",
        "par contre je veux PAS de carrelage blanc brillant, ça fait hôpital.",
        "花の話なんだけど、白いダリアが一番好き!逆にかすみ草だけは絶対いや。",
    ],
)
def test_a_taste_said_of_someone_else_or_in_another_language_is_one(taste: str) -> None:
    from kompakt.notes.salience import _preference, _read

    assert _preference(_read(taste)) == 1.0


@pytest.mark.parametrize(
    "reaction",
    ["Mi piace come scrive", "Sì, mi piace", "Me encanta esto!", "I never knew that."],
)
def test_a_reaction_is_no_taste(reaction: str) -> None:
    from kompakt.notes.salience import _preference, _read

    assert _preference(_read(reaction)) == 0.0


def test_a_tag_asks_for_a_nod_not_an_answer() -> None:
    assert not is_question("no emojis in anything I send, ok?")
    assert is_question("Is the dentist at 3, or at 4?")


def test_a_key_said_again_with_new_values_outdates_the_older_line() -> None:
    assert superseded("Price: £38 a head (buffet)", "Price: £42 a head, sit-down meal")
    assert superseded("- Date: Saturday 5 October", "- Date: Saturday 12 October")
    # the same values said again with more: a restatement, not a change
    said = "Kyoto: Machiya Hanare Gion, it's a little townhouse, booking code HNR-2291."
    assert not superseded(said, "Kyoto: Machiya Hanare Gion (HNR-2291), Sat 11 - Wed 15 Oct")
    # a timetable's rows are no keys ("11" of "11:15")
    row = "| 11:15–12:00 | Predictive maintenance at scale | Aurora Hall |"
    assert not superseded(row, "| 11:15–12:45 | Workshop: Open timetable data | Room Cedar |")


def test_the_same_value_said_again_is_no_change() -> None:
    """A recap of the current value ("Updated: ... now due 2 April") does not outdate the
    user's own words with that value, nor does a change with no new amount ("has now
    moved twice") outdate the recap; an order number is no new value."""
    assert not superseded(
        "oven moved AGAIN. 2 April now.", "Updated: Bongard (BG-22817) now due 2 April."
    )
    assert not superseded(
        "Updated: Bongard (BG-22817) now due 2 April.",
        "The Bongard (order BG-22817) has now moved twice, and I've planned around each date.",
    )
    assert superseded("Response time is 400 ms.", "Response time is now 250 ms, down from 400 ms.")
    assert superseded("Squat best 120kg.", "Squat best updated: 135kg (up from 120kg).")


def test_a_price_adjusted_in_chinese_outdates_the_older() -> None:
    assert superseded(
        "美式18元，拿铁22元，手冲看豆子。", "牛奶和豆子都涨价了，拿铁我调到25元了，美式不变"
    )


def test_who_changed_their_mind_is_what_changed() -> None:
    said = "nope. alfie changed his mind. now he's a knight. on a wednesday"
    assert split_sentences(said)[1] == "alfie changed his mind. now he's a knight."
    assert superseded("Alfie wants to be the Gruffalo.", split_sentences(said)[1])


def test_a_name_given_is_an_entity_and_only_no_limit_on_its_own() -> None:
    assert entity_signal("It's with a company called Brightwater Analytics.") == 2.0
    assert entity_signal("I called mum about Paris.") == 1.0  # a call, not a name given
    assert constraint_signal("I think I'm the only one who reads the books.") == 0.0
    assert constraint_signal("Mine only work in the left ear now.") == 0.0
    assert constraint_signal("We can spend at most $500.") == 1.0


def test_relevance_in_a_conversation_of_one_unit_is_none() -> None:
    s = Salience.of(["Mrs. Okafor"])  # every word said everywhere: nothing is rare
    assert s.relevance("Mrs. Okafor", s.query("Mrs. Okafor")) == 0.0


def test_a_taste_stated_is_worth_more_than_a_mood() -> None:
    said = ["You know I hate cilantro, it tastes like soap.", "I'm so tired today, ugh."]
    s = Salience.of(said * 3)
    assert s.score(said[0], "user") > s.score(said[1], "user")


def test_a_name_called_at_the_end_is_who_is_spoken_to() -> None:
    assert entity_signal("Plot 14 is my happy place, Maya.") == 0.0
    assert entity_signal("I met Maya in Leeds.") == 1.0


def test_a_rules_reasons_are_no_subject_a_newer_rule_replaces() -> None:
    ledger = Ledger()
    ledger.add(
        "please don't ring me about any of this. I work nights at the hospital.",
        order=1,
        rule="please don't ring me about any of this.",
    )
    ledger.add("From now on, letters by email please, the one at the hospital trust.", order=2)
    assert len(ledger.entries()) == 2
    ledger.add("From now on you can ring me, any time.", order=3)  # the rule itself changed
    assert [e.order for e in ledger.entries()] == [2, 3]


def test_a_question_in_a_chat_needs_no_question_mark() -> None:
    assert is_question("how do I make a CLI flag required with argparse")
    assert is_question("random q — how do I convert a naive datetime to UTC properly")
    assert not is_question("When I ask about libraries, include the version.")
    assert not is_question("how I did it: one step at a time.")


def test_a_chinese_question_needs_no_question_mark() -> None:
    assert is_question("怎么整理衣柜比较好")
    assert is_question("你会下象棋吗")
    assert not is_question("我现在开的是比亚迪海豚，成都充电方便吗")  # a fact asked about
    assert not is_question("我芒果过敏。")


def test_words_shouted_in_capitals_are_no_names() -> None:
    assert entity_signal("I GOT THE JOB.") == 0.0
    assert entity_signal("We moved the API to AWS last week.") == 1.0


def test_the_names_said_everywhere_tell_nothing() -> None:
    """Who a chat is between is named all through it: naming them is no news."""
    chat = [f"Maya, did you see the match {k}?" for k in range(20)]
    s = Salience.of([*chat, "Maya!", "Found a flat in Leith."])
    assert s.score("Found a flat in Leith.", "user") > 2 * s.score("Maya!", "user")


def test_chinese_names_counts_and_tastes_are_signals() -> None:
    """No capital marks a name in Chinese, and counts are often written in words: "叫"
    gives a name, "五岁" and "十楼" are counts with their unit, "最好" states a taste."""
    assert entity_signal("新公司叫星河数据，在滨江那边。") == 1.0
    assert entity_signal("我叫他明天再来") == 0.0  # "叫" as "tell to"
    assert value_signal("猫叫豆包，橘猫，五岁了") == 1.0
    assert value_signal("十楼以上就算了吧") == 1.0
    assert value_signal("今天好累") == 0.0
    # a count with "多" and its unit; "一只", "一个" say "a", no count
    assert value_signal("第一天卖了两百多杯") == 1.0
    assert value_signal("来了八十多个人") == 1.0
    assert value_signal("超可爱，小小一只") == 0.0
    # a name in quotes or in Latin letters
    assert entity_signal("定了！叫「半山咖啡」，在玉林路") == 1.0
    assert entity_signal("找到Brunswick一个单间") == 1.0
    s = Salience.of(["朝南的最好", "今天好累", "今天好热"])
    assert s.score("朝南的最好", "user") > s.score("今天好累", "user")


# -- small talk, guesses and leaving; names after a title; chats' spelling; Japanese ------


def test_small_talk_in_everyday_words_scores_below_a_specific_fact() -> None:
    """Rarity within the chat cannot tell them apart (each word is said once here); the
    words of everyday English can: the first names nothing in particular."""
    said = [
        "I have been watching a lot of old movies this week.",
        "The pumpkin weighed 212 kilos.",
        "My tortoise Sheldon is thirty-one.",
    ]
    s = Salience.of(said)
    small_talk, pumpkin, tortoise = (s.score(t, "user") for t in said)
    assert small_talk < 0.6 * min(pumpkin, tortoise)


def test_a_preference_in_everyday_words_is_no_small_talk() -> None:
    said = ["I hate surprise parties.", "I have been watching a lot of old movies this week."]
    s = Salience.of(said)
    assert s.score(said[0], "user") > 1.5 * s.score(said[1], "user")


def test_must_that_guesses_is_no_constraint() -> None:
    assert constraint_signal("Biscuit must be thrilled.") == 0.0
    assert constraint_signal("That must have been scary.") == 0.0
    assert constraint_signal("You must be so tired!") == 0.0
    assert constraint_signal("The report must be under two pages.") == 1.0
    assert constraint_signal("Guests must be seated by 7pm.") == 1.0


def test_leaving_the_chat_says_little_going_somewhere_says_much() -> None:
    said = ["Anyway, gotta go pick up Lila from a playdate.", "I have to go to Berlin on May 3."]
    s = Salience.of([*said, "Lila loved the zoo."])
    leaving, trip = (s.score(t, "user") for t in said)
    assert leaving < 0.5 * trip


def test_a_name_after_a_title_is_a_name() -> None:
    assert names_in("Her teacher is a patient woman, Mrs. Okafor, who deserves a medal.") == {
        "okafor"
    }
    assert names_in("I saw Dr. Halvorsen about the cough.") == {"halvorsen"}


def test_a_chats_spelling_of_small_words_names_no_subject() -> None:
    """'u' is shared by most of what a person who types so says: a rule about emojis is
    not replaced by a later rule about checklists for it."""
    ledger = Ledger()
    ledger.add("first thing pls no emojis in anything u write for me, i find them cringe", order=1)
    ledger.add("also can u always put a tiny checklist at the bottom, i get lost", order=2)
    assert len(ledger.entries()) == 2


def test_always_has_been_is_told_not_asked() -> None:
    assert not is_instruction("my dad supports Leeds, always has been")


def test_an_answer_that_says_from_now_on_acknowledges_a_rule() -> None:
    ack = acknowledged_rule("Yes, one question at a time from now on. I will wait for you.")
    assert {"question", "time"} <= ack
    assert acknowledged_rule("Yes, the exam is on Thursday 21 March.") == frozenset()


@pytest.mark.parametrize(
    "text",
    [
        "これからの回答はいつも最後に一行でまとめを入れてください。",
        "それと、金額は必ず円で書いてください。",
        "絵文字は使わないでください。",
        # when ..., a format; a form of speech; a limit
        "ねえ、長い説明のときは箇条書きにしてもらえる?",
        "あ、日付は令和で書かれると一瞬わかんないから西暦でお願い笑",
        "タメ口で話してほしいな、友達に相談してる感じで",
        "多すぎると決められないから、選択肢は3つまでにして!",
    ],
)
def test_japanese_standing_instructions(text: str) -> None:
    assert is_instruction(text)


def test_japanese_one_off_request_is_no_rule() -> None:
    assert not is_instruction("この書類を明日までに確認してください。")


def test_a_japanese_acknowledgement_names_the_rule() -> None:
    ack = acknowledged_rule("承知しました。これからは、回答の最後に必ず一行のまとめを入れます。")
    assert {"一行", "最後"} <= ack
    assert acknowledged_rule("承知しました。明日の十時に確認します。") == frozenset()


def test_the_shipped_common_words_are_the_tokenizers() -> None:
    """`common_words.txt` is what `scripts/common_words.py` derives from the offline
    cl100k vocabulary: regenerating it gives the same list."""
    import importlib.util
    from importlib.resources import files
    from pathlib import Path

    script = Path(__file__).parent.parent / "scripts" / "common_words.py"
    spec = importlib.util.spec_from_file_location("common_words", script)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    shipped = files("kompakt.notes").joinpath("common_words.txt").read_text(encoding="utf-8")
    assert shipped.split() == module.common_words()


def test_the_tastes_of_someone_looked_after_are_preferences() -> None:
    said = [
        "he can't stand fish pie, he says it's hospital food",
        "my dad hates onions in anything",
        "It sounds like a cat being stepped on, but she loves it so we're committed.",
    ]
    s = Salience.of(said)
    pie, onions, violin = (s.score(t, "user") for t in said)
    assert min(pie, onions) > violin  # "she loves it": a reaction, not a taste


def test_japanese_small_talk_is_filler_and_names_are_entities() -> None:
    assert is_filler("なるほど、そういうことなんですね。")
    assert is_filler("はい、そういうことです。")
    assert not is_filler("はい、8月27日に出発します。")
    assert entity_signal("ミラーさん一家で、バーナビーに住んでいるそうです。") >= 1
    assert entity_signal("国際交流課の田中先生に聞きました。") >= 1
    assert entity_signal("今日、大学の図書館で本を借りてきました。") == 0


def test_who_made_a_change_is_not_what_changed() -> None:
    """ "Dr Shah changed his bisoprolol": the dose changed, not who the GP is."""
    gp = "his GP is Dr Anand Shah at Elmwood Surgery."
    assert not superseded(gp, "Dr Shah changed his bisoprolol to 3.75mg.")
    assert superseded(
        "He takes bisoprolol 2.5mg in the morning.", "Dr Shah changed his bisoprolol to 3.75mg."
    )
    assert superseded(
        "The new oven is due on 21 March.", "Thermobake moved the oven delivery to 2 April."
    )


def test_a_change_that_says_no_value_leaves_the_value_current() -> None:
    """ "The delivery has moved again" says no date: the last date said stays current
    (the next message will say the new one)."""
    older = "The Bongard oven delivery is due on 21 March."
    assert not superseded(older, "Annoying, the Bongard oven delivery has moved again.")
    assert superseded(older, "The Bongard oven delivery has moved to 2 April.")
    assert superseded("We use Redis 7.2 for the cache.", "We dropped Redis last week.")


def test_dont_with_that_is_about_what_was_just_said() -> None:
    assert not is_instruction("are you a cat person or a dog person, wait, don't answer that")
    assert not is_instruction("Don't worry about it")
    assert is_instruction("Please don't do that again.")
    assert is_instruction("never mention it again")
    assert is_instruction("don't use emojis")


def test_idioms_are_no_rules_nor_tastes() -> None:
    assert not is_instruction("Thanks for listening, as always.")
    assert is_instruction("as always, keep it short please")
    from kompakt.notes.salience import _preference, _read

    assert _preference(_read("Some Sundays the couch wins, I'm not going to lie.")) == 0
    assert _preference(_read("I'm not going on roller coasters.")) == 1


def test_a_move_outdates_where_someone_lived() -> None:
    """ "I'm in Columbus" and "we're moving to Pittsburgh" share no word; a move still
    says where home is now."""
    texts = [
        ("My car squeals when it's cold. I'm in Columbus, so mornings are cool.", 1.0),
        ("I love tea.", 2.0),
        ("We're moving to Pittsburgh at the end of the month.", 3.0),
    ]
    assert supersessions(texts) == {0: [2]}
    assert supersessions(texts[:2]) == {}


def test_an_acknowledgement_alone_acknowledges_no_rule() -> None:
    """ "Noted." alone, then what the reply goes on to: nothing was asked for good."""
    reply = "Noted. A generic inbox at this stage isn't disqualifying, but chase them."
    assert acknowledged_rule(reply) == frozenset()
    said = "Noted: Dr. Nwosu — vegan; Yuki Tanaka — no shellfish. I'll brief the caterer."
    assert {"nwosu", "vegan", "shellfish"} <= acknowledged_rule(said)
