"""Log output for the long-running commands: text for people, JSON lines for machines.

Every record carries the same fields, null where they do not apply: `action` (what
happened: an event kind of a job's history, or a process's own step), `job_id`,
`attempt_id`, `provider` and `actor`. docs/operations.md lists the actions.
"""

from __future__ import annotations

import json
import logging
import sys
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
        if line["action"] is None:
            line["action"] = record.funcName
        if record.exc_info:
            line["error"] = self.formatException(record.exc_info)
        return json.dumps(line, default=str)


class Text(logging.Formatter):
    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)s %(name)s: %(message)s")


def configure(fmt: str, level: str) -> None:
    """Send the harness's records (and uvicorn's) to stderr in `fmt` from `level` up."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonLines() if fmt == "json" else Text())
    for name in ("harness", "fake_providers"):
        logger = logging.getLogger(name)
        logger.handlers[:] = [handler]
        logger.setLevel(level.upper())
        logger.propagate = False
