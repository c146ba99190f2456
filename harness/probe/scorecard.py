"""The scorecard: every probe's verdict per repeat, with requests per provider, billed
against kept and time to answer, as a terminal table, JSON (schema
`harness/schemas/probe-scorecard.json`), JUnit for CI (one testcase per probe and
repeat) and a Markdown summary for a CI job page.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rich import box
from rich.console import Console
from rich.table import Table

from harness.formats.junit import Case, Suite, junit_xml
from harness.probe.driver import ProbeRun
from harness.probe.evidence import Evidence
from harness.probe.judge import UNOBSERVABLE, Judgement, judge, verdict_of
from harness.probe.ledger import Execution
from harness.probe.model import Verdict, worst

FORMAT = 1


@dataclass(frozen=True, kw_only=True)
class Play:
    """One play of one probe, judged."""

    run: ProbeRun
    judgements: tuple[Judgement, ...]
    verdict: Verdict

    @classmethod
    def of(cls, run: ProbeRun) -> Play:
        judgements = judge(run)
        return cls(run=run, judgements=judgements, verdict=verdict_of(judgements))

    def requests(self) -> dict[str, int]:
        evidence = Evidence(self.run)
        return dict(sorted(Counter(e.provider for e in evidence.attributed).items()))

    def money(self) -> tuple[float, float]:
        evidence = Evidence(self.run)
        billed = sum(e.cost for e in evidence.attributed)
        kept = evidence.kept()
        return billed, sum(e.cost for e in evidence.attributed if e in kept)

    def time_to_answer(self) -> float | None:
        answers = [r for r in self.run.records if r.success]
        if not answers:
            return None
        first = min(self.run.records, key=lambda r: r.sent_at)
        return round(min(r.ended_at for r in answers) - first.sent_at, 3)

    def to_json(self) -> dict[str, Any]:
        billed, kept = self.money()
        run = self.run
        return {
            "repeat": run.repeat,
            "verdict": self.verdict.value,
            "seconds": round(run.ended_at - run.started_at, 3),
            "requests": self.requests(),
            "billed_usd": round(billed, 8),
            "kept_usd": round(kept, 8),
            "time_to_answer": self.time_to_answer(),
            "properties": [j.to_json() for j in self.judgements],
            "client": [_relative(r.to_json(), run.started_at) for r in run.records],
            "executions": [_execution(e, run.started_at) for e in run.ledger],
        }


def _relative(record: dict[str, Any], start: float) -> dict[str, Any]:
    out = {k: v for k, v in record.items() if k not in ("sent_at", "ended_at", "nonce")}
    out["t"] = round(record["sent_at"] - start, 3)
    out["seconds"] = round(record["ended_at"] - record["sent_at"], 3)
    return out


def _execution(entry: Execution, start: float) -> dict[str, Any]:
    return {
        "request_id": entry.request_id,
        "provider": entry.provider,
        "model": entry.model,
        "behaviour": entry.behaviour,
        "status": entry.status_code,
        "t": round(entry.received_at - start, 3),
        "billed": entry.billed,
        "cost_usd": entry.cost,
        "nonce": entry.nonce,
    }


@dataclass(frozen=True, kw_only=True)
class ProbeScore:
    """A probe over its repeats: the worst verdict, and whether the repeats disagreed."""

    name: str
    family: str
    summary: str
    file: str
    plays: tuple[Play, ...]
    unobservable: tuple[str, ...]

    @property
    def verdict(self) -> Verdict:
        return worst(p.verdict for p in self.plays)

    @property
    def flaky(self) -> bool:
        return len({p.verdict for p in self.plays}) > 1

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "family": self.family,
            "summary": self.summary,
            "file": self.file,
            "verdict": self.verdict.value,
            "flaky": self.flaky,
            "unobservable": list(self.unobservable),
            "plays": [p.to_json() for p in self.plays],
        }


@dataclass(frozen=True, kw_only=True)
class Scorecard:
    """All probes against one gateway."""

    gateway: str
    profile: str
    time_scale: float
    scores: tuple[ProbeScore, ...]

    @property
    def failed(self) -> bool:
        return any(s.verdict is Verdict.FAIL for s in self.scores)

    def counts(self) -> dict[str, int]:
        found = Counter(s.verdict.value for s in self.scores)
        return {v.value: found.get(v.value, 0) for v in Verdict}

    def money(self) -> tuple[float, float]:
        pairs = [p.money() for s in self.scores for p in s.plays]
        return sum(b for b, _ in pairs), sum(k for _, k in pairs)

    def to_json(self) -> dict[str, Any]:
        billed, kept = self.money()
        return {
            "format": FORMAT,
            "gateway": self.gateway,
            "profile": self.profile,
            "time_scale": self.time_scale,
            "verdict": "fail" if self.failed else "pass",
            "counts": self.counts(),
            "flaky": [s.name for s in self.scores if s.flaky],
            "billed_usd": round(billed, 8),
            "kept_usd": round(kept, 8),
            "unobservable": list(UNOBSERVABLE),
            "probes": [s.to_json() for s in self.scores],
        }


def score(gateway: str, profile: str, time_scale: float, plays: Sequence[Play]) -> Scorecard:
    by_name: dict[str, list[Play]] = {}
    for play in plays:
        by_name.setdefault(play.run.probe.name, []).append(play)
    scores = []
    for group in by_name.values():
        probe = group[0].run.probe
        scores.append(
            ProbeScore(
                name=probe.name,
                family=probe.family,
                summary=probe.summary,
                file=probe.file,
                plays=tuple(group),
                unobservable=(*UNOBSERVABLE, *probe.unobservable),
            )
        )
    return Scorecard(gateway=gateway, profile=profile, time_scale=time_scale, scores=tuple(scores))


_STYLE = {"pass": "green", "fail": "bold red", "safe": "cyan", "partial": "yellow"}
LEVELS = (
    "pass = rescued (a complete, correct answer, no execution beyond the inherent); "
    "partial = answered with a named defect; safe = a clean error where a rescue was "
    "possible; fail = a wrong or truncated answer, a duplicate execution, a caller left "
    "waiting"
)


def _requests(score: ProbeScore) -> str:
    total: Counter[str] = Counter()
    for play in score.plays:
        total.update(play.requests())
    return " ".join(f"{k}:{v}" for k, v in sorted(total.items())) or "-"


def _flagged(score: ProbeScore) -> list[Judgement]:
    """What did not hold, the worst first."""
    found = [
        j
        for p in score.plays
        for j in p.judgements
        if j.verdict in (Verdict.FAIL, Verdict.SAFE, Verdict.PARTIAL)
    ]
    return sorted(found, key=lambda j: -j.verdict.rank)


@dataclass(frozen=True)
class Row:
    """One probe's line of the terminal scorecard, and what did not hold (its finding)."""

    name: str
    verdict: str
    requests: str
    money: str
    answer: str
    finding: str


def rows(card: Scorecard) -> list[Row]:
    found = []
    for s in card.scores:
        billed = sum(p.money()[0] for p in s.plays)
        kept = sum(p.money()[1] for p in s.plays)
        times = [t for p in s.plays if (t := p.time_to_answer()) is not None]
        flagged = _flagged(s)
        found.append(
            Row(
                name=s.name,
                verdict=s.verdict.value + ("\n(flaky)" if s.flaky else ""),
                requests=_requests(s),
                money=f"{billed:.5f}/{kept:.5f}",
                answer=f"{max(times):.2f}" if times else "-",
                finding=f"{flagged[0].name}: {flagged[0].summary}" if flagged else "",
            )
        )
    return found


def print_rows(title: str, found: Sequence[Row], console: Console) -> None:
    """The table, names and verdicts never cut at any width down to 80 columns (the
    requests wrap at their spaces), and each finding whole under it, wrapped to the
    console's width."""
    table = Table(title=title, box=box.SIMPLE_HEAD, pad_edge=False)
    longest = max((len(r.name) for r in found), default=5)
    table.add_column("probe", no_wrap=True, min_width=longest)
    table.add_column("verdict", no_wrap=True)
    tokens = [len(token) for r in found for token in r.requests.split()]
    table.add_column("requests", min_width=max(tokens, default=8))
    table.add_column("billed/kept $", no_wrap=True)
    table.add_column("answer s", no_wrap=True, justify="right")
    for row in found:
        style = _STYLE.get(row.verdict.split()[0], "")
        table.add_row(row.name, f"[{style}]{row.verdict}[/]", row.requests, row.money, row.answer)
    console.print(table, soft_wrap=False)
    for row in found:
        if row.finding:
            console.print(f"{row.name}: {row.finding}", soft_wrap=False, highlight=False)


def print_table(card: Scorecard, console: Console) -> None:
    """The terminal scorecard: one row per probe, what did not hold, then totals."""
    print_rows(f"harness probe {card.gateway} ({card.profile})", rows(card), console)
    billed, kept = card.money()
    counts = ", ".join(f"{n} {v}" for v, n in card.counts().items() if n)
    console.print(f"{len(card.scores)} probes: {counts}; billed ${billed:.6f}, kept ${kept:.6f}")
    console.print(f"levels: {LEVELS}")
    flaky = [s.name for s in card.scores if s.flaky]
    if flaky:
        console.print(f"flaky (repeats disagree): {', '.join(flaky)}")


def junit(card: Scorecard) -> str:
    """One testcase per probe and repeat; a fail is a failure, the rest pass (a safe or
    partial verdict says so in its output)."""
    cases = []
    for s in card.scores:
        for number, play in enumerate(s.plays, 1):
            bad = [j for j in play.judgements if j.verdict is Verdict.FAIL]
            details = "\n".join(
                f"{j.verdict.value} {j.name}: {j.summary}\n  witness: {json.dumps(list(j.witness))}"
                for j in play.judgements
                if j.verdict is not Verdict.PASS
            )
            cases.append(
                Case(
                    name=f"{s.name} #{number}",
                    classname=f"probe.{s.family}",
                    failure=f"{bad[0].name}: {bad[0].summary}" if bad else None,
                    failure_type=bad[0].name if bad else "failure",
                    details=details,
                    seconds=play.run.ended_at - play.run.started_at,
                )
            )
    return junit_xml([Suite(name=f"harness probe {card.gateway}", cases=cases)])


def markdown(card: Scorecard) -> str:
    """A Markdown summary for a CI job page ($GITHUB_STEP_SUMMARY)."""
    billed, kept = card.money()
    counts = ", ".join(f"{n} {v}" for v, n in card.counts().items() if n)
    lines = [
        f"## harness probe: {'FAIL' if card.failed else 'pass'}",
        "",
        f"Gateway `{card.gateway}` ({card.profile}): {len(card.scores)} probes, {counts}; "
        f"billed ${billed:.6f}, kept ${kept:.6f}.",
        "",
        f"Levels: {LEVELS}.",
        "",
        "| probe | verdict | requests | billed / kept $ | finding |",
        "|---|---|---|---|---|",
    ]
    for s in card.scores:
        flagged = _flagged(s)
        finding = f"`{flagged[0].name}`: {flagged[0].summary}" if flagged else ""
        b = sum(p.money()[0] for p in s.plays)
        k = sum(p.money()[1] for p in s.plays)
        verdict = s.verdict.value + (" (flaky)" if s.flaky else "")
        lines.append(
            f"| {s.name} | {verdict} | {_requests(s)} | {b:.5f} / {k:.5f} | "
            f"{finding.replace('|', '/')} |"
        )
    lines += ["", "Not observable from outside the gateway:", ""]
    lines += [f"- {u}" for u in UNOBSERVABLE]
    return "\n".join(lines) + "\n"
