"""Judging a run: each step's answer against its `expect`, the final jobs, events and
ledger against the scenario's `expect`, what each provider received against its `sent`,
and the `reached` assertions that prove the race happened. Pure: a scenario and a
history mapping in (and, in-process, what the fakes received), failure sentences out.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from harness.scenarios.actions import http_status
from harness.scenarios.checker import unsettled
from harness.scenarios.model import Scenario, Step
from harness.scenarios.stage import PROVIDER_API
from harness.scenarios.witness import finding_blocks, value_text


def answer_matches(expected: Any, answer: Any) -> bool:
    """`expected` is a word (``refused`` matches any ``refused:<reason>``), an HTTP status
    code, or a mapping of words to counts for a repeated step."""
    if isinstance(expected, bool):
        return False
    if isinstance(expected, int):
        return isinstance(answer, str) and http_status(answer) == expected
    if isinstance(expected, str):
        return isinstance(answer, str) and (answer == expected or answer.startswith(expected + ":"))
    if isinstance(expected, Mapping):
        return isinstance(answer, Mapping) and dict(answer) == {
            str(k): v for k, v in expected.items()
        }
    return False


def judge_step(scenario: Scenario, step: Step, answer: Any) -> str | None:
    if step.expect is None or answer_matches(step.expect, answer):
        return None
    where = f"{scenario.file}:{step.line}" if step.line else scenario.file
    return (
        f"{where}: step {step.index + 1} ({step.action}) answered {value_text(answer)}, "
        f"expected {value_text(step.expect)}"
    )


def judge(
    scenario: Scenario,
    history: Mapping[str, Any],
    *,
    late: float = 0.0,
    received: Sequence[Mapping[str, Any]] | None = None,
) -> list[str]:
    """Every way the final state differs from the scenario's `expect` and `reached`.
    An instant (`started_at`) may be up to `late` scenario seconds after the one the file
    gives, never before: a live server's own poll and request handling take real time
    (0 in-process, where the clock is virtual and every instant exact). `received`: what
    each request the fakes recorded carried (`received_requests`), for `expect.sent`;
    None where the target cannot show it (over HTTP), and `sent` then says nothing."""
    expect = scenario.expect
    found: list[str] = []
    for alias, wanted in (expect.get("jobs") or {}).items():
        found.extend(f"job {alias}: {m}" for m in _job(alias, wanted, history, late))
    found.extend(_ledger(expect.get("ledger") or {}, history))
    if received is not None:
        found.extend(_sent(expect.get("sent") or {}, received))
    found.extend(_per_owner(expect.get("jobs_per_owner") or {}, history))
    found.extend(_rounds(expect.get("rounds") or {}, history))
    found.extend(_counted(expect.get("counted") or {}, history))
    if expect.get("settled"):
        found.extend(f"not settled: {block}" for block in finding_blocks(unsettled(history)))
    for reached in scenario.reached:
        message = _reached(reached, history)
        if message:
            found.append(f"not reached: {message}")
    return found


def _job(
    alias: str, wanted: Mapping[str, Any], history: Mapping[str, Any], late: float
) -> Iterator[str]:
    job = history["jobs"].get(alias)
    if job is None:
        yield "never created"
        return
    events = [e for e in history["events"] if e["job"] == alias]
    yield from _job_state(job, wanted)
    yield from _attempt_fields(job, wanted, late)
    yield from _job_events([e["kind"] for e in events], wanted)
    yield from _event_details(events, wanted.get("detail") or {})


def _job_state(job: Mapping[str, Any], wanted: Mapping[str, Any]) -> Iterator[str]:
    if "status" in wanted and job["status"] != wanted["status"]:
        yield f"status {value_text(job['status'])}, expected {value_text(wanted['status'])}"
    if "winner" in wanted:
        winner = next(
            (a["provider"] for a in job["attempts"] if a["attempt"] == job["winner"]), None
        )
        if winner != wanted["winner"]:
            yield f"winner {value_text(winner)}, expected {value_text(wanted['winner'])}"
    if "attempts" in wanted:
        seen = [f"{a['provider']}:{a['state']}" for a in job["attempts"]]
        if seen != list(wanted["attempts"]):
            yield f"attempts {value_text(seen)}, expected {value_text(list(wanted['attempts']))}"


def _attempt_fields(
    job: Mapping[str, Any], wanted: Mapping[str, Any], late: float
) -> Iterator[str]:
    attempts = {int(a["attempt"].rsplit("#", 1)[1]): a for a in job["attempts"]}
    for number, fields in (wanted.get("attempt") or {}).items():
        attempt = attempts.get(int(number))
        if attempt is None:
            yield f"no attempt {number}"
            continue
        for name, value in fields.items():
            seen = attempt.get(name)
            if _instant(name, value) and _instant(name, seen) and late > 0:
                if not value <= seen <= value + late:
                    yield (
                        f"attempt {number} {name} {seen:g}, expected {value:g} "
                        f"(up to {late:g} s later over HTTP, never sooner)"
                    )
            elif seen != value:
                yield f"attempt {number} {name} {value_text(seen)}, expected {value_text(value)}"


def _instant(name: str, value: Any) -> bool:
    return name.endswith("_at") and isinstance(value, int | float) and not isinstance(value, bool)


def _job_events(kinds: list[str], wanted: Mapping[str, Any]) -> Iterator[str]:
    if "events" in wanted and not _in_order(list(wanted["events"]), kinds):
        yield (
            f"events {value_text(kinds)} do not contain "
            f"{value_text(list(wanted['events']))} in order"
        )
    for kind in wanted.get("absent", ()):
        if kind in kinds:
            yield f"event {kind} happened"
    if "discarded" in wanted:
        count = kinds.count("discarded_late_result")
        if count != wanted["discarded"]:
            yield f"{count} discarded late result(s), expected {wanted['discarded']}"
    for kind, expected in wanted.get("times", {}).items():
        if kinds.count(kind) != expected:
            yield f"event {kind} happened {kinds.count(kind)} time(s), expected {expected}"


def _event_details(
    events: list[Mapping[str, Any]], wanted: Mapping[str, Mapping[str, Any]]
) -> Iterator[str]:
    """`detail: {KIND: {field: value}}`: some event of that kind carries every field given
    with that value (a job that failed as `content_filtered`, a wait for a `held`
    provider, a skip for an `open` breaker)."""
    for kind, fields in wanted.items():
        details = [e.get("detail") or {} for e in events if e["kind"] == kind]
        if not any(all(_same(d.get(k), v) for k, v in fields.items()) for d in details):
            seen = value_text(details) if details else "none"
            yield f"no {kind} event with {value_text(dict(fields))} (its details: {seen})"


def _same(seen: Any, wanted: Any) -> bool:
    """Equal, and a boolean only to a boolean (`true` is not 1)."""
    return isinstance(seen, bool) == isinstance(wanted, bool) and seen == wanted


def _in_order(wanted: list[str], kinds: list[str]) -> bool:
    rest = iter(kinds)
    return all(any(k == w for k in rest) for w in wanted)


def _rounds(wanted: Mapping[str, Sequence[float]], history: Mapping[str, Any]) -> Iterator[str]:
    """`rounds: {WORKER: [t, ...]}`: the instants of every background round the worker
    ran, exactly (virtual time)."""
    for worker, instants in wanted.items():
        seen = [
            op["t"]
            for op in history.get("operations", ())
            if op.get("op") == "round" and op.get("process") == worker
        ]
        if [round(t, 6) for t in seen] != [round(float(t), 6) for t in instants]:
            wanted_text = value_text(list(instants))
            yield f"worker {worker}: rounds at {value_text(seen)}, expected {wanted_text}"


def _counted(
    wanted: Mapping[str, Sequence[Mapping[str, int | None]]], history: Mapping[str, Any]
) -> Iterator[str]:
    """`counted: {WORKER: [{DUTY: n}, ...]}`: what each duty step (`tick`, `sweep`,
    `reconcile`) of the worker counted, in order, exactly; a count of 0 is left out, so a
    round that did nothing is `{}` and `null` says the duty failed."""
    for worker, rounds in wanted.items():
        seen = [
            _nonzero(op["op"], op["counted"])
            for op in history.get("operations", ())
            if op.get("type") == "ok" and op.get("process") == worker and "counted" in op
        ]
        expected = [dict(r) for r in rounds]
        if seen != expected:
            said = f"its duties counted {value_text(seen)}, expected {value_text(expected)}"
            yield f"worker {worker}: {said}"


def _nonzero(duty: str, counted: Any) -> dict[str, int | None]:
    counts = counted if isinstance(counted, dict) else {duty: counted}
    return {name: n for name, n in counts.items() if n != 0}


def _ledger(wanted: Mapping[str, int], history: Mapping[str, Any]) -> Iterator[str]:
    counts = Counter(
        x["provider_kind"] for x in history["ledger"] if x["behaviour"] != "invalid_request"
    )
    for provider, count in wanted.items():
        got = counts.get(PROVIDER_API[provider], 0)
        if got != count:
            yield f"ledger: {got} execution(s) on {provider}, expected {count}"


RECEIVED_FIELDS = (
    "model",
    "stream",
    "stored",
    "metadata",
    "max_tokens",
    "temperature",
    "endpoint",
    "top_p",
    "stop",
    "parallel_tools",
    "images",
    "tool_choice",
    "tools",
    "strict_tools",
    "tool_descriptions",
    "response_format",
)
"""What `expect.sent` may state of each request a provider received (the fakes' ledger)."""


def received_requests(entries: Iterable[Any]) -> list[dict[str, Any]]:
    """What each request the fakes recorded carried, by the scenario's provider name
    (from the fakes' ledger entries; a request the fake refused as invalid is kept
    too: it was sent)."""
    names = {api: name for name, api in PROVIDER_API.items()}
    return [
        {
            "provider": names.get(entry.provider_kind, entry.provider_kind),
            **{f: getattr(entry, f) for f in RECEIVED_FIELDS},
        }
        for entry in entries
    ]


def _sent(
    wanted: Mapping[str, Mapping[str, Any]], received: Sequence[Mapping[str, Any]]
) -> Iterator[str]:
    """`sent: {provider: {field: value}}`: the provider received at least one request,
    and every one carried each field given with that value."""
    for provider, fields in wanted.items():
        mine = [r for r in received if r["provider"] == provider]
        if not mine:
            yield f"sent: {provider} received no request"
            continue
        for name, value in fields.items():
            seen = [r.get(name) for r in mine]
            odd = [v for v in seen if not _same(v, value)]
            if odd:
                yield (
                    f"sent: {provider} received {name} {value_text(odd[0])} in "
                    f"{len(odd)} of {len(seen)} request(s), expected {value_text(value)}"
                )


def _per_owner(wanted: Mapping[str, int], history: Mapping[str, Any]) -> Iterator[str]:
    counts = Counter(job["owner"] for job in history["jobs"].values())
    for owner, count in wanted.items():
        if counts.get(owner, 0) != count:
            yield f"owner {owner} has {counts.get(owner, 0)} job(s), expected {count}"


def _reached(reached: Mapping[str, Any], history: Mapping[str, Any]) -> str | None:
    marks = history["reached"]
    if "barrier" in reached:
        point = reached["barrier"]
        if not any(m.get("barrier") == point and m.get("passed") for m in marks):
            return f"every party inside {point} at once"
    elif "crashed" in reached:
        if not any(m.get("crashed") == reached["crashed"] for m in marks):
            return f"worker {reached['crashed']} crashed"
    elif "order" in reached:
        spec = reached["order"]
        kinds = [e["kind"] for e in history["events"] if e["job"] == spec["job"]]
        if not _in_order([spec["first"], spec["then"]], kinds):
            return f"job {spec['job']}: {spec['then']} after {spec['first']}"
    elif "overlap" in reached:
        spec = reached["overlap"]
        if _overlap(spec["job"], history) < spec["calls"]:
            return f"job {spec['job']}: {spec['calls']} provider calls in flight at once"
    elif "seen" in reached:
        spec = reached["seen"]
        label = f"{spec['job']}#{spec['attempt']}"
        if spec["state"] not in _states_of(label, history):
            return f"{label} was {spec['state']}"
    return None


def _overlap(job: str, history: Mapping[str, Any]) -> int:
    peak = current = 0
    for op in history["operations"]:
        if op["op"] != "call" or not str(op.get("attempt", "")).startswith(f"{job}#"):
            continue
        current += 1 if op["type"] == "invoke" else -1
        peak = max(peak, current)
    return peak


_STATE_OF_EVENT = {
    "attempt_started": "starting",
    "became_unknown": "unknown",
    "attempt_failed": "failed",
    "won": "succeeded",
    "attempt_cancelled": "cancelled",
    "attempt_superseded": "superseded",
    "discarded_late_result": "superseded",
}


def _states_of(label: str, history: Mapping[str, Any]) -> set[str]:
    states = {
        _STATE_OF_EVENT[e["kind"]]
        for e in history["events"]
        if e.get("attempt") == label and e["kind"] in _STATE_OF_EVENT
    }
    states |= {
        "running"
        for op in history["operations"]
        if op["op"] == "call" and op.get("attempt") == label
    }
    job = history["jobs"].get(label.split("#")[0], {})
    states |= {a["state"] for a in job.get("attempts", ()) if a["attempt"] == label}
    return states
