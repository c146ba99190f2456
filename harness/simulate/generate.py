"""One episode of a run as a scenario (the scenarios format, as a plain mapping).

An episode is a handful of jobs from random clients over a chaos window of virtual
time: provider scripts drawn from the seed's fault rates, client habits (double clicks,
lost responses, changed payloads, reordered keys, the fallback button, resolutions,
cancels), worker crashes at named fault points, then a recovery phase (faults off,
hangs released, workers restarted, the sweep and reconciler run) of `RECOVERY` seconds.
Everything is drawn from `random.Random(f"episode-{seed}-{index}")`: the same seed and
index give the same mapping.
"""

from __future__ import annotations

import itertools
import random
from typing import Any

from harness.bundled import bundled_file
from harness.core import faults as fp
from harness.simulate.swarm import PROVIDER_FAULTS, Knobs

ATTEMPT_TIMEOUT = 30.0
MAX_RUNTIME = 90.0
RECOVERY = 200.0
"""Virtual seconds the recovery phase lasts: past every attempt timeout and max runtime,
so after it a job is finished or waits on an unknown that only a lookup or an operator
can end (when no max runtime is set)."""

TICK_EVERY = 20.0
"""Virtual seconds between a worker's rounds (claim, sweep, reconcile: `Worker.tick`) in
the chaos phase, as a deployed worker polls."""
RECOVERY_TICK_EVERY = 5.0
"""Virtual seconds between the worker's rounds in the recovery phase, after one a second
until a round has had the chance to claim every job (`CLAIM_BATCH` a round): waits that
end together (timers lost with a restarted worker) are claimed a batch a round."""
CLAIM_BATCH = 20  # `WorkerSettings.claim_batch`
WORKERS = ("w1", "w2")
CRASH_POINTS = (fp.BEFORE_START, fp.BEFORE_COMPLETE, fp.BEFORE_TIMEOUT, fp.BEFORE_CANCEL)
"""The worker's fault points (`create_job.before_insert` is the API's)."""
CONTRACT = {
    "name": "ticket-triage",
    "file": str(bundled_file("contracts", "ticket-triage.yaml")),
}


def episode(
    seed: int, index: int, knobs: Knobs, *, jobs: int, clients: int, duration: float
) -> dict[str, Any]:
    """The scenario mapping of episode `index` of the run of `seed`: exactly `jobs` jobs,
    another owner's job made with a shared key (the `shared_key` habit) counted among
    them, so a run of `--jobs N` plays N jobs."""
    rng = random.Random(f"episode-{seed}-{index}")
    steps: list[dict[str, Any]] = []
    intents = made = 0
    while made < jobs:
        drawn = _job_steps(rng, knobs, f"j{intents}", clients, duration, room=jobs - made)
        steps.extend(drawn)
        made += _jobs_made(drawn)
        intents += 1
    steps.extend(_crashes(rng, knobs, jobs, duration))
    steps.extend({"at": _t(t), "tick": None} for t in _ticks(duration))
    if knobs.gate and rng.random() < 0.5:
        steps.append(
            {
                "at": _t(rng.uniform(0, duration)),
                "verdict": {"provider": "fallback", "passed": True},
            }
        )
    for step in steps:  # every client action lands before the recovery phase
        step["at"] = min(step["at"], _t(duration + 59))
    steps.sort(key=lambda s: s["at"])  # stable: same-time steps keep their order
    operator = [f"j{n}" for n in range(intents) if rng.random() < knobs.habits.get("resolve", 0)]
    steps.extend(_recovery(duration, operator, jobs))
    scenario: dict[str, Any] = {
        "format": 1,
        "name": f"sim-{seed}-{index}",
        "summary": f"harness simulate, seed {seed}, episode {index}",
        "providers": {
            "primary": {"script": _script(rng, knobs, 3 * jobs), "then": "success"},
            "fallback": {"script": _script(rng, knobs, 2 * jobs), "then": "success"},
        },
        "policy": _policy(rng, knobs),
        "workers": list(WORKERS),
        "steps": steps,
        "expect": {"settled": True},  # after the recovery phase (I11)
    }
    worker = _worker(rng, knobs)
    if worker:
        scenario["worker"] = worker
    if knobs.gate:
        scenario["gate"] = "verdicts"
        scenario["contract"] = dict(CONTRACT)
    return scenario


def _t(seconds: float) -> float:
    return round(seconds, 2)


def _latency(rng: random.Random) -> float:
    return _t(min(25.0, max(0.05, rng.lognormvariate(0.0, 1.2))))


def _script(rng: random.Random, knobs: Knobs, length: int) -> list[Any]:
    script: list[Any] = []
    while len(script) < length:
        if rng.random() < knobs.faults.get("outage", 0.0):
            script.extend(["service_unavailable"] * rng.randint(3, 5))
            continue
        fault = next((k for k in PROVIDER_FAULTS if rng.random() < knobs.faults.get(k, 0.0)), None)
        script.append(
            PROVIDER_FAULTS[fault] if fault else {"behaviour": "success", "latency": _latency(rng)}
        )
    return script[:length]


def _policy(rng: random.Random, knobs: Knobs) -> dict[str, Any]:
    policy: dict[str, Any] = {"attempt_timeout": ATTEMPT_TIMEOUT}
    if knobs.hedging:
        # 45: past the attempt timeout, so a hung attempt is unknown before it is hedged
        policy.update(max_live_attempts=2, hedge_after=rng.choice((5, 10, 15, 45)))
    if knobs.retries:
        policy.update(same_provider_retries=1, max_retry_after=5, retry_backoff=1)
    else:
        policy.update(same_provider_retries=0)
    if knobs.keep_lost_calls:  # a hedge's losing call and a timed-out call run on
        policy.update(abort_lost_calls=False)
    if knobs.filter_fails_over:
        policy.update(fail_over_on_content_filter=True)
    return policy


def _worker(rng: random.Random, knobs: Knobs) -> dict[str, Any]:
    worker: dict[str, Any] = {}
    if knobs.breaker:
        worker["breaker"] = {"failures": rng.choice((2, 3)), "window": 30, "cool_down": 20}
    if knobs.max_runtime:
        worker["max_runtime"] = {"primary": MAX_RUNTIME, "fallback": MAX_RUNTIME}
    return worker


def _input(n: str, *, reordered: bool = False, changed: bool = False) -> dict[str, Any]:
    prompt = f"job {n}" + (" (changed)" if changed else "")
    if reordered:  # the same intent written differently: keys reordered, 1 as 1.0
        return {"options": {"b": 2, "a": 1}, "n": 1.0, "prompt": prompt}
    return {"prompt": prompt, "n": 1, "options": {"a": 1, "b": 2}}


def _jobs_made(steps: list[dict[str, Any]]) -> int:
    """How many jobs these steps create (each create names the job it makes or finds)."""
    return len({step["create"]["job"] for step in steps if "create" in step})


def _job_steps(
    rng: random.Random, knobs: Knobs, alias: str, clients: int, duration: float, *, room: int
) -> list[dict[str, Any]]:
    """One client's intent and its habits' steps; `room` jobs may still be made (the
    `shared_key` habit makes a second one, another owner's, only when two fit)."""
    habit = {h: rng.random() < p for h, p in knobs.habits.items()}
    client = rng.randrange(clients)
    owner, other = f"c{client}", f"c{(client + 1) % max(clients, 2)}"
    t0 = rng.uniform(0, duration)
    later = lambda lo, hi: {"at": _t(t0 + rng.uniform(lo, hi))}  # noqa: E731
    create: dict[str, Any] = {"job": alias, "owner": owner, "key": alias, "input": _input(alias)}
    if habit["double_click"]:
        create.update(count=rng.choice((2, 3)), together=True)
    if habit["fallback"] and rng.random() < 0.3:
        create["start"] = False
    steps: list[dict[str, Any]] = [{"at": _t(t0), "create": create}]
    again = {"job": alias, "owner": owner, "key": alias}
    if habit["lost_response"]:
        steps.append({**later(0.1, 20), "create": {**again, "input": _input(alias)}})
    if habit["changed_payload"]:
        steps.append({**later(0.1, 20), "create": {**again, "input": _input(alias, changed=True)}})
    if habit["reordered_keys"]:
        steps.append(
            {**later(0.1, 20), "create": {**again, "input": _input(alias, reordered=True)}}
        )
    if habit["changed_policy"]:
        policy = {"attempt_timeout": 20, "hedge_after": 3}
        steps.append(
            {**later(0.1, 20), "create": {**again, "input": _input(alias), "policy": policy}}
        )
    if habit["shared_key"] and room > 1:
        shared = {"job": f"{alias}x", "owner": other, "key": alias, "input": _input(alias)}
        steps.append({**later(0.1, 20), "create": shared})
    if habit["foreign_read"]:
        steps.append({**later(0.1, 40), "read": {"job": alias, "owner": other}})
    if habit["fallback"]:
        press: dict[str, Any] = {"job": alias}
        if rng.random() < 0.4:
            press.update(count=2, together=True)
        steps.append({**later(0, 40), "fallback": press})
    if habit["resolve"]:
        outcome = rng.choice(("failed", "succeeded", "cancelled"))
        resolve = {
            "job": alias,
            "attempt": rng.choice((1, 1, 2)),
            "outcome": outcome,
            "reason": "simulated operator",
        }
        steps.append({**later(20, 80), "resolve": resolve})
    if habit["cancel"]:
        cancel: dict[str, Any] = {"job": alias, "reason": "simulated user"}
        if rng.random() < 0.5:
            cancel["attempt"] = 1
        steps.append({**later(0, 40), "cancel": cancel})
    return steps


def _crashes(rng: random.Random, knobs: Knobs, jobs: int, duration: float) -> list[dict[str, Any]]:
    """Crashes armed at named fault points, each worker restarted before the next crash is
    armed, so one worker is always alive to serve the operator and the duties."""
    rate = knobs.faults.get("crash", 0.0)
    count = sum(rng.random() < rate for _ in range(jobs))
    times = [*sorted(rng.uniform(0, duration) for _ in range(count)), duration + 59]
    steps: list[dict[str, Any]] = []
    for at, following in itertools.pairwise(times):
        worker = rng.choice(WORKERS)
        back = min(at + rng.uniform(1, 40), following - 0.01)
        steps.append({"at": _t(at), "crash": {"worker": worker, "at": rng.choice(CRASH_POINTS)}})
        steps.append({"at": _t(max(at, back)), "restart": {"worker": worker}})
    return steps


def _recovery(duration: float, operator: list[str], jobs: int) -> list[dict[str, Any]]:
    """Faults off, hangs released, every worker restarted, an operator resolving the
    first attempt of `operator`'s jobs (refused unless it is unknown), then the worker's
    rounds (`RECOVERY_TICK_EVERY`) until `RECOVERY` seconds have passed."""
    start = _t(duration + 60)  # the last client actions land within 60 s of the window
    steps: list[dict[str, Any]] = [{"at": start, "heal": None}, {"release": None}]
    steps += [{"restart": {"worker": w}} for w in WORKERS]
    steps += [
        {"resolve": {"job": job, "attempt": 1, "outcome": "failed", "reason": "confirmed"}}
        for job in operator
    ]
    early = [float(n) for n in range(1, 2 + -(-jobs // CLAIM_BATCH))]
    later = [
        early[-1] + RECOVERY_TICK_EVERY * n for n in range(1, int(RECOVERY // RECOVERY_TICK_EVERY))
    ]
    ticks = [*early, *(t for t in later if t < RECOVERY), RECOVERY]
    steps += [{"at": _t(start + after), "tick": None} for after in ticks]
    return steps


def _ticks(duration: float) -> list[float]:
    ticks, t = [], TICK_EVERY
    while t < duration + 59:
        ticks.append(t)
        t += TICK_EVERY
    return ticks
