"""An operator's resolution of an unknown attempt, decided in one place.

`harness serve` with its in-process worker, `harness serve --no-worker` beside separate
`harness worker`s, and the worker's own callers all resolve through `Resolver`, so the
same request gets the same answer whichever process serves the API: 409 `not-unknown`
for an attempt that is not unknown (asked before any provider is), 409
`contradicts-evidence` for a `failed` resolution the provider's own lookup contradicts
(unless forced, and then the override is recorded in the reason).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from harness.core.models import Attempt
from harness.core.states import AttemptState, OutcomeKind, RefusalReason, Resolution
from harness.engine import Engine
from harness.errors import AttemptRefused, InvalidIntent, ProviderError
from harness.providers.base import BaseProvider, LookupResult

log = logging.getLogger(__name__)


class Resolver:
    """Settles unknown attempts against the providers' evidence; holds no state, so any
    process with the engine and the provider adapters decides exactly as any other."""

    def __init__(self, engine: Engine, providers: Mapping[str, BaseProvider]) -> None:
        self.engine = engine
        self.providers = providers

    def lookup(self, attempt: Attempt) -> LookupResult | None:
        """The provider's answer about `attempt` (None: it offers no lookup); raises
        ProviderError when the lookup cannot be made."""
        adapter = self.providers.get(attempt.provider)
        if adapter is None:
            return None
        return adapter.lookup(attempt.token or str(attempt.id))

    def evidence(self, attempt: Attempt) -> LookupResult | None:
        """The provider's answer about `attempt`; None when it offers no lookup or the
        lookup cannot be made (logged), which is no evidence either way."""
        try:
            return self.lookup(attempt)
        except ProviderError as exc:
            log.warning("the lookup of attempt %s could not be made: %s", attempt.id, exc.message)
            return None

    def finished_with_result(self, attempt: Attempt) -> bool:
        """Does the provider's own evidence say the attempt finished with a result?"""
        found = self.evidence(attempt)
        outcome = found.outcome if found is not None and found.finished else None
        return outcome is not None and outcome.kind is OutcomeKind.EXECUTED

    def resolve(
        self,
        attempt_id: int,
        *,
        resolution: Resolution | str,
        reason: str,
        actor: str,
        result: Any = None,
        force: bool = False,
    ) -> Attempt:
        """Resolve an unknown attempt (see the module doc for what is refused)."""
        try:
            resolution = Resolution(resolution)
        except ValueError:
            raise InvalidIntent(
                f"outcome must be one of {', '.join(r.value for r in Resolution)}"
            ) from None
        attempt = self.engine.attempt(attempt_id)
        # Only an unknown attempt has evidence worth asking for; any other is refused by
        # the engine's own guard below (409 not-unknown), with no provider asked.
        contradicted = (
            resolution is Resolution.FAILED
            and attempt.state is AttemptState.UNKNOWN
            and self.finished_with_result(attempt)
        )
        if contradicted and not force:
            raise AttemptRefused(
                f"attempt {attempt_id}: the provider reports it finished with a result; "
                "resolve it as succeeded, or pass force to override",
                reason=RefusalReason.CONTRADICTS_EVIDENCE,
            )
        if contradicted:
            reason = f"{reason} (forced against provider evidence)"
        return self.engine.resolve_unknown(
            attempt_id, resolution=resolution, reason=reason, actor=actor, result=result
        )
