"""Units of work on provider health: the circuit breaker and Retry-After hold every
process shares, decided by `harness.core.breaker` under a row lock."""

from __future__ import annotations

from collections.abc import Iterable

from sqlalchemy.engine import Connection

from harness.core import breaker
from harness.core import faults as fp
from harness.core.breaker import BreakerSettings, Health
from harness.core.states import (
    EventKind,
)
from harness.engine.units import BaseUnits
from harness.store import queries as q


def health_view(providers: list[str] | None, stored: Iterable[Health]) -> dict[str, Health]:
    """`HealthUnits.provider_health`'s answer from the rows it read (`stored`): each
    provider's row, or closed and clean without one (every stored provider, for None)."""
    found = {h.provider: h for h in stored}
    names = providers if providers is not None else sorted(found)
    return {name: found.get(name, Health(provider=name)) for name in names}


class HealthUnits(BaseUnits):
    """Provider health, shared through the database by every worker and API process."""

    def provider_health(self, providers: list[str] | None = None) -> dict[str, Health]:
        """Each provider's breaker as stored (closed and clean when it has no row yet):
        one statement, so one round trip on PostgreSQL (every start and every success
        reads it)."""
        with self.db.single(write=False) as conn:
            found = q.list_health(conn, providers)
        return health_view(providers, found)

    def take_probe(self, provider: str, settings: BreakerSettings) -> bool:
        """Claim the half-open probe of an open breaker whose cool-down has passed: true
        for exactly one caller, whatever the number of workers asking at once."""
        self.faults.hit(fp.BEFORE_PROBE)
        now = self.clock.now()
        with self.db.write() as conn:
            health = q.lock_health(conn, provider, now=now)
            if breaker.availability(health, now, settings) is not breaker.Availability.PROBE:
                return False
            probing, _ = breaker.take_probe(health, now)
            q.save_health(conn, probing, now=now)
            return True

    def record_provider_result(
        self,
        provider: str,
        *,
        ok: bool,
        settings: BreakerSettings,
        job_id: int,
        actor: str,
        retry_after: float | None = None,
        conn: Connection | None = None,
    ) -> breaker.Change:
        """Feed one call's result to the provider's shared breaker; an opened or closed
        breaker is recorded on the job whose call changed it.

        `conn`: inside the caller's transaction (`OutcomeUnits.record_failure`): a
        refusal and the hold it asks for are written together, so no worker sees the one
        without the other and calls a provider that asked for a rest."""
        if conn is None:
            with self.db.write() as conn:
                return self.record_provider_result(
                    provider,
                    ok=ok,
                    settings=settings,
                    job_id=job_id,
                    actor=actor,
                    retry_after=retry_after,
                    conn=conn,
                )
        now = self.clock.now()
        health = q.lock_health(conn, provider, now=now)
        if ok:
            new, change = breaker.on_success(health, now)
        else:
            new, change = breaker.on_failure(health, now, settings, retry_after=retry_after)
        q.save_health(conn, new, now=now)
        if change in (breaker.Change.OPENED, breaker.Change.CLOSED):
            q.insert_event(
                conn,
                job_id,
                EventKind.BREAKER_OPENED
                if change is breaker.Change.OPENED
                else EventKind.BREAKER_CLOSED,
                now=now,
                actor=actor,
                detail={"provider": provider, "cool_down": settings.cool_down},
            )
        return change
