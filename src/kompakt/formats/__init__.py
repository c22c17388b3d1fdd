"""Reading and writing conversations in every format kompakt speaks.

`load(path)` reads a file, `loads(content)` parses text, bytes, a dict or a list.
Formats: ``openai`` (chat completions), ``anthropic`` (Messages), ``responses`` (OpenAI
Responses items), ``gemini`` (``contents`` / ``parts``), ``jsonl`` (one message a line),
``mini-swe-agent`` (``*.traj.json``) and ``swe-agent`` (``*.traj``).
Loading then dumping in the same format gives the input back, unknown provider fields
included; ``dump(..., provider=True)`` writes only what the provider accepts.

>>> from kompakt.formats import loads, dump
>>> conv = loads([{"role": "user", "content": "hi", "provider_specific_fields": None}])
>>> dump(conv)
[{'role': 'user', 'content': 'hi', 'provider_specific_fields': None}]
>>> dump(conv, provider=True)
[{'role': 'user', 'content': 'hi'}]
"""

from __future__ import annotations

from kompakt.formats.conversation import Conversation
from kompakt.formats.native import message_from_dict, message_to_dict
from kompakt.formats.registry import FORMATS, detect_format, dump, load, loads, to_dicts

__all__ = [
    "FORMATS",
    "Conversation",
    "detect_format",
    "dump",
    "load",
    "loads",
    "message_from_dict",
    "message_to_dict",
    "to_dicts",
]
