"""failover-harness: one job per intent, proven.

The public face; everything else is importable from its module but may change.
"""

from harness.core.clock import Clock, SystemClock, VirtualClock
from harness.core.gate import AllowAllGate, BaseGate, GateDecision, StaticGate
from harness.core.invariants import Violation, check_invariants
from harness.core.models import Attempt, Completion, Created, Event, Intent, Job, Policy, Verdict
from harness.core.states import AttemptState, JobState
from harness.engine import Engine
from harness.errors import (
    AttemptRefused,
    ConfigError,
    ContractError,
    ContractLoadError,
    EngineError,
    HarnessError,
    IdempotencyConflict,
    IntegrityViolation,
    InvalidIntent,
    InvalidTransition,
    NotFound,
    ProviderConfigError,
    ProviderError,
    ScenarioError,
    SchemaError,
    StoreError,
)
from harness.store.database import DEFAULT_DATABASE_URL, Database

__all__ = [
    "DEFAULT_DATABASE_URL",
    "AllowAllGate",
    "Attempt",
    "AttemptRefused",
    "AttemptState",
    "BaseGate",
    "Clock",
    "Completion",
    "ConfigError",
    "ContractError",
    "ContractLoadError",
    "Created",
    "Database",
    "Engine",
    "EngineError",
    "Event",
    "GateDecision",
    "HarnessError",
    "IdempotencyConflict",
    "IntegrityViolation",
    "Intent",
    "InvalidIntent",
    "InvalidTransition",
    "Job",
    "JobState",
    "NotFound",
    "Policy",
    "ProviderConfigError",
    "ProviderError",
    "ScenarioError",
    "SchemaError",
    "StaticGate",
    "StoreError",
    "SystemClock",
    "Verdict",
    "Violation",
    "VirtualClock",
    "check_invariants",
]
