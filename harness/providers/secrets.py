"""API keys as values that never print: a repr, str or log line shows ``***``.

A provider's error text (and, rarely, an answer) may echo the key it was sent, and
providers rarely echo it whole: OpenAI answers a wrong key with
``Incorrect API key provided: sk-proj-********abcd``, gateways and proxies write
``sk-ab...wxyz`` or ``sk-abc1…``, a debug line may carry the key's first characters
glued to something else. `Secret.redact` masks each of these as a whole word:

- the key itself, wherever it stands (a key shorter than `MIN_RUN` only as a word
  of its own: a two-letter test key must not mask every word holding those letters);
- a word (a run of key characters and mask marks: ``*``, ``...``, ``…``) that holds
  `MIN_RUN` consecutive characters of the key anywhere in it;
- a word with a mask mark whose visible piece is the key's first or last
  `MIN_EDGE` (or more) characters: the shape of a deliberately shortened key.

Neither counts the vendor's prefix alone (``sk-``, ``sk-proj-``, ``sk-ant-api03-``:
short lower-case segments, at most three and half the key), which every key of that
vendor shares and which text about keys names: a run or an edge must reach past it.

Ordinary text keeps every word: a word is masked only for carrying `MIN_RUN`
characters of the key in order (a random key's run of eight does not turn up in prose
by accident), or for being a shortened key's visible edge beside a mask.
"""

from __future__ import annotations

import re

MASK = "***"
MIN_RUN = 8
"""Consecutive characters of the key that make a word an echo of it."""
MIN_EDGE = 4
"""The key's first or last characters that make a word with a mask mark an echo of it
(OpenAI shows the last four)."""

_WORD = re.compile(r"(?:[A-Za-z0-9_\-]|\*|\.{2,}|…)+")
_MARK = re.compile(r"\*+|\.{2,}|…")
_SEGMENT = re.compile(r"[a-z0-9]{1,8}[-_]")


class Secret:
    """Holds a credential; `reveal()` is the only way out, used when building a request."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def reveal(self) -> str:
        return self._value

    def redact(self, text: str) -> str:
        """`text` with every echo of the secret masked: the whole key, and every word
        holding a run or a shortened form of it (see the module)."""
        if not self._value:
            return text
        if len(self._value) >= MIN_RUN:
            text = text.replace(self._value, MASK)
        public = len(vendor_prefix(self._value))
        return _WORD.sub(
            lambda word: MASK if self._echoed(word.group(), public) else word.group(), text
        )

    def _echoed(self, word: str, public: int) -> bool:
        """Whether `word` shows the key or part of it beyond its first `public`
        characters, the vendor's prefix (see the module)."""
        key = self._value
        pieces = [piece for piece in _MARK.split(word) if piece]
        marked = pieces != [word]
        for piece in pieces:
            if piece == key or _shares_run(piece, key[max(0, public - MIN_RUN + 1) :]):
                return True
            first = len(piece) > public and key.startswith(piece)
            if marked and len(piece) >= MIN_EDGE and (first or key.endswith(piece)):
                return True
        return False

    def __bool__(self) -> bool:
        return bool(self._value)

    def __repr__(self) -> str:
        return "Secret('***')"

    __str__ = __repr__

    def __reduce__(self) -> str:  # never returns: raises
        raise TypeError("a Secret is not serialisable")


def vendor_prefix(key: str) -> str:
    """The prefix every key of the vendor shares (``sk-proj-``): up to three short
    lower-case segments, within the key's first half (see the module)."""
    prefix = ""
    for _ in range(3):
        found = _SEGMENT.match(key, len(prefix))
        if found is None or len(prefix) + len(found.group()) > len(key) // 2:
            break
        prefix += found.group()
    return prefix


def _shares_run(piece: str, key: str) -> bool:
    """Whether `piece` holds `MIN_RUN` consecutive characters of `key`."""
    return any(piece[i : i + MIN_RUN] in key for i in range(len(piece) - MIN_RUN + 1))
