"""Keys and owners: I1 one job per intent, I2 the key binds intent, I10 isolation."""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Iterator, Mapping
from typing import Any

from harness.scenarios.checker.history import (
    Entry,
    Finding,
    _answered_creates,
    _creates,
    _events_by_job,
)


def _one_job_per_intent(history: Mapping[str, Any]) -> Iterator[Finding]:
    """I1 and I2 from the clients' side: one (owner, key) answers one job; the same
    intent is never a conflict; another intent under a used key is never accepted."""
    first: dict[tuple[str, str], tuple[Entry, Entry]] = {}
    for invoke, answer in _answered_creates(history):
        if answer.get("job") is None:
            if answer.get("answer") == "conflict":
                slot = (invoke["process"], invoke["key"])
                earlier = first.get(slot)
                if earlier and earlier[0].get("fingerprint") == invoke.get("fingerprint"):
                    yield Finding(
                        "I2",
                        earlier[1]["job"],
                        "the same intent under its key was refused as a conflict",
                        (earlier[0], invoke, answer),
                    )
            continue
        slot = (invoke["process"], invoke["key"])
        if slot not in first:
            first[slot] = (invoke, answer)
            continue
        f_invoke, f_answer = first[slot]
        if f_answer["job"] != answer["job"]:
            yield Finding(
                "I1",
                f_answer["job"],
                f"one key answered two jobs ({f_answer['job']}, {answer['job']})",
                (f_answer, answer),
            )
        elif f_invoke.get("fingerprint") != invoke.get("fingerprint"):
            yield Finding(
                "I2",
                answer["job"],
                "another intent under a used key was accepted",
                (f_invoke, invoke, answer),
            )


def _conflict_grounds(history: Mapping[str, Any]) -> Iterator[Finding]:
    """I2 and I10: a conflict needs another intent accepted (or maybe accepted: its
    answer never came) under the same owner's key; a key another owner used is theirs
    and never collides; one job is never answered to two owners."""
    creates = list(_creates(history))
    possible: dict[tuple[str, Any], list[Entry]] = defaultdict(list)  # accepted or unanswered
    by_key: dict[Any, list[Entry]] = defaultdict(list)  # accepted answers, any owner
    owners: dict[str, dict[str, Entry]] = defaultdict(dict)  # job -> owner -> its answer
    for invoke, answer in creates:
        if answer is None or answer.get("job") is not None:
            possible[(invoke["process"], invoke.get("key"))].append(invoke)
        if answer is not None and answer.get("job") is not None:
            by_key[invoke.get("key")].append(answer)
            owners[answer["job"]].setdefault(invoke["process"], answer)
    for invoke, answer in creates:
        if answer is None or answer.get("answer") != "conflict" or not invoke.get("fingerprint"):
            continue
        others = possible[(invoke["process"], invoke.get("key"))]
        if any(o.get("fingerprint") != invoke["fingerprint"] for o in others):
            continue  # another intent holds the key: the conflict is right
        if any(o["i"] < invoke["i"] for o in others):
            continue  # the same intent was accepted first: `_one_job_per_intent` says so
        foreign = [a for a in by_key[invoke.get("key")] if a["process"] != invoke["process"]]
        if foreign:
            yield Finding(
                "I10",
                foreign[0].get("job"),
                f"key {invoke.get('key')!r}: {invoke['process']} was refused as a conflict "
                f"with another owner's job",
                (foreign[0], invoke, answer),
            )
        else:
            yield Finding(
                "I2",
                None,
                f"key {invoke.get('key')!r} was refused as a conflict, yet no other intent "
                "was ever accepted under it",
                (invoke, answer),
            )
    yield from _one_owner_per_job(history, owners)


def _one_owner_per_job(
    history: Mapping[str, Any], owners: Mapping[str, Mapping[str, Entry]]
) -> Iterator[Finding]:
    """I10 where the final jobs name no owner (else `_isolated` says it)."""
    jobs = history.get("jobs", {})
    for job, answers in owners.items():
        if len(answers) > 1 and jobs.get(job, {}).get("owner") is None:
            two = list(answers.values())[:2]
            yield Finding("I10", job, "one job was answered to two owners", tuple(two))


def _isolated(history: Mapping[str, Any]) -> Iterator[Finding]:
    """I10: an owner never reads or is handed another owner's job."""
    jobs = history.get("jobs", {})
    for op in history.get("operations", ()):
        if op["type"] != "ok" or op["op"] not in ("read", "create"):
            continue
        reader = op["process"].split(":", 1)[-1]
        job = op.get("job")
        owner = op.get("owner") if op["op"] == "read" else jobs.get(job, {}).get("owner")
        if op["op"] == "read" and op.get("answer") != "found":
            continue
        if owner is not None and owner != reader:
            yield Finding("I10", job, f"{reader} was given {owner}'s job", (op,))


_ONCE_PER_BURST = {"conflict": "I2", "failover_refused": "I7"}
_SAME_REFUSAL = ("kind", "attempt", "actor", "detail")


def _bursts_once(history: Mapping[str, Any]) -> Iterator[Finding]:
    """I2 and I7, *bounded history*: a burst of the same refusal (a conflict, a refused
    failover: the same attempt, actor and detail, one after another) is one event in the
    job's history, counted on the job's row, so a client retrying a refused request in a
    loop cannot grow the history without bound."""
    for job, events in _events_by_job(history).items():
        for before, event in itertools.pairwise(events):
            invariant = _ONCE_PER_BURST.get(str(event["kind"]))
            if invariant and all(before.get(k) == event.get(k) for k in _SAME_REFUSAL):
                yield Finding(
                    invariant,
                    job,
                    f"two {event['kind']} events in a row with the same attempt, actor and "
                    "detail: a burst is one event (bounded history)",
                    (before, event),
                )
