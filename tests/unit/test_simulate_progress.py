"""How `harness simulate` talks to a CI log, on a clock of the test's own: the first
progress line at once, then at most one every few seconds; report lines styled, never
parsed as markup; `--quiet` keeps the failures and the verdict."""

from __future__ import annotations

import pytest
from rich.console import Console

from harness.simulate.console import Out, styled
from harness.simulate.progress import DEFAULT_EVERY, Pacer, ProgressLines


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_the_first_line_is_due_at_once_then_one_every_few_seconds_at_most() -> None:
    clock = Clock()
    pacer = Pacer(every=DEFAULT_EVERY, clock=clock)
    assert pacer.due()  # the first at once
    clock.now += DEFAULT_EVERY - 0.01
    assert not pacer.due()
    clock.now += 0.01
    assert pacer.due()
    assert not pacer.due()  # the same instant: one line, not two


def test_progress_lines_name_the_jobs_played_overall_and_in_the_seed() -> None:
    clock, seen = Clock(), []
    progress = ProgressLines(600, 200, seen.append, Pacer(every=5, clock=clock))
    progress.start_seed(0)
    clock.now += 1.5
    progress.advance(20)  # the first episode ended: a line at once
    for _ in range(9):  # nine more within the same instant: none
        progress.advance(20)
    progress.start_seed(1)
    clock.now += 5
    progress.advance(20)
    assert seen == [
        "played 20 of 600 jobs (seed 0: 20 of 200), 1.5 s",
        "played 220 of 600 jobs (seed 1: 20 of 200), 6.5 s",
    ]


def test_a_report_line_is_coloured_by_its_first_word_and_never_read_as_markup() -> None:
    text = styled("FAIL  seed 3 [bold]not markup[/bold] :x:")
    assert text.plain == "FAIL  seed 3 [bold]not markup[/bold] :x:"
    assert [(s.start, s.end, str(s.style)) for s in text.spans] == [(0, 4, "bold red")]
    assert styled("PASSED  1 seed(s)").spans[0].end == len("PASSED")
    assert styled("      witness t=1").spans == []


def test_quiet_keeps_only_failures_and_the_verdict(capsys: pytest.CaptureFixture[str]) -> None:
    out = Out(quiet=True)
    out.line("harness simulate: 1 seed(s)")
    out.line("PASS  seed 0")
    out.line("FAIL  seed 1", failure=True)
    out.note("shrinking ...")
    with out.progress(10, 10) as progress:
        progress.advance(10)
    out.verdict("FAILED  1 seed(s)")
    captured = capsys.readouterr()
    assert captured.out.splitlines() == ["FAIL  seed 1", "FAILED  1 seed(s)"]
    assert captured.err == ""


def test_without_a_terminal_progress_goes_to_stderr_as_plain_lines(
    capsys: pytest.CaptureFixture[str],
) -> None:
    out = Out()
    with out.progress(40, 20, Pacer(every=5, clock=Clock())) as progress:
        progress.start_seed(7)
        progress.advance(20)
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == "played 20 of 40 jobs (seed 7: 20 of 20), 0.0 s\n"  # no escapes


@pytest.mark.parametrize(
    ("env", "colour"),
    [({}, False), ({"FORCE_COLOR": "1"}, True), ({"FORCE_COLOR": "1", "NO_COLOR": "1"}, False)],
)
def test_colour_only_where_rich_says_a_terminal_and_never_under_no_color(
    env: dict[str, str],
    colour: bool,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Captured output is not a terminal: plain text, unless FORCE_COLOR says otherwise
    (CI systems that render colour set it); NO_COLOR wins over it."""
    for name in ("FORCE_COLOR", "NO_COLOR", "TERM"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    out = Out()
    out.line("FAIL  seed 1")
    out.verdict("PASSED  1 seed(s)")
    printed = capsys.readouterr().out
    assert ("\x1b[31m" in printed or "\x1b[1;31m" in printed) is colour, repr(printed)
    assert ("\x1b[1;32m" in printed) is colour, repr(printed)
    if not env:
        assert "\x1b" not in printed


def test_a_piped_report_keeps_its_lines_on_stdout_while_stderr_is_a_terminal(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`harness simulate | cat` in a terminal: no bar (rich would send stdout's lines
    through the bar's console, stderr, out of the pipe); paced lines on stderr instead."""
    out = Out()
    out.err = Console(stderr=True, force_terminal=True, no_color=True)
    with out.progress(20, 20, Pacer(every=5, clock=Clock())) as progress:
        progress.start_seed(0)
        out.line("PASS  seed 0")
        progress.advance(20)
    captured = capsys.readouterr()
    assert captured.out == "PASS  seed 0\n"
    assert "played 20 of 20 jobs (seed 0: 20 of 20)" in captured.err
