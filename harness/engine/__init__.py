"""The engine: one job per intent, attempts as transitions, one winner by CAS.

Every operation is one transaction whose guarantee is held by the database (a unique
constraint, a partial unique index, a conditional UPDATE), never by a read followed by
a write in Python. Decisions come from `harness.core.states`; time comes from the
injected clock; races are forced at the named `harness.core.faults` points.

    units.py     the shared ground: parts, input checks, locking and fencing steps
    jobs.py      create, read, cancel, fail, defer, notes
    attempts.py  start (live slot, gate), claim, complete (CAS), cancel one attempt
    outcomes.py  unknown with its cause, failures with evidence, resolutions
    health.py    the shared circuit breaker and Retry-After hold
"""

from harness.engine.health import HealthUnits as _HealthUnits
from harness.engine.jobs import JobUnits as _JobUnits
from harness.engine.outcomes import OutcomeUnits as _OutcomeUnits
from harness.engine.units import IDEMPOTENCY_KEY, Claimed, check_key, check_owner


class Engine(_OutcomeUnits, _JobUnits, _HealthUnits):
    """Units of work over the store: the only code that changes jobs and attempts.

    Guarantees, each held by the database rather than by this class: one job per
    `(owner, key)` bound to its fingerprint (I1, I2); at most the policy's number of
    live attempts (I3); a timeout makes an attempt unknown, never failed, and blocks new
    attempts until it is resolved (I4); exactly one attempt wins by compare-and-swap and
    every other result is kept for audit, never written (I5, I6); a fallback starts only
    through the gate (I7); a finished job keeps no live attempt (I11). Every change is
    recorded as an event in the same transaction. Safe to share between threads and
    processes."""


__all__ = ["IDEMPOTENCY_KEY", "Claimed", "Engine", "check_key", "check_owner"]
