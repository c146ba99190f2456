"""Violations and their witnesses as text a person reads: no Python reprs (``None``,
``{'t': ...}``), one line per history entry, and violations that say the same thing
printed once with a count.

Used by every report that prints a finding (the console, JUnit bodies, the HTML pages of
`check` and `simulate`), so they all read alike.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

_OPERATION_FIELDS = ("t", "i", "process", "type", "op")
_EVENT_FIELDS = ("t", "kind", "job", "attempt", "actor", "detail")
_LEDGER_FIELDS = ("t", "attempt", "behaviour", "provider_kind")


def value_text(value: Any) -> str:
    """A value as a reader writes it: words bare, numbers short, lists and mappings as
    compact JSON, nothing for "not set"."""
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, str | int):
        return str(value)
    try:
        return json.dumps(value, separators=(", ", ": "), sort_keys=True, default=str)
    except (TypeError, ValueError):
        return str(value)


def _pairs(entry: Mapping[str, Any], skip: Iterable[str]) -> str:
    skip = set(skip)
    return " ".join(
        f"{k}={value_text(v)}" for k, v in sorted(entry.items()) if k not in skip and v is not None
    )


def describe_entry(entry: Mapping[str, Any]) -> str:
    """One history entry (an event, an operation or an execution) as one line."""
    t = entry.get("t")
    head = f"t={t:g}" if isinstance(t, int | float) and not isinstance(t, bool) else "t=?"
    if "kind" in entry and "job" in entry and "process" not in entry:  # an event
        detail = entry.get("detail")
        if not isinstance(detail, Mapping):
            detail = {}
        who = entry.get("attempt") or entry["job"]
        by = f" by {entry['actor']}" if entry.get("actor") else ""
        rest = _pairs(detail, ())
        return f"{head} event {entry['kind']} {who}{by}" + (f" ({rest})" if rest else "")
    if "process" in entry:  # an operation
        rest = _pairs(entry, _OPERATION_FIELDS)
        line = f"{head} {entry['process']} {entry.get('type', '?')} {entry.get('op', '?')}"
        return line + (f" {rest}" if rest else "")
    if "behaviour" in entry:  # an execution the fakes recorded
        who = f"{entry.get('provider_kind', '?')} for {entry.get('attempt') or 'no attempt'}"
        rest = _pairs(entry, _LEDGER_FIELDS)
        return f"{head} execution {who} ({entry['behaviour']}" + (f", {rest})" if rest else ")")
    rest = _pairs(entry, ("t",))
    return f"{head} {rest}" if rest else head


@dataclass
class FindingGroup:
    """Violations that say the same thing (one invariant, one message), shown once: the
    first one's witness, how many there were, and which jobs and episodes they came from."""

    invariant: str
    message: str
    first: Mapping[str, Any]
    jobs: list[str] = field(default_factory=list)
    episodes: list[Any] = field(default_factory=list)
    count: int = 0

    @property
    def witness(self) -> list[str]:
        return [describe_entry(e) for e in self.first.get("witness") or ()]

    def headline(self) -> str:
        jobs = sorted({j for j in self.jobs if j})
        where = ""
        if len(jobs) == 1:
            where = f" job {jobs[0]}"
        elif jobs:
            shown = ", ".join(jobs[:5]) + (f" and {len(jobs) - 5} more" if len(jobs) > 5 else "")
            where = f" jobs {shown}"
        times = f" (and {self.count - 1} more like it)" if self.count > 1 else ""
        return f"{self.invariant}{where}: {self.message}{times}"


_COPY = re.compile(r"~\d+")
"""The suffix that tells a job's copies apart (`a~10`: the 10th job made for alias a)."""


def _as_dict(finding: Any) -> Mapping[str, Any]:
    return finding if isinstance(finding, Mapping) else finding.to_dict()


def grouped(findings: Iterable[Any]) -> list[FindingGroup]:
    """Findings (`Finding`s or their dicts) grouped by invariant and message (a job's
    copies, `a~10` and `a~11`, count as one), in the order each first appears."""
    groups: dict[tuple[str, str], FindingGroup] = {}
    for finding in findings:
        data = _as_dict(finding)
        message = str(data["message"])
        if data.get("job"):  # the same violation on another job says the same thing
            message = re.sub(rf"\b{re.escape(str(data['job']))}\b", "JOB", message)
        key = (str(data["invariant"]), _COPY.sub("~N", message))
        group = groups.get(key)
        if group is None:
            group = groups[key] = FindingGroup(
                invariant=key[0], message=str(data["message"]), first=data
            )
        group.count += 1
        group.jobs.append(data.get("job") or "")
        if "episode" in data:
            group.episodes.append(data["episode"])
    return list(groups.values())


def finding_blocks(findings: Iterable[Any], *, indent: str = "    ") -> list[str]:
    """One text block per group: its headline, then its first witness, one entry a line."""
    return [
        "\n".join([group.headline(), *(f"{indent}witness {line}" for line in group.witness)])
        for group in grouped(findings)
    ]
