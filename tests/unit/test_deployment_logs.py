"""What `harness simulate --processes` reads from its processes' logs: every exception,
also one raised inside an exception group (anyio's task groups wrap what a task raised,
and Python prints the members indented under `|`), which the run counts as unexpected."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from harness.simulate.deployment import Deployment, Timings

GROUPED = """\
ERROR:    Exception in ASGI application
  + Exception Group Traceback (most recent call last):
  |   File "asgi.py", line 108, in run
  | ExceptionGroup: unhandled errors in a TaskGroup (1 sub-exception)
  +-+---------------- 1 ----------------
    | Traceback (most recent call last):
    |   File "asgi.py", line 176, in _drop
    | OSError: [Errno 9] Bad file descriptor
    +------------------------------------
"""


@dataclass
class _Logged:
    name: str
    text: str

    def log_tail(self, lines: int) -> str:
        return self.text


def test_an_exception_inside_a_group_is_counted_by_its_own_line(tmp_path: Path) -> None:
    deployment = Deployment(
        "sqlite://",
        tmp_path,
        tokens={},
        api_processes=0,
        api_workers=0,
        worker_processes=0,
        timings=Timings(),
    )
    deployment._all = [_Logged("fakes.1", GROUPED)]  # type: ignore[list-item]
    report = deployment.log_report()
    assert report["tracebacks"] == 1
    assert "fakes: OSError: [Errno 9] Bad file descriptor" in report["unexpected"]
    assert "fakes: ERROR:    Exception in ASGI application" in report["unexpected"]
