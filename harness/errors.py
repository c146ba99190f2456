"""The harness's one exception root and its branches.

    HarnessError
    ├── ConfigError                  bad configuration or CLI input
    ├── StoreError                   the database refused or failed
    │   ├── SchemaError              the schema is missing or out of date
    │   └── IntegrityViolation       a constraint refused a write (names it)
    ├── EngineError                  an engine operation was refused
    │   ├── NotFound                 no such job/attempt for this owner
    │   ├── InvalidIntent            a create request or policy is malformed
    │   ├── IdempotencyConflict      key reused with another fingerprint (I2)
    │   ├── AttemptRefused           a new attempt may not start now (I3, I4, I7)
    │   └── InvalidTransition        the state machine forbids this move
    ├── ProviderError                provider adapters and their configuration
    │   ├── ProviderConfigError      a provider config file or entry is malformed
    │   ├── CallFailed               a call ended without an answer (inside adapters)
    │   ├── CallAborted              an aborted call's next I/O (inside adapters; an OSError)
    │   └── VerificationAborted      a verification call did not execute
    ├── ContractError                contract files, verification, the gate
    │   ├── ContractLoadError        a contract file is malformed
    │   │   ├── PointerSyntaxError   a JSON Pointer in it is malformed (also a ValueError)
    │   │   ├── PathNotDeclared      a path its schema does not declare (also a ValueError)
    │   │   └── TemplateSyntaxError  a stray {{ in its prompt (also a ValueError)
    │   ├── UnknownContract          no contract has this name (also a KeyError)
    │   └── CaptureError             a capture file is malformed
    ├── ScenarioError                a scenario could not be loaded or played
    │   ├── ScenarioFileError        a scenario file is malformed (names file:line and field)
    │   ├── ScenarioFailed           a scenario did not hold (a pytest item's failure)
    │   ├── TargetUnreachable        the live target (`--target`, `--fakes`) did not answer
    │   └── WorkerKilled             a scenario killed a worker at a fault point (in-process)
    ├── ProbeError                   a black-box probe could not be loaded or run
    │   ├── ProbeFileError           a probe or profile file is malformed (file:line, field)
    │   └── GatewayUnreachable       the gateway under probe (or its fakes) did not answer
    ├── CheckFailed                  a guarantee did not hold in `harness check`
    └── HttpProblem                  an API error answer (problem details), in harness.api

Each class's docstring is its default message. Messages never carry secrets: provider
API keys are read from the environment at the edge and never formatted into an error.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


class HarnessError(Exception):
    """Harness error."""

    def __init__(self, message: str | None = None, **details: object) -> None:
        self.message = message or (self.__doc__ or "").strip()
        self.details = details
        super().__init__(self.message)


class ConfigError(HarnessError):
    """Invalid configuration."""


class StoreError(HarnessError):
    """The database refused or failed the operation."""


class SchemaError(StoreError):
    """The database schema is missing or out of date; run `harness db upgrade`."""


class IntegrityViolation(StoreError):
    """A database constraint refused the write."""

    def __init__(self, message: str | None = None, *, constraint: str, **details: object) -> None:
        self.constraint = constraint
        super().__init__(message, constraint=constraint, **details)


class EngineError(HarnessError):
    """The engine refused the operation."""


class NotFound(EngineError):
    """No such job or attempt."""


class InvalidIntent(EngineError):
    """The job request is malformed."""


class IdempotencyConflict(EngineError):
    """The idempotency key was already used with a different request."""


class AttemptRefused(EngineError):
    """A new attempt may not start now."""

    def __init__(self, message: str | None = None, *, reason: str, **details: object) -> None:
        self.reason = reason
        super().__init__(message, reason=reason, **details)


class InvalidTransition(EngineError):
    """The state machine does not allow this transition."""


class ProviderError(HarnessError):
    """Provider adapter error."""


class ProviderConfigError(ProviderError, ConfigError):
    """Invalid provider configuration."""


class ContractError(HarnessError):
    """Contract error."""


class ContractLoadError(ContractError):
    """Invalid contract file."""


class VerificationAborted(ProviderError):
    """The provider could not be verified: a call did not execute."""


class UnknownContract(ContractError, KeyError):
    """No contract has this name."""

    def __str__(self) -> str:
        return self.message


class CaptureError(ContractError):
    """Invalid capture file."""


class ScenarioError(HarnessError):
    """The scenario could not be played."""


class ScenarioFileError(ScenarioError):
    """Invalid scenario file."""

    def __init__(
        self,
        message: str | None = None,
        *,
        file: str,
        line: int | None,
        field: str,
        **details: object,
    ) -> None:
        self.file = file
        self.line = line
        self.field = field
        self.problems: tuple[object, ...] = ()  # every problem (harness.core.problems.Problem)
        where = f"{file}:{line}" if line is not None else file
        super().__init__(f"{where}: {field}: {message or self.__doc__}", **details)

    @classmethod
    def of(cls, problems: Sequence[Any], summary: str) -> ScenarioFileError:
        """One error for several problems (each with file, line, field, message): located
        at the first, its message `summary` (every problem, one a line)."""
        first = problems[0]
        error = cls(first.message, file=first.file, line=first.line, field=first.field)
        error.problems = tuple(problems)
        error.message = summary
        error.args = (summary,)
        return error


class TargetUnreachable(ScenarioError):
    """The live target (a `harness serve` or its fake-provider server) did not answer."""


class WorkerKilled(ScenarioError):
    """A scenario killed this worker here."""


class ProbeError(HarnessError):
    """A black-box probe could not be loaded or run."""


class ProbeFileError(ProbeError):
    """Invalid probe or profile file."""

    def __init__(
        self, message: str | None = None, *, file: str, line: int | None, field: str
    ) -> None:
        self.file = file
        self.line = line
        self.field = field
        where = f"{file}:{line}" if line is not None else file
        super().__init__(f"{where}: {field}: {message or self.__doc__}")


class GatewayUnreachable(ProbeError):
    """The gateway under probe did not answer."""


class CheckFailed(HarnessError):
    """A guarantee did not hold."""
