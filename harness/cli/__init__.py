"""The `harness` command line: one module per command group, options declared once."""

from __future__ import annotations

import sys

from harness.cli.main import main

__all__ = ["main", "run"]


def run() -> None:
    """The installed `harness` command and `python -m harness`: `main` with standard output
    written line by line even when it is not a terminal, so a CI log shows each line of
    progress as it is printed instead of everything at exit."""
    if not sys.stdout.isatty() and hasattr(sys.stdout, "reconfigure"):
        sys.stdout.reconfigure(line_buffering=True)
    main()
