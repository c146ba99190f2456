"""The API's one JSON reader and its one header reader: strict, and the same for every
route that takes a body.

What a body may be (each refusal is a problem type of `harness.api.problems`):

- sent as JSON: `Content-Type: application/json` (or `application/<x>+json`), else 415;
- UTF-8 JSON text (RFC 8259) with no duplicate member names, else 400 (malformed);
- within what every database and most clients read back exactly, else 422:
  integers within the signed 64-bit range (`MAX_JSON_INTEGER`), other numbers finite
  IEEE 754 doubles (`1e400` is refused, not rounded to infinity), no `NaN`/`Infinity`,
  no NUL character and no lone surrogate in any string or member name, and nesting no
  deeper than `MAX_JSON_DEPTH`.

Malformed beats too deep: a truncated body of ten thousand `[` is a 400, a well-formed
one nested that deep a 422. The checks cost the hot path one `json.loads` with hooks and
one walk of the parsed value; the slow paths (very deep text, escapes of NUL or
surrogates) run only when the text contains them.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from harness.api.problems import (
    INVALID_BODY,
    MALFORMED_JSON,
    MALFORMED_KEY,
    MISSING_KEY,
    UNSUPPORTED_MEDIA_TYPE,
    HttpProblem,
)
from harness.engine import check_key
from harness.errors import InvalidIntent

MAX_JSON_DEPTH = 32
"""Arrays and objects nested deeper than this are refused (422)."""
MAX_JSON_INTEGER = 2**63 - 1
"""Integers beyond ±this are refused (422): what a BIGINT, a Go int64 or a Java long
holds; PostgreSQL's JSONB keeps more, but a client reading the job back may not."""
MAX_NUMBER_CHARS = 400
"""A number literal longer than this is refused before it is converted at all (Python's
own limit for int conversion is 4,300 digits, and would answer 500)."""

_JSON_MEDIA = re.compile(r"application/(?:[\w.+-]+\+)?json", re.IGNORECASE)
_SUSPECT_ESCAPE = re.compile(rb"\\u(?:0000|[dD][89a-fA-F])")


def _invalid(detail: str) -> HttpProblem:
    return HttpProblem(INVALID_BODY, detail)


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    made = dict(pairs)
    if len(made) != len(pairs):
        seen: set[str] = set()
        for name, _ in pairs:
            if name in seen:
                raise HttpProblem(MALFORMED_JSON, f"the body repeats the member {name[:80]!r}")
            seen.add(name)
    return made


def _integer(text: str) -> int:
    if len(text) > MAX_NUMBER_CHARS:
        raise _invalid(f"a number is longer than {MAX_NUMBER_CHARS} characters")
    value = int(text)
    if not -MAX_JSON_INTEGER <= value <= MAX_JSON_INTEGER:
        raise _invalid("an integer is beyond the signed 64-bit range")
    return value


def _float(text: str) -> float:
    if len(text) > MAX_NUMBER_CHARS:
        raise _invalid(f"a number is longer than {MAX_NUMBER_CHARS} characters")
    value = float(text)
    if not math.isfinite(value):
        raise _invalid(f"the number {text[:40]} is beyond a double's range")
    return value


def _constant(name: str) -> Any:
    raise _invalid(f"{name} is not JSON")


_DECODER = json.JSONDecoder(
    object_pairs_hook=_object, parse_int=_integer, parse_float=_float, parse_constant=_constant
)


def read_json(raw: bytes) -> Any:
    """The value of a JSON body, or an HttpProblem (400 malformed, 422 out of bounds)."""
    try:
        text = raw.decode("utf-8")
        value = _DECODER.decode(text)
    except HttpProblem as refused:  # raised by the decoder's hooks
        raise refused.with_traceback(None) from None
    except RecursionError:
        if not well_formed(text):
            raise HttpProblem(MALFORMED_JSON, "the body is not JSON") from None
        raise HttpProblem(
            INVALID_BODY, f"the body is nested deeper than {MAX_JSON_DEPTH} levels"
        ) from None
    except UnicodeDecodeError as exc:
        raise HttpProblem(MALFORMED_JSON, f"the body is not UTF-8: {exc.reason}") from None
    except json.JSONDecodeError as exc:
        raise HttpProblem(MALFORMED_JSON, f"the body is not JSON: {exc}") from None
    _check_value(value, strings=_SUSPECT_ESCAPE.search(raw) is not None)
    return value


def _check_value(value: Any, *, strings: bool) -> None:
    """Depth, and (when the text escapes NUL or a surrogate) every string, iteratively."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            if depth > MAX_JSON_DEPTH:
                raise HttpProblem(
                    INVALID_BODY, f"the body is nested deeper than {MAX_JSON_DEPTH} levels"
                )
            stack.extend((v, depth + 1) for v in item.values())
            if strings:
                stack.extend((k, depth) for k in item)
        elif isinstance(item, list):
            if depth > MAX_JSON_DEPTH:
                raise HttpProblem(
                    INVALID_BODY, f"the body is nested deeper than {MAX_JSON_DEPTH} levels"
                )
            stack.extend((v, depth + 1) for v in item)
        elif strings and isinstance(item, str):
            _check_string(item)


def _check_string(text: str) -> None:
    if "\x00" in text:
        raise HttpProblem(INVALID_BODY, "strings may not contain NUL (\\u0000)")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise HttpProblem(
            INVALID_BODY, "strings must be valid Unicode (no lone surrogates)"
        ) from None


# Well-formedness without recursion, for text too deep for the C decoder ----------------

_TOKEN = re.compile(
    r"""\s*(?:
      (?P<open>[\[{]) | (?P<close>[\]}]) | (?P<comma>,) | (?P<colon>:)
    | (?P<string>"(?:[^"\\\x00-\x1f]|\\["\\/bfnrt]|\\u[0-9a-fA-F]{4})*")
    | (?P<scalar>-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?|true|false|null)
    )""",
    re.VERBOSE,
)


def well_formed(text: str) -> bool:
    """Is `text` one JSON value (RFC 8259), whatever its depth? A small pushdown
    automaton: `expect` is what may come next, `stack` the open containers."""
    stack: list[str] = []
    expect = "value"  # value | value_or_close | key | key_or_close | colon | comma_or_close
    position, end = 0, len(text)
    while True:
        match = _TOKEN.match(text, position)
        if match is None:
            return text[position:].strip() == "" and not stack and expect == "done"
        position = match.end()
        kind = match.lastgroup
        token = match.group(kind) if kind else ""
        expect = _step(stack, expect, kind, token)
        if expect == "error":
            return False
        if position >= end:
            return not stack and expect == "done"


_VALUE_STARTS = frozenset({"value", "value_or_close"})
_CLOSERS = {"[": "]", "{": "}"}


def _step(stack: list[str], expect: str, kind: str | None, token: str) -> str:
    """What may come after `token` (of `kind`) when `expect` was wanted; "error" if the
    token may not come here."""
    if kind == "open" and expect in _VALUE_STARTS:
        stack.append(token)
        return "key_or_close" if token == "{" else "value_or_close"
    if kind == "close":
        return _close(stack, expect, token)
    if kind in ("string", "scalar") and expect in _VALUE_STARTS:
        return "comma_or_close" if stack else "done"
    if kind == "comma" and expect == "comma_or_close":
        return "key" if stack[-1] == "{" else "value"
    if (kind, expect) in (("string", "key"), ("string", "key_or_close")):
        return "colon"
    return "value" if (kind, expect) == ("colon", "colon") else "error"


def _close(stack: list[str], expect: str, token: str) -> str:
    allowed = {"]": ("comma_or_close", "value_or_close"), "}": ("comma_or_close", "key_or_close")}
    if not stack or _CLOSERS[stack[-1]] != token or expect not in allowed[token]:
        return "error"
    stack.pop()
    return "comma_or_close" if stack else "done"


# Media type and headers ---------------------------------------------------------------


def check_media_type(content_type: str | None) -> None:
    """415 unless the body is declared as JSON (any parameters, e.g. charset, allowed)."""
    media = (content_type or "").split(";", 1)[0].strip()
    if not _JSON_MEDIA.fullmatch(media):
        shown = f"{media!r}" if media else "none"
        raise HttpProblem(
            UNSUPPORTED_MEDIA_TYPE,
            f"send the body as Content-Type: application/json (got {shown})",
        )


def one_idempotency_key(values: list[str]) -> str:
    """The request's one Idempotency-Key: 400 when it is missing, sent more than once,
    or not 1 to 255 visible ASCII characters."""
    if not values:
        raise HttpProblem(MISSING_KEY, "every job-creating request needs an Idempotency-Key header")
    if len(values) > 1:
        raise HttpProblem(MALFORMED_KEY, "send exactly one Idempotency-Key header")
    try:
        return check_key(values[0])
    except InvalidIntent as exc:
        raise HttpProblem(MALFORMED_KEY, exc.message) from None
