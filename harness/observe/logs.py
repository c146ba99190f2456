"""Log output for the long-running commands: text for people, JSON lines for machines.

Every record carries the same fields, null where they do not apply: `action` (what
happened: an event kind of a job's history, or a process's own step), `job_id`,
`attempt_id`, `provider` and `actor`. docs/operations.md lists the actions.
"""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Callable
from datetime import UTC, datetime

FIELDS = ("action", "job_id", "attempt_id", "provider", "actor")
FORMATS = ("text", "json")
LEVELS = ("debug", "info", "warning", "error")


class JsonLines(logging.Formatter):
    """One JSON object a line: time, level, logger, message, the fields, and the
    exception's traceback as text when there is one."""

    def format(self, record: logging.LogRecord) -> str:
        line = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
            **{name: getattr(record, name, None) for name in FIELDS},
        }
        if hasattr(record, "counts"):  # a worker's round: what each duty counted
            line["counts"] = record.counts
        if line["action"] is None:
            line["action"] = record.funcName
        if record.exc_info:
            line["error"] = self.formatException(record.exc_info)
        return json.dumps(line, default=str)


class Text(logging.Formatter):
    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)s %(name)s: %(message)s")


def configure(fmt: str, level: str) -> Callable[[], None]:
    """Send the harness's and the fakes' records to stderr in `fmt` from `level` up;
    returns the call that puts the loggers back as they were (a command run in-process,
    by a test or a caller, leaves no logging behind)."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonLines() if fmt == "json" else Text())
    loggers = [logging.getLogger(name) for name in ("harness", "fake_providers")]
    saved = [(logger.handlers[:], logger.level, logger.propagate) for logger in loggers]
    for logger in loggers:
        logger.handlers[:] = [handler]
        logger.setLevel(level.upper())
        logger.propagate = False

    def undo() -> None:
        for logger, (handlers, was, propagate) in zip(loggers, saved, strict=True):
            logger.handlers[:] = handlers
            logger.setLevel(was)
            logger.propagate = propagate

    return undo
