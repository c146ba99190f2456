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

from harness.core.clock import Clock, SystemClock, VirtualClock
from harness.core.gate import AllowAllGate, BaseGate, GateDecision, GateReason, StaticGate
from harness.core.invariants import Violation, check_invariants
from harness.core.models import Attempt, Completion, Created, Event, Intent, Job, Policy, Verdict
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
