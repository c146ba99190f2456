"""Exhibits for the history checker: small hand-made histories, each broken in one stated
way (or known to be sound), that `harness check` shows the checker before it trusts any
verdict of it, as `exhibits.py` does for the store judge.

A checker rule made lenient passes every run it judges; only a history known to be broken
shows it. Each exhibit names the checker's property family it shows (one of `FAMILIES`,
the modules of `harness.scenarios.checker`) and the invariants a sound checker names for
it, stated here and not by the checker. `CHECKER_MUTANTS` drop one rule per family;
`harness check --mutants` shows that the exhibits catch each before any scenario plays.

The builders (`ev`, `call`, `op`, `attempt`, `job`, `history`) write histories in the
checker's shape (`History.to_dict()`); the checker's own property tests use them too.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from harness.checks.exhibits import answered
from harness.mutants import Mutant, Patches

FAMILIES = (
    "keys",
    "outcomes",
    "ground",
    "winners",
    "intents",
    "timing",
    "liveness",
    "observers",
)
"""The checker's property families (its modules but `history`, which holds no property)."""


def ev(t: float, kind: str, attempt: str | None = None, actor: Any = None, **detail: Any) -> dict:
    """An event; one a call's answer caused keeps that call's request id, as the engine's
    do (*evidence kept*), unless the detail says otherwise."""
    job = attempt.split("#")[0] if attempt else detail.pop("job", "a")
    if kind == "observed" or (kind == "became_unknown" and detail.get("cause") != "deadline"):
        detail.setdefault("request_id", None)
    return {"t": t, "job": job, "kind": kind, "attempt": attempt, "actor": actor, "detail": detail}


def call(i: int, t: float, attempt: str, type_: str = "ok", **fields: Any) -> dict:
    """A provider call's answer in the history's operations."""
    kinds = {"ok": "executed", "fail": "not_executed", "unknown": "unknown"}
    entry = {"t": t, "i": i, "process": fields.pop("process", "w1"), "type": type_, "op": "call"}
    entry.update(attempt=attempt, provider=fields.pop("provider", "primary"))
    if type_ != "invoke":
        entry["kind"] = fields.pop("kind", kinds.get(type_))
    return {**entry, **fields}


def op(i: int, t: float, process: str, type_: str, name: str, **fields: Any) -> dict:
    return {"t": t, "i": i, "process": process, "type": type_, "op": name, **fields}


def attempt(label: str, provider: str, state: str, started: float = 0.0) -> dict:
    return {"attempt": label, "provider": provider, "state": state, "started_at": started}


def job(status: str, winner: str | None, *attempts: dict, **extra: Any) -> dict:
    return {
        "owner": "alice",
        "status": status,
        "winner": winner,
        "chain": ["primary", "fallback"],
        "max_live_attempts": 1,
        "next_attempt_at": None,
        "result_provider": None,
        "attempts": list(attempts),
        **extra,
    }


def history(events: list, jobs: dict | None = None, operations: list | None = None, **top: Any):
    return {
        "operations": operations or [],
        "events": events,
        "ledger": [],
        "jobs": jobs if jobs is not None else {},
        "gate": "allow_all",
        **top,
    }


def sent(intent_input: Any, received: list[str] | None, operation: str = "summarise") -> dict:
    """Job a created with this input; its one execution's ledger entry keeps the digest
    of the texts `received` (None: a view without the field)."""
    intent = {"operation": operation, "input": intent_input, "providers": ["primary"]}
    ops = [
        op(0, 0, "client:alice", "invoke", "create", client=0, key="a", job="a", intent=intent),
        op(1, 0, "client:alice", "ok", "create", client=0, answer="created", job="a"),
    ]
    data = history([], {}, ops)
    entry = {"t": 0, "attempt": "a#1", "behaviour": "success", "status": 200}
    if received is not None:
        text = json.dumps(received, ensure_ascii=False, separators=(",", ":"))
        entry["prompt"] = hashlib.sha256(text.encode("utf-8")).hexdigest()
    data["ledger"] = [entry]
    return data


@dataclass(frozen=True)
class HistoryExhibit:
    """One history, the checker family it shows, and the invariants a sound checker
    names for it (none for a sound history)."""

    name: str
    family: str | None
    expect: tuple[str, ...]
    history: Mapping[str, Any]


_CONFIG = {"workers": ["w1"], "breaker": {"failures": 2, "window": 30, "cool_down": 20}}
_POLICY = {"attempt_timeout": 30.0, "retry_backoff": 0.5, "max_retry_after": 5}


def _won_once() -> dict:
    events = [ev(0, "attempt_started", "a#1", provider="primary"), ev(1, "won", "a#1")]
    jobs = {"a": job("succeeded", "a#1", attempt("a#1", "primary", "succeeded"))}
    return history(events, jobs, [call(0, 1, "a#1")])


def _conflict_out_of_nowhere() -> dict:
    ops = [
        op(0, 0, "client:bob", "invoke", "create", client=0, key="k", job="k", fingerprint="f2"),
        op(1, 0, "client:bob", "fail", "create", client=0, answer="conflict", job=None),
    ]
    return history([], operations=ops)


def _unknown_for_a_503() -> dict:
    events = [
        ev(0, "attempt_started", "a#1", provider="primary"),
        ev(0, "became_unknown", "a#1", cause="unavailable", status=503),
    ]
    jobs = {"a": job("blocked_unknown", None, attempt("a#1", "primary", "unknown"))}
    answer = call(1, 0, "a#1", "fail", reason="unavailable", status=503)
    return history(events, jobs, [answer])


def _two_winners() -> dict:
    events = [
        ev(0, "attempt_started", "a#1", provider="primary"),
        ev(1, "won", "a#1"),
        ev(2, "attempt_started", "a#2", provider="fallback"),
        ev(3, "won", "a#2"),
    ]
    attempts = (attempt("a#1", "primary", "succeeded"), attempt("a#2", "fallback", "succeeded", 2))
    jobs = {"a": job("succeeded", "a#2", *attempts)}
    return history(events, jobs, [call(0, 1, "a#1"), call(1, 3, "a#2")])


def _retry_inside_retry_after() -> dict:
    events = [
        ev(0, "attempt_started", "a#1", "w1", provider="primary"),
        ev(
            0, "attempt_failed", "a#1", "w1", cause="rate_limited", status_code=429, retry_after=2.0
        ),
        ev(0, "waiting", None, "w1", provider="primary"),
        ev(0.5, "attempt_started", "a#2", "w1", provider="primary"),
        ev(0.5, "won", "a#2"),
    ]
    attempts = (attempt("a#1", "primary", "failed"), attempt("a#2", "primary", "succeeded", 0.5))
    jobs = {"a": job("succeeded", "a#2", *attempts, policy=_POLICY)}
    return history(events, jobs, [call(0, 0.5, "a#2")], config=_CONFIG)


def _left_with_nothing_to_move_it() -> dict:
    events = [
        ev(0, "attempt_started", "a#1", provider="primary"),
        ev(1, "attempt_failed", "a#1", cause="server_error", status_code=500),
    ]
    jobs = {"a": job("running", None, attempt("a#1", "primary", "failed"))}
    return history(events, jobs, [call(0, 1, "a#1", "fail", reason="server_error", status=500)])


def _api_shows_another_status() -> dict:
    data = _won_once()
    view = {"read": 200, "events_read": 200, "status": "running", "winner": "a#1"}
    view |= {"attempts": data["jobs"]["a"]["attempts"], "events": list(data["events"])}
    return {**data, "api": {"jobs": {"a": view}}}


def _exchange(behaviour: str, status: int | None, **fields: Any) -> dict:
    """A's one ledger entry: the openai fake played `behaviour` for a#1, received at 0."""
    entry = {"t": 0, "attempt": "a#1", "provider_kind": "openai", "behaviour": behaviour}
    return entry | {"stream": False, "status": status, "delivered": True, **fields}


def _failed_by(cause: str, status: int, error: str, t: float = 1, **detail: Any) -> dict:
    """Job a failed after a#1's call answered an HTTP error at t, as recorded."""
    failed = ev(t, "attempt_failed", "a#1", "w1", cause=cause, outcome="not_executed")
    failed["detail"] |= {"status_code": status, "error": error, "request_id": "r1", **detail}
    row = attempt("a#1", "primary", "failed") | {"cause": cause, "status_code": status}
    row |= {"outcome": "not_executed", "resolution": None, "finished_at": t}
    row["retry_after"] = detail.get("retry_after")
    jobs = {"a": job("failed", None, row, policy=_POLICY)}
    answer = call(1, t, "a#1", "fail", reason=cause, status=status, **detail)
    events = [ev(0, "attempt_started", "a#1", "w1", provider="primary"), failed]
    events.append(ev(t, "job_failed", None, job="a", reason=cause))
    return history(events, jobs, [call(0, 0, "a#1", "invoke"), answer])


def _cause_not_sent() -> dict:
    """The fake answered 429 with Retry-After 2; the attempt records a 500."""
    data = _failed_by("server_error", 500, "HTTP 429: slow down", retry_after=2.0)
    data["operations"][1] |= {"reason": "rate_limited", "status": 429}
    data["ledger"] = [_exchange("rate_limit", 429, retry_after=2.0)]
    return data


def _text_not_sent() -> dict:
    """The fake answered 503; the attempt's error text names another status, and a key."""
    data = _failed_by("unavailable", 503, "unavailable: HTTP 500: key sk-live0123456789abcdef")
    data["ledger"] = [_exchange("service_unavailable", 503)]
    return data


def _bytes_not_read() -> dict:
    """The fake's 500 body was read whole, 120 bytes; the attempt records 121 received."""
    data = _failed_by("server_error", 500, "server_error: HTTP 500: boom", bytes_received=121)
    data["ledger"] = [_exchange("server_error", 500, bytes_read=120)]
    return data


def _interrupted_in_process() -> dict:
    """The in-process fake handed a#1's 500 over (read whole); its call's abort says a
    socket was shut down."""
    data = _bytes_not_read()
    data["events"][1]["detail"]["bytes_received"] = 120
    aborted = ev(1, "attempt_call_aborted", "a#1", "w1", reason="job_failed", interrupted=True)
    data["events"].insert(2, aborted)
    return data


def _aborted_twice() -> dict:
    """A#1's call, aborted when its job failed, is recorded aborted again a round later."""
    data = _bytes_not_read()
    data["events"][1]["detail"]["bytes_received"] = 120
    for t in (1, 2):  # after the job's failure, in time order
        data["events"].append(ev(t, "attempt_call_aborted", "a#1", "w1", reason="job_failed"))
    return data


def _live_call_aborted() -> dict:
    """A#1's call is aborted at t=0.5, while the attempt runs; it wins at t=1."""
    data = _won_once()
    data["events"].insert(1, ev(0.5, "attempt_call_aborted", "a#1", "w1", reason="job_completed"))
    return data


def _ended_before_the_exchange() -> dict:
    """The fake's 500 ended at t=2 (the ledger's end); the attempt failed at t=1."""
    data = _failed_by("server_error", 500, "server_error: HTTP 500: boom")
    data["ledger"] = [_exchange("server_error", 500, ended=2.0)]
    return data


def _winner_text_differs() -> dict:
    """The fake sent a#1 one text; the job holds another as the result."""
    data = _won_once()
    data["operations"] = [call(0, 0, "a#1", "invoke"), call(1, 1, "a#1")]
    data["ledger"] = [_exchange("success", 200, answer_sha256="a" * 64)]
    data["jobs"]["a"]["result_sha256"] = "b" * 64
    data["jobs"]["a"]["attempts"][0]["resolution"] = None
    return data


def _billed_work_given_up() -> dict:
    """A#1's request reached the fake, which did (and billed) the work, then the
    connection dropped; the lookup's resolution says it never produced a result."""
    lost = ev(0, "became_unknown", "a#1", "w1", cause="connection_reset", status=None)
    lost["detail"]["error"] = "RemoteProtocolError: dropped"
    said = "provider lookup: finished without a result"
    events = [ev(0, "attempt_started", "a#1", "w1", provider="primary"), lost]
    events += [ev(5, "resolved", "a#1", "w1", outcome="failed", reason=said)]
    events += [ev(5, "job_failed", None, job="a", reason="chain_exhausted")]
    row = attempt("a#1", "primary", "failed") | {"resolution": "failed", "finished_at": 5}
    ops = [call(0, 0, "a#1", "invoke"), call(1, 0, "a#1", "unknown", reason="connection_reset")]
    data = history(events, {"a": job("failed", None, row, policy=_POLICY)}, ops)
    entry = _exchange("accept_then_drop", 200, delivered=False, billed=True, finished=True)
    data["ledger"] = [entry]
    return data


def _lookup_denies_the_call() -> dict:
    """The fake received a#1 at 0; a lookup at 0.5 says it never heard of it."""
    data = _won_once()
    data["operations"] = [call(0, 0, "a#1", "invoke"), call(2, 1, "a#1")]
    looked = op(1, 0.5, "w1", "ok", "lookup", attempt="a#1", provider="primary")
    data["operations"].insert(1, looked | {"found": False, "finished": False})
    data["ledger"] = [_exchange("success", 200, latency=1.0)]
    return data


EXHIBITS: tuple[HistoryExhibit, ...] = (
    HistoryExhibit("one job won once", None, (), _won_once()),
    HistoryExhibit("a conflict with no other intent", "keys", ("I2",), _conflict_out_of_nowhere()),
    HistoryExhibit("unknown for a provider's own 503", "outcomes", ("I4",), _unknown_for_a_503()),
    HistoryExhibit("a 429 recorded as a 500", "ground", ("I4",), _cause_not_sent()),
    HistoryExhibit("an error text the fake never sent", "ground", ("I4", "I4"), _text_not_sent()),
    HistoryExhibit("bytes received its caller never read", "ground", ("I4",), _bytes_not_read()),
    HistoryExhibit(
        "an in-process call said interrupted", "ground", ("I4",), _interrupted_in_process()
    ),
    HistoryExhibit("a call aborted twice", "ground", ("I8",), _aborted_twice()),
    HistoryExhibit(
        "a failure recorded before its exchange ended",
        "ground",
        ("I8",),
        _ended_before_the_exchange(),
    ),
    HistoryExhibit(
        "a result the winner's provider never sent", "ground", ("I5",), _winner_text_differs()
    ),
    HistoryExhibit(
        "billed work resolved as never done", "ground", ("I8",), _billed_work_given_up()
    ),
    HistoryExhibit(
        "a lookup that never heard of a received call",
        "ground",
        ("I4",),
        _lookup_denies_the_call(),
    ),
    HistoryExhibit("a job won twice", "winners", ("I5", "I5", "I11"), _two_winners()),
    HistoryExhibit("a live call aborted", "winners", ("I5",), _live_call_aborted()),
    HistoryExhibit("the system prompt dropped", "intents", ("I8",), sent({"prompt": "hi"}, ["hi"])),
    HistoryExhibit(
        "a retry 0.5 s into a 2 s Retry-After", "timing", ("I8",), _retry_inside_retry_after()
    ),
    HistoryExhibit(
        "an open job nothing moves", "liveness", ("I11",), _left_with_nothing_to_move_it()
    ),
    HistoryExhibit(
        "the API shows another status", "observers", ("I5",), _api_shows_another_status()
    ),
)


def wrong_answers(
    exhibits: Iterable[HistoryExhibit] = EXHIBITS,
) -> list[tuple[HistoryExhibit, str]]:
    """Every exhibit the history checker answers with other invariants than a sound
    checker names (in any order), with that said in one line. The checker is looked up
    when called, so a patched one is the one judged."""
    from harness.scenarios import checker

    def asked(exhibit: HistoryExhibit) -> Callable[[], Iterable[Any]]:
        return lambda: checker.check_history(exhibit.history)

    found = ((e, answered(e.name, asked(e), e.expect, "checker")) for e in exhibits)
    return [(exhibit, problem) for exhibit, problem in found if problem is not None]


def checker_problems(exhibits: Iterable[HistoryExhibit] = EXHIBITS) -> list[str]:
    """`wrong_answers`' lines; empty when the checker answers every exhibit as stated."""
    return [problem for _, problem in wrong_answers(exhibits)]


def _without(rule: str) -> Callable[[], Patches]:
    """The checker with one rule dropped from the checks it runs."""

    def patch() -> Patches:
        from harness.scenarios import checker

        kept = tuple(c for c in checker.HISTORY_CHECKS if c.__name__ != rule)
        return {(checker, "HISTORY_CHECKS"): kept}

    return patch


_LENIENT: tuple[tuple[str, str, str, str, str], ...] = (
    # name, family, invariant, the rule dropped, what the broken checker then accepts
    ("keys", "keys", "I2", "_conflict_grounds", "a conflict is never questioned"),
    ("outcomes", "outcomes", "I4", "_definite_never_unknown", "unknown for any signal is accepted"),
    (
        "ground",
        "ground",
        "I4",
        "_recorded_as_sent",
        "a cause the ledger disagrees with is accepted",
    ),
    ("ground_text", "ground", "I4", "_error_as_sent", "an error text nobody sent is accepted"),
    ("ground_bytes", "ground", "I4", "_evidence_as_read", "bytes nobody read are accepted"),
    ("ground_socket", "ground", "I4", "_no_socket_in_process", "a socket nobody had is shut"),
    ("ground_abort", "ground", "I8", "_aborted_once", "a call aborted twice is accepted"),
    ("ground_end", "ground", "I8", "_ended_after_the_exchange", "an end before the exchange's"),
    ("ground_result", "ground", "I5", "_winner_text_as_sent", "a result nobody sent is accepted"),
    ("ground_lookup", "ground", "I8", "_resolved_as_sent", "a resolution the ledger belies"),
    ("ground_known", "ground", "I4", "_lookups_as_received", "a lookup the ledger belies"),
    ("winners", "winners", "I5", "_one_winner", "more than one win is accepted"),
    ("winners_abort", "winners", "I5", "_aborted_when_lost", "a live call's abort is accepted"),
    ("intents", "intents", "I8", "_prompt_sent", "the prompt sent is never compared"),
    ("timing", "timing", "I8", "_retry_waits", "a retry inside Retry-After is accepted"),
    ("liveness", "liveness", "I11", "_moves_on_at_once", "an open job nothing moves is accepted"),
    ("observers", "observers", "I5", "_api_agrees", "the API's view is never compared"),
)

_STORY_OF: Mapping[str, str] = {
    "ground": "a 429 recorded as a 500",
    "ground_text": "an error text the fake never sent",
    "ground_bytes": "bytes received its caller never read",
    "ground_socket": "an in-process call said interrupted",
    "ground_abort": "a call aborted twice",
    "ground_end": "a failure recorded before its exchange ended",
    "ground_result": "a result the winner's provider never sent",
    "ground_lookup": "billed work resolved as never done",
    "ground_known": "a lookup that never heard of a received call",
    "winners_abort": "a live call aborted",
}
"""A family with several rules under mutation: each rule's exhibit (else the family's one)."""

CHECKER_MUTANTS: tuple[Mutant, ...] = tuple(
    Mutant(f"checker_{name}_lenient", breaks, summary, _without(rule))
    for name, _family, breaks, rule, summary in _LENIENT
)
"""One broken checker per family (and per rule of `ground`, the ledger's family): its
rule that the family's exhibit shows, dropped."""

STORY = {
    f"checker_{name}_lenient": "exhibit "
    + _STORY_OF.get(name, next(e.name for e in EXHIBITS if e.family == family))
    for name, family, *_ in _LENIENT
}
"""Each checker mutant's story: its rule's exhibit."""
