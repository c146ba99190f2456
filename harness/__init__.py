"""failover-harness: one job per intent, proven.

The public face; everything else is importable from its module but may change.
The layout (each package's docstring says more):

    harness.core       pure decisions: states and vocabularies, models, fingerprint,
                       invariants, clock, fault points, limits, failover policy, gate
    harness.store      tables, named statements, transactions, migrations
    harness.engine     units of work over core + store
    harness.providers  provider adapters and their outcome tables
    harness.contracts  output contracts, verification, verdicts, the verdict gate
    harness.config     the service configuration file, read once
    harness.runtime    service wiring, the worker and its schedulers
    harness.api        the HTTP API
    harness.scenarios  scenario files: format, runner, history checker, reports
    harness.checks     `harness check`: the scenario suite, mutants, reports
    harness.cli        the `harness` command line
"""

from __future__ import annotations

import importlib
import typing

if typing.TYPE_CHECKING:
    from harness.core.clock import Clock, SystemClock, VirtualClock
    from harness.core.gate import AllowAllGate, BaseGate, GateDecision, GateReason, StaticGate
    from harness.core.invariants import Violation, check_invariants
    from harness.core.models import (
        Attempt,
        Completion,
        Created,
        Event,
        Intent,
        Job,
        Policy,
        Verdict,
    )
    from harness.core.states import (
        AttemptState,
        DiscardReason,
        EventKind,
        JobState,
        OutcomeKind,
        RefusalReason,
        Resolution,
    )
    from harness.engine import Engine
    from harness.errors import (
        AttemptRefused,
        CaptureError,
        CheckFailed,
        ConfigError,
        ContractError,
        ContractLoadError,
        EngineError,
        GatewayUnreachable,
        HarnessError,
        IdempotencyConflict,
        IntegrityViolation,
        InvalidIntent,
        InvalidTransition,
        NotFound,
        ProbeError,
        ProbeFileError,
        ProviderConfigError,
        ProviderError,
        ScenarioError,
        ScenarioFileError,
        SchemaError,
        StoreError,
        TargetUnreachable,
        UnknownContract,
        VerificationAborted,
        WorkerKilled,
    )
    from harness.store.database import DEFAULT_DATABASE_URL, Database

# Where each public name lives: imported on first use (PEP 562), so `import harness`
# (and every `harness` command, whose modules are inside this package) costs no engine,
# database or web framework until one is used.
_EXPORTS: dict[str, str] = {
    "DEFAULT_DATABASE_URL": "harness.store.database",
    "AllowAllGate": "harness.core.gate",
    "Attempt": "harness.core.models",
    "AttemptRefused": "harness.errors",
    "AttemptState": "harness.core.states",
    "BaseGate": "harness.core.gate",
    "CaptureError": "harness.errors",
    "CheckFailed": "harness.errors",
    "Clock": "harness.core.clock",
    "Completion": "harness.core.models",
    "ConfigError": "harness.errors",
    "ContractError": "harness.errors",
    "ContractLoadError": "harness.errors",
    "Created": "harness.core.models",
    "Database": "harness.store.database",
    "DiscardReason": "harness.core.states",
    "Engine": "harness.engine",
    "EngineError": "harness.errors",
    "Event": "harness.core.models",
    "EventKind": "harness.core.states",
    "GateDecision": "harness.core.gate",
    "GateReason": "harness.core.gate",
    "HarnessError": "harness.errors",
    "IdempotencyConflict": "harness.errors",
    "IntegrityViolation": "harness.errors",
    "Intent": "harness.core.models",
    "InvalidIntent": "harness.errors",
    "InvalidTransition": "harness.errors",
    "Job": "harness.core.models",
    "JobState": "harness.core.states",
    "NotFound": "harness.errors",
    "OutcomeKind": "harness.core.states",
    "Policy": "harness.core.models",
    "ProviderConfigError": "harness.errors",
    "ProviderError": "harness.errors",
    "RefusalReason": "harness.core.states",
    "Resolution": "harness.core.states",
    "ScenarioError": "harness.errors",
    "ScenarioFileError": "harness.errors",
    "ProbeError": "harness.errors",
    "ProbeFileError": "harness.errors",
    "GatewayUnreachable": "harness.errors",
    "SchemaError": "harness.errors",
    "StaticGate": "harness.core.gate",
    "StoreError": "harness.errors",
    "SystemClock": "harness.core.clock",
    "TargetUnreachable": "harness.errors",
    "UnknownContract": "harness.errors",
    "Verdict": "harness.core.models",
    "VerificationAborted": "harness.errors",
    "Violation": "harness.core.invariants",
    "VirtualClock": "harness.core.clock",
    "WorkerKilled": "harness.errors",
    "check_invariants": "harness.core.invariants",
}

__all__ = [
    "DEFAULT_DATABASE_URL",
    "AllowAllGate",
    "Attempt",
    "AttemptRefused",
    "AttemptState",
    "BaseGate",
    "CaptureError",
    "CheckFailed",
    "Clock",
    "Completion",
    "ConfigError",
    "ContractError",
    "ContractLoadError",
    "Created",
    "Database",
    "DiscardReason",
    "Engine",
    "EngineError",
    "Event",
    "EventKind",
    "GateDecision",
    "GateReason",
    "GatewayUnreachable",
    "HarnessError",
    "IdempotencyConflict",
    "IntegrityViolation",
    "Intent",
    "InvalidIntent",
    "InvalidTransition",
    "Job",
    "JobState",
    "NotFound",
    "OutcomeKind",
    "Policy",
    "ProbeError",
    "ProbeFileError",
    "ProviderConfigError",
    "ProviderError",
    "RefusalReason",
    "Resolution",
    "ScenarioError",
    "ScenarioFileError",
    "SchemaError",
    "StaticGate",
    "StoreError",
    "SystemClock",
    "TargetUnreachable",
    "UnknownContract",
    "Verdict",
    "VerificationAborted",
    "Violation",
    "VirtualClock",
    "WorkerKilled",
    "check_invariants",
]


def __getattr__(name: str) -> typing.Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'harness' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
