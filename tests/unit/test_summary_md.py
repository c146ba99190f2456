"""The CI summary and GitHub annotations (harness.checks.summary_md): at most 1 MiB, cut
at a line with a note; annotations only on GitHub Actions, at most ten, escaped as the
workflow-command format wants; the step summary appended, never overwritten."""

from __future__ import annotations

from harness.checks.summary_md import (
    MAX_BYTES,
    Annotation,
    check_markdown,
    located,
    publish,
    truncate,
)


def test_a_summary_over_1_mib_is_cut_at_a_line_with_a_note() -> None:
    text = "".join(f"| line {i} | é |\n" for i in range(200_000))
    cut = truncate(text)
    assert len(cut.encode("utf-8")) <= MAX_BYTES
    assert "summary cut here" in cut
    body = cut[: cut.index("\n\n**")]
    assert body.endswith("|\n") and text.startswith(body)
    assert truncate("short\n") == "short\n"


def test_annotations_escape_and_locate() -> None:
    note = Annotation("scenario a, b", "line 1\nline 2: 100%", file="s/x.yaml", line=7)
    assert note.command() == (
        "::error file=s/x.yaml,line=7,title=scenario a%2C b::line 1%0Aline 2: 100%25"
    )
    assert located("s/x.scenario.yaml:12: step 2 answered", "d") == ("s/x.scenario.yaml", 12)
    assert located("I1 job a: two jobs", "d.yaml") == ("d.yaml", None)


def test_publish_appends_to_the_step_summary_and_annotates_only_on_actions(tmp_path) -> None:
    step = tmp_path / "step.md"
    step.write_text("earlier step\n")
    notes = [Annotation(f"t{i}", "m", file="f") for i in range(15)]
    lines = publish("# now\n", notes, path=tmp_path / "s.md", environ={})
    assert lines == [] and (tmp_path / "s.md").read_text() == "# now\n"
    environ = {"GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": str(step)}
    lines = publish("# now\n", notes, path=None, environ=environ)
    assert len(lines) == 10 and all(line.startswith("::error file=f,") for line in lines)
    assert step.read_text() == "earlier step\n# now\n"


def test_the_check_summary_lists_failures_skips_and_mutants() -> None:
    report = {
        "run_id": "r",
        "summary": {"passed": 1, "failed": 1, "skipped": 1},
        "scenarios": [{"name": "far", "skipped": "not over HTTP"}],
        "mutants": [{"name": "m", "breaks": "I1", "caught_by": []}],
        "gate": [],
    }
    text = check_markdown(report, [("x (seed 0, sqlite)", "I1 ...\nreplay: y")], title="T")
    assert "**1 passed, 1 failed, 1 skipped**" in text
    assert "#### x (seed 0, sqlite)" in text and "replay: y" in text
    assert "| far | not over HTTP |" in text and "**no scenario**" in text
