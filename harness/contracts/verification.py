"""What `harness contracts verify` decides around a verification: which contract a name
or a file means, which model and provider kind an offline capture stands for, and what
the report shows (console lines and the verdict document).

The command only wires these together and maps errors to exit codes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from harness.contracts.captures import Captures
from harness.contracts.checks import CheckResult
from harness.contracts.loader import CONTRACT_SUFFIXES, load_contract
from harness.contracts.model import Contract
from harness.contracts.verdicts import export_verdicts, verdict_to_dict
from harness.contracts.verifier import Verification
from harness.core.models import Verdict
from harness.providers.config import ProviderConfig

SHOWN_FAILURES = 5  # per check, in console output; the JSON and JUnit reports carry all kept


def find_contract(name_or_file: str, registry: Callable[[], Mapping[str, Contract]]) -> Contract:
    """The contract of a file path, else the one of that name in ``registry()`` (loaded
    only then, so a broken contracts directory does not stop verifying a file)."""
    path = Path(name_or_file)
    if path.suffix.lower() in CONTRACT_SUFFIXES and path.is_file():
        return load_contract(path)
    return registry()[name_or_file]


@dataclass(frozen=True, kw_only=True)
class OfflineTarget:
    """What an offline verification's verdict is for.

    ``model`` is the model that produced the captured outputs (a verdict must never
    vouch for a model it did not see), else the configured one; ``kind`` is the provider
    kind whose prompt format is counted: given, else the capture's, else the configured
    provider's."""

    model: str | None
    kind: str | None
    captured_model: str | None
    configured_model: str | None
    model_given: bool

    def mismatch_note(self, *, file: str, provider: str) -> str | None:
        """A warning when the capture is of another model than the one configured: the
        gate will refuse the configured model until that one is verified."""
        captured, configured = self.captured_model, self.configured_model
        if self.model_given or not captured or not configured or captured == configured:
            return None
        return (
            f"note: {file} holds outputs of {captured!r}; {provider} is configured with "
            f"{configured!r}, so the gate will answer model_changed until that model is "
            "verified"
        )


def offline_target(
    captures: Captures, *, model: str | None, kind: str | None, configured: ProviderConfig | None
) -> OfflineTarget:
    captured = captures.model or next((r.model for r in captures.responses if r.model), None)
    configured_model = configured.model if configured is not None else None
    configured_kind = configured.kind.value if configured is not None else None
    return OfflineTarget(
        model=model or (None if captured else configured_model),
        kind=kind or captures.kind or configured_kind,
        captured_model=captured,
        configured_model=configured_model,
        model_given=model is not None,
    )


def verification_lines(
    verification: Verification, verdict: Verdict | None, *, shown: int = SHOWN_FAILURES
) -> list[str]:
    """The console report: a header, one line per check (with its first failures), and
    the outcome."""
    contract = verification.contract
    mode = "offline" if verification.offline else "online"
    lines = [
        f"{contract.name} v{contract.version} ({contract.short_hash}) on {verification.provider}"
        f" ({verification.model or 'model unknown'}), {mode}: {verification.sample_count}"
        f" samples x {contract.settings.repeats} repeats, {len(verification.responses)} responses"
    ]
    width = max(len(c.name) for c in verification.checks)
    for check in verification.checks:
        lines += _check_lines(check, width, shown)
    outcome = (
        "PASSED" if verification.passed else f"FAILED ({', '.join(verification.failed_checks)})"
    )
    recorded = f"verdict #{verdict.id} recorded" if verdict is not None else "verdict not recorded"
    return [*lines, f"{outcome}; {recorded}"]


def _check_lines(check: CheckResult, width: int, shown: int) -> list[str]:
    lines = [f"  {str(check.status).upper()}  {check.name:<{width}}  {check.detail}"]
    for failure in check.failures[:shown]:
        where = failure.sample or ""
        if failure.repeat is not None:
            where += f" #{failure.repeat}"
        lines.append(f"          {where}: {failure.message}")
    if check.failed > shown:
        lines.append(f"          ... and {check.failed - shown} more (see --json)")
    return lines


def verification_document(
    verification: Verification, verdict: Verdict | None, *, created_by: str, now: datetime
) -> dict[str, Any]:
    """The verdict export (schema: verdicts) holding this verification's verdict, with
    ``id: null`` when it was not recorded."""
    document = export_verdicts([])
    if verdict is not None:
        document["verdicts"].append(verdict_to_dict(verdict))
    else:
        document["verdicts"].append(_unrecorded(verification, created_by, now))
    return document


def _unrecorded(verification: Verification, created_by: str, now: datetime) -> dict[str, Any]:
    return {
        "id": None,
        "provider": verification.provider,
        "model": verification.model,
        "contract_name": verification.contract.name,
        "contract_hash": verification.contract.hash,
        "passed": verification.passed,
        "checks": verification.checks_dict(),
        "sample_count": verification.sample_count,
        "created_at": now.isoformat(),
        "created_by": created_by,
    }
