"""The installed command writes standard output line by line when it is not a terminal
(a CI log, a pipe): each line of progress reaches the log as it is printed."""

from __future__ import annotations

import io
import sys

import pytest

import harness.cli as cli


class Pipe(io.TextIOWrapper):
    def isatty(self) -> bool:
        return False


def test_run_makes_a_piped_stdout_line_buffered(monkeypatch: pytest.MonkeyPatch) -> None:
    pipe = Pipe(io.BytesIO(), encoding="utf-8")
    assert not pipe.line_buffering
    seen: list[bool] = []
    monkeypatch.setattr(sys, "stdout", pipe)
    monkeypatch.setattr(cli, "main", lambda: seen.append(sys.stdout.line_buffering))
    cli.run()
    assert seen == [True]
    print("first line", file=pipe)
    assert pipe.buffer.getvalue() == b"first line\n"  # written through, not held back
