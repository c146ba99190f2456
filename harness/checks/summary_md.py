"""What a CI job page shows: a Markdown summary (`--summary-md F`, and GitHub's
``$GITHUB_STEP_SUMMARY`` when it is set) and GitHub annotations (``::error file=…,line=…::``)
for the first failures when ``GITHUB_ACTIONS`` is set.

One module for every command that reports to CI (`check`, `simulate`, `contracts gate`,
and later `probe`): each builds its Markdown from its JSON report, then hands it with its
failures (`Annotation`) to `publish`. A summary is at most `MAX_BYTES` (GitHub's limit per
step), cut at a line with a note saying so.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

MAX_BYTES = 1024 * 1024
"""GitHub's limit for one step's summary."""
MAX_ANNOTATIONS = 10
"""GitHub shows ten error annotations per step; the rest are in the summary."""
STEP_SUMMARY_ENV = "GITHUB_STEP_SUMMARY"
ACTIONS_ENV = "GITHUB_ACTIONS"
_WHERE = re.compile(r"^(?P<file>[^\s:]+):(?P<line>\d+): ")


@dataclass(frozen=True)
class Annotation:
    """One failure as GitHub annotates it: a file (and line) when known, a title, a message."""

    title: str
    message: str
    file: str | None = None
    line: int | None = None

    def command(self) -> str:
        props = [f"file={_prop(self.file)}"] if self.file else []
        if self.file and self.line:
            props.append(f"line={self.line}")
        props.append(f"title={_prop(self.title)}")
        return f"::error {','.join(props)}::{_data(self.message)}"


def _data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _prop(text: str) -> str:
    return _data(text).replace(":", "%3A").replace(",", "%2C")


def located(text: str, default_file: str | None) -> tuple[str | None, int | None]:
    """The ``FILE:LINE:`` a problem's text starts with, else the default file."""
    match = _WHERE.match(text)
    if match:
        return match["file"], int(match["line"])
    return default_file, None


def truncate(markdown: str, limit: int = MAX_BYTES) -> str:
    """``markdown`` cut to at most ``limit`` bytes (UTF-8) at a line, with a note."""
    data = markdown.encode("utf-8")
    if len(data) <= limit:
        return markdown
    note = "\n\n**… summary cut here: it was over 1 MiB; the full report is in the job's files.**\n"
    keep = data[: limit - len(note.encode("utf-8"))].decode("utf-8", errors="ignore")
    return keep[: keep.rfind("\n") + 1] + note


def publish(
    markdown: str,
    annotations: Sequence[Annotation],
    *,
    path: Path | None,
    environ: Mapping[str, str],
) -> list[str]:
    """Write the summary to ``path`` and (appended, as GitHub wants) to
    ``$GITHUB_STEP_SUMMARY``; return the annotation lines to print when ``GITHUB_ACTIONS``
    is set (at most `MAX_ANNOTATIONS`)."""
    text = truncate(markdown)
    if path is not None:
        path.write_text(text, encoding="utf-8")
    step = environ.get(STEP_SUMMARY_ENV)
    if step:
        with Path(step).open("a", encoding="utf-8") as out:
            out.write(text)
    if environ.get(ACTIONS_ENV) != "true":
        return []
    return [a.command() for a in annotations[:MAX_ANNOTATIONS]]


def _cell(text: Any) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _fence(text: str) -> str:
    return "```text\n" + text.replace("```", "'''") + "\n```"


def check_markdown(
    report: Mapping[str, Any], failures: Iterable[tuple[str, str]], *, title: str
) -> str:
    """`harness check`'s summary: the counts, then each failure (name, full text: witness,
    timeline, replay command), then mutants and the gate."""
    summary = report["summary"]
    icon = "❌" if summary["failed"] else "✅"
    lines = [
        f"## {icon} {title}",
        "",
        f"**{summary['passed']} passed, {summary['failed']} failed, {summary['skipped']} skipped**",
        "",
    ]
    failures = list(failures)
    if failures:
        lines += ["### Failures", ""]
        for name, text in failures:
            lines += [f"#### {name}", "", _fence(text), ""]
    skipped = [s for s in report["scenarios"] if s.get("skipped")]
    if skipped:
        lines += ["### Skipped", "", "| scenario | why |", "|---|---|"]
        lines += [f"| {_cell(s['name'])} | {_cell(s['skipped'])} |" for s in skipped]
        lines.append("")
    if report.get("mutants") is not None:
        lines += ["### Mutants", "", "| mutant | breaks | caught by | its story |"]
        lines.append("|---|---|---|---|")
        for m in report["mutants"]:
            by = ", ".join(m["caught_by"]) or "**no scenario**"
            story = _cell(m.get("story") or "")
            lines.append(f"| {_cell(m['name'])} | {m['breaks']} | {_cell(by)} | {story} |")
        lines.append("")
    lines += gate_rows(report.get("gate") or [])
    return "\n".join(lines) + "\n"


def gate_rows(entries: Sequence[Mapping[str, Any]]) -> list[str]:
    """The failover gate's answers as a table (empty: no lines)."""
    if not entries:
        return []
    rows = ["### Failover gate", "", "| contract | from | to | answer |", "|---|---|---|---|"]
    for e in entries:
        decision = e["decision"]
        answer = "allowed" if decision["allowed"] else f"**refused**: {decision['reason']}"
        rows.append(
            f"| {_cell(e['contract'] or '(none)')} | {_cell(e['primary'])} | "
            f"{_cell(e['provider'])} | {_cell(answer)} |"
        )
    return [*rows, ""]


def gate_markdown(entries: Sequence[Mapping[str, Any]], *, title: str) -> str:
    """`harness contracts gate`'s summary."""
    refused = sum(not e["decision"]["allowed"] for e in entries)
    icon = "❌" if refused else "✅"
    head = [f"## {icon} {title}", "", f"**{len(entries) - refused} allowed, {refused} refused**"]
    return "\n".join([*head, "", *gate_rows(entries)]) + "\n"


def simulate_markdown(
    report: Mapping[str, Any], text_lines: Sequence[str], replays: Sequence[str], *, title: str
) -> str:
    """`harness simulate`'s summary: its verdict, the text report, and how to replay."""
    icon = "✅" if report["passed"] else "❌"
    lines = [f"## {icon} {title}", "", _fence("\n".join(text_lines)), ""]
    if replays:
        lines += ["### Replay", ""] + [f"- `{r}`" for r in replays] + [""]
    return "\n".join(lines) + "\n"
