"""The W3C Trace Context `traceparent` header, read at the edge (pure).

https://www.w3.org/TR/trace-context/#traceparent-header: `VERSION-TRACEID-PARENTID-FLAGS`
in lower-case hex; a value that does not parse is ignored, as the recommendation says (the
request goes on, it only starts a trace of its own)."""

from __future__ import annotations

import re

_TRACEPARENT = re.compile(r"([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?")


def trace_parent(value: str | None) -> str | None:
    """`value` as the caller's trace parent (version 00 form), or None when it is absent or
    not a valid `traceparent`: version ff, an all-zero trace or parent id, a later
    version's extra fields on version 00."""
    if value is None:
        return None
    m = _TRACEPARENT.fullmatch(value.strip())
    if m is None:
        return None
    version, trace_id, parent_id, flags, extra = m.groups()
    if version == "ff" or (version == "00" and extra):
        return None
    if trace_id == "0" * 32 or parent_id == "0" * 16:
        return None
    return f"00-{trace_id}-{parent_id}-{flags}"
