"""The fakes' tokenizer: deterministic, cheap, and the same for usage and count_tokens."""

from __future__ import annotations

import re
from collections.abc import Iterable

_TOKEN = re.compile(r"\w+|[^\w\s]")

MESSAGE_OVERHEAD = 3
"""Tokens a message costs beyond its text (role and separators), as real tokenizers do."""


def count_tokens(text: str) -> int:
    return len(_TOKEN.findall(text))


def count_prompt_tokens(texts: Iterable[str]) -> int:
    return sum(count_tokens(t) + MESSAGE_OVERHEAD for t in texts)


def truncate_to_tokens(text: str, limit: int) -> str:
    """The prefix of `text` holding its first `limit` tokens (a max_tokens cut)."""
    for i, match in enumerate(_TOKEN.finditer(text)):
        if i + 1 == limit:
            return text[: match.end()]
    return text
