"""Exit codes, part of the command line's contract, and the one error-to-exit mapping.

0 success · 1 a guarantee, check or gate failed · 2 usage, configuration or connection
error (and internal errors: a bug must never read as "the check failed").
"""

from __future__ import annotations

import sys
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from typing import NoReturn

import click

from harness.errors import HarnessError

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_ERROR = 2


def fail(message: str, code: int = EXIT_ERROR) -> NoReturn:
    click.echo(f"error: {message}", err=True)
    sys.exit(code)


def exit_with(failed: bool) -> NoReturn:
    """Exit 1 when something the command checked failed, else 0."""
    sys.exit(EXIT_FAILED if failed else EXIT_OK)


@contextmanager
def exit_on_error() -> Iterator[None]:
    """Map any error raised inside to exit 2 with one ``error:`` line: our errors by their
    message, OS errors by file and reason, anything else as an internal error (with its
    traceback, for the bug report)."""
    try:
        yield
    except HarnessError as exc:
        fail(exc.message)
    except OSError as exc:  # a report into a missing directory, a full disk...
        fail(f"{exc.filename or ''}: {exc.strerror or exc}")
    except Exception as exc:
        traceback.print_exc()
        fail(f"internal error: {type(exc).__name__}: {exc}")
