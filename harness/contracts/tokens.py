"""Local tokenizers: how many input tokens a rendered prompt takes, without a provider.

The verifier prefers the provider's own counting endpoint (``count_tokens``); when a
provider has none (OpenAI-style APIs), it uses a local tokenizer chosen by name.

``approx-v1`` is a deterministic approximation that errs on the side of counting *more*
than real BPE tokenizers, so a prompt it accepts fits in practice:

- each run of ASCII letters/digits/underscore counts ``ceil(len / 4)`` tokens;
- each run of other word characters (accented, CJK, ...) counts one token per character;
- every other non-space character counts one token;
- each message costs 4 more tokens (role and separators), and the request 3 more
  (the reply's priming), following OpenAI's published accounting for chat models.

It never changes: a new approximation gets a new name, so stored counts stay comparable.
"""

from __future__ import annotations

import functools
import math
import re
from typing import Protocol

from harness.contracts.template import RenderedPrompt

PER_MESSAGE_TOKENS = 4
PER_REQUEST_TOKENS = 3
DEFAULT_TOKENIZER = "approx-v1"

_PIECES = re.compile(r"[A-Za-z0-9_]+|[^\W\d_A-Za-z]+|\d+|\S")


class BaseTokenizer(Protocol):
    """Counts a rendered prompt's input tokens when the provider has no counting endpoint.

    ``name`` is recorded as the counter of each `PromptCount`, so a verdict says whose
    count it relied on.
    """

    name: str

    def count(self, prompt: RenderedPrompt, kind: str) -> int:
        """Input tokens of ``prompt`` as sent to a provider of ``kind``."""
        ...


@functools.lru_cache(maxsize=1024)  # system prompts repeat across samples
def approx_text_tokens(text: str) -> int:
    total = 0
    for piece in _PIECES.findall(text):
        if piece.isascii() and (piece[0].isalnum() or piece[0] == "_"):
            total += math.ceil(len(piece) / 4)
        else:
            total += len(piece)
    return total


class ApproxTokenizer:
    """``approx-v1``: see the module docstring."""

    name = "approx-v1"

    def count(self, prompt: RenderedPrompt, kind: str) -> int:
        wire = prompt.for_kind(kind)
        total = PER_REQUEST_TOKENS
        if wire.get("system"):
            total += PER_MESSAGE_TOKENS + approx_text_tokens(wire["system"])
        for message in wire["messages"]:
            total += PER_MESSAGE_TOKENS + approx_text_tokens(message["content"])
        return total


TOKENIZERS: dict[str, type[BaseTokenizer]] = {ApproxTokenizer.name: ApproxTokenizer}


def get_tokenizer(name: str = DEFAULT_TOKENIZER) -> BaseTokenizer:
    try:
        return TOKENIZERS[name]()
    except KeyError:
        raise ValueError(
            f"unknown tokenizer {name!r}; known: {', '.join(sorted(TOKENIZERS))}"
        ) from None
