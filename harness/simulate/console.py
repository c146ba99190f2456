"""Where `harness simulate` writes for people, through rich as its docs intend: one
`Console` for the report (stdout) and one for progress (stderr). Rich decides colour:
on a terminal only, never when `NO_COLOR` is set (and when `FORCE_COLOR` is, always).
Lines are never wrapped or cut (`soft_wrap`), whatever width a CI log claims, and each
is written out as soon as it is printed, so a log follows the run line by line.

Progress: when stdout and stderr are both a terminal, a transient bar (rich `Progress`,
the report printed above it); elsewhere a line now and then
(`harness.simulate.progress`), on stderr; nothing with `--quiet`.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.text import Text

from harness.simulate.progress import Pacer, ProgressLines

STYLES = (
    ("PASSED", "bold green"),
    ("FAILED", "bold red"),
    ("PASS", "green"),
    ("FAIL", "bold red"),
    ("failures (", "bold red"),
)
"""A report line's first word and its colour (on a terminal)."""


def styled(line: str) -> Text:
    """The line as rich text, its leading verdict word coloured; never parsed as markup
    (a witness may hold brackets)."""
    text = Text(line)
    for word, style in STYLES:
        if line.startswith(word):
            text.stylize(style, 0, len(word))
            break
    return text


class Out:
    """The report's lines and the run's progress. `quiet`: only what `failure` marks
    (a failing seed, the recap) and the verdict."""

    def __init__(self, *, quiet: bool = False) -> None:
        self.quiet = quiet
        # No `file`: rich writes to whatever sys.stdout / sys.stderr are at each print.
        self.out = Console(soft_wrap=True, highlight=False, emoji=False)
        self.err = Console(stderr=True, soft_wrap=True, highlight=False, emoji=False)

    def line(self, text: str, *, failure: bool = False) -> None:
        if failure or not self.quiet:
            self.out.print(styled(text))

    def lines(self, texts: list[str], *, failure: bool = False) -> None:
        for text in texts:
            self.line(text, failure=failure)

    def verdict(self, text: str) -> None:
        self.out.print(styled(text))

    def note(self, text: str) -> None:
        """A word on stderr (shrinking...), not part of the report."""
        if not self.quiet:
            self.err.print(Text(text))

    @contextmanager
    def progress(
        self, total: int, per_seed: int, pacer: Pacer | None = None
    ) -> Iterator[ProgressLines]:
        """Yields a `ProgressLines` whose `advance(n)` moves the bar or writes a paced line."""
        if self.quiet:
            yield ProgressLines(total, per_seed, lambda line: None, pacer)
            return
        if not (self.err.is_terminal and self.out.is_terminal):
            # The bar needs both: while it shows, rich sends stdout's lines through its
            # own console (stderr), which would take them out of a pipe (`| cat`).
            yield ProgressLines(total, per_seed, lambda line: self.err.print(Text(line)), pacer)
            return
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

        with Progress(
            TextColumn("[bold]jobs"),
            BarColumn(),
            MofNCompleteColumn(),
            console=self.err,
            transient=True,
        ) as bar:
            task = bar.add_task("jobs", total=total)
            yield ProgressLines(
                total, per_seed, lambda line: None, pacer, moved=lambda n: bar.advance(task, n)
            )
