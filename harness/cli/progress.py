"""The progress bar long commands show on stderr (rich; nothing when not a terminal)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager


@contextmanager
def progress_bar(total: int, what: str) -> Iterator[Callable[[int], None]]:
    """Yields `advance(n=1)`: n more of `total` units of `what` are done."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    console = Console(stderr=True)
    if not console.is_terminal:

        def ignore(n: int = 1) -> None:
            pass

        yield ignore
        return
    with Progress(
        TextColumn(f"[bold]{what}"),
        BarColumn(),
        MofNCompleteColumn(),
        console=console,
        transient=True,
    ) as progress:
        task = progress.add_task(what, total=total)

        def advance(n: int = 1) -> None:
            progress.advance(task, n)

        yield advance
