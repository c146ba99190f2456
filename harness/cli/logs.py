"""`--log-format` and `--log-level` for the long-running commands (`serve`, `worker`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from harness.observe.logs import FORMATS, LEVELS


def log_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """Both options, passed as `log_format` and `log_level`; the command hands them to
    `harness.observe.logs.configure` before it starts."""
    command = click.option(
        "--log-level",
        type=click.Choice(LEVELS),
        default="warning",
        show_default=True,
        help="Least severe records shown; info logs every change of every job "
        "(its action, job, attempt and provider).",
    )(command)
    return click.option(
        "--log-format",
        type=click.Choice(FORMATS),
        default="text",
        show_default=True,
        help="text for people; json: one object a line, for a log pipeline.",
    )(command)
