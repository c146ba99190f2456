"""Plausible log-probabilities for a fake answer (OpenAI ``logprobs: true``).

Each token of the text gets a log-probability in [-2, 0) and, when ``top_logprobs`` is
asked for, that many alternatives with lower ones (the token itself first), all derived
from the token and its position, so the same answer has the same logprobs on every run.
Tokens join back to the text (leading spaces belong to the token after them).
"""

from __future__ import annotations

import hashlib
import re
from typing import Any

_PIECE = re.compile(r"\s*\w+|\s*[^\w\s]|\s+$")
_ALTERNATIVES = (" the", " a", ".", ",", " and", " of", " to", " is", " fake", " it")


def _logprob(token: str, position: int) -> float:
    digest = hashlib.blake2b(f"{position}\0{token}".encode(), digest_size=4).digest()
    return -round(2 * int.from_bytes(digest, "big") / 2**32, 6) - 1e-6


def _entry(token: str, logprob: float) -> dict[str, Any]:
    return {"token": token, "logprob": logprob, "bytes": list(token.encode())}


def logprobs(text: str, top: int, *, start: int = 0) -> dict[str, Any]:
    """The ``choice.logprobs`` object for `text`; `start` numbers its first token (for
    stream deltas, the tokens sent before)."""
    content = []
    for position, token in enumerate(_PIECE.findall(text), start):
        first = _logprob(token, position)
        others = [t for t in _ALTERNATIVES if t != token][: max(0, top - 1)]
        top_list = [_entry(token, first)] if top else []
        top_list += [_entry(t, round(first - 0.5 * (k + 1), 6)) for k, t in enumerate(others)]
        content.append({**_entry(token, first), "top_logprobs": top_list})
    return {"content": content, "refusal": None}


def token_count(text: str) -> int:
    return len(_PIECE.findall(text))
