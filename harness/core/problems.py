"""Problems found in a file a person wrote (a scenario, a contract, a probe): each one
located at a line and a field, all of them collected in one pass so one run names every
mistake, and a did-you-mean for a misspelt key or name.

Pure: the readers (YAML with line numbers, JSON Schema) live with each format; this
module only holds what they share, so every format reports its problems the same way.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

SUGGESTION_CUTOFF = 0.6
"""How alike (difflib's ratio) a word must be to a known one to be suggested."""


def did_you_mean(word: object, choices: Iterable[str]) -> str:
    """``"; did you mean 'latency'?"`` for the known word closest to `word`, or ``""``."""
    if not isinstance(word, str):
        return ""
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=SUGGESTION_CUTOFF)
    return f"; did you mean {close[0]!r}?" if close else ""


def unknown(kind: str, word: object, choices: Iterable[str]) -> str:
    """``"unknown KIND 'x'; did you mean 'y'?"``, listing the choices when none is close
    and there are few enough to read."""
    choices = sorted(choices)
    hint = did_you_mean(word, choices)
    if not hint and 0 < len(choices) <= 12:
        hint = f" (one of: {', '.join(choices)})"
    return f"unknown {kind} {word!r}{hint}"


@dataclass(frozen=True, order=True)
class Problem:
    """One mistake in one file. ``str()`` is ``FILE:LINE: FIELD: message``, the form
    editors and CI annotations jump to; `line` is None when the place is not known."""

    file: str
    line: int | None
    field: str
    message: str

    def __str__(self) -> str:
        where = self.file if self.line is None else f"{self.file}:{self.line}"
        return (
            f"{where}: {self.field}: {self.message}" if self.field else f"{where}: {self.message}"
        )


@dataclass
class Problems:
    """The problems of one or more files, collected while reading them; a reader adds to
    it instead of raising at the first, and the caller raises once with all of them."""

    items: list[Problem] = field(default_factory=list)

    def add(self, file: str, line: int | None, field: str, message: str) -> None:
        problem = Problem(file, line, field, message)
        if problem not in self.items:  # two checks may find one mistake
            self.items.append(problem)

    def extend(self, problems: Iterable[Problem]) -> None:
        for problem in problems:
            self.add(problem.file, problem.line, problem.field, problem.message)

    def __bool__(self) -> bool:
        return bool(self.items)

    def __len__(self) -> int:
        return len(self.items)

    def __iter__(self) -> Iterator[Problem]:
        return iter(self.items)

    def sorted(self) -> list[Problem]:
        """By file, then line (unknown lines last), then field."""
        return sorted(self.items, key=lambda p: (p.file, p.line is None, p.line or 0, p.field))

    def summary(self, what: str = "file") -> str:
        """One line for one problem; else a count and every problem on a line of its own."""
        lines = [str(p) for p in self.sorted()]
        if len(lines) == 1:
            return lines[0]
        files = len({p.file for p in self.items})
        head = f"{len(lines)} problems in {files} {what}{'s' if files != 1 else ''}:"
        return "\n".join([head, *(f"  {line}" for line in lines)])
