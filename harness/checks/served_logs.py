"""The served story's reading of the logs: every record of the run kept as text, and the
worker's `worker_round` records as `--log-format json` writes them, while the handlers a
user had print no more than they did before."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from harness.observe.logs import JsonLines


class _Keep(logging.Handler):
    """Keeps each record once (a record that propagates meets it on several loggers)."""

    def __init__(self, logs: list[str], rounds: list[dict[str, Any]]) -> None:
        super().__init__(logging.DEBUG)
        self.logs, self.rounds = logs, rounds
        self.setFormatter(logging.Formatter("%(levelname)s %(name)s %(message)s"))

    def emit(self, record: logging.LogRecord) -> None:
        if not getattr(record, "served_kept", False):
            record.served_kept = True
            self.logs.append(self.format(record))
            if getattr(record, "action", None) == "worker_round":  # as `--log-format json`
                self.rounds.append(json.loads(JsonLines().format(record)))


class _AtLeast(logging.Filter):
    def __init__(self, level: int) -> None:
        super().__init__()
        self.level = level

    def filter(self, record: logging.LogRecord) -> bool:
        return record.levelno >= self.level


@contextmanager
def captured(logs: list[str], rounds: list[dict[str, Any]]) -> Iterator[None]:
    """Every log record of the run, formatted with its arguments, kept in `logs`, and
    the worker's rounds as JSON objects in `rounds`; the handlers already there print
    no more than they did before."""
    loggers = [logging.getLogger(name) for name in ("", "harness", "fake_providers")]
    keep = _Keep(logs, rounds)
    saved = [(logger, logger.level, logger.getEffectiveLevel()) for logger in loggers]
    gated = []
    for logger, _, prior in saved:
        gate = _AtLeast(prior)
        gated += [(handler, gate) for handler in logger.handlers]
        for handler in logger.handlers:
            handler.addFilter(gate)
        logger.addHandler(keep)
        logger.setLevel(logging.DEBUG)
    try:
        yield
    finally:
        for logger, level, _ in saved:
            logger.removeHandler(keep)
            logger.setLevel(level)
        for handler, gate in gated:
            handler.removeFilter(gate)
