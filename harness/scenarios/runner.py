"""The in-process runner: a scenario played on the real engine, worker and fakes on one
virtual clock, deterministically, then judged (answers, expectations, reached, I1-I11).

`run_scenario(scenario, database, seed=...)` plays one scenario on one database and
returns a `RunResult` whose history (`result.history.to_json()`) is byte-identical for
the same file, seed and database kind.

Two judges read each run: the history checker (`harness.scenarios.checker`, which takes
nothing from the engine's decision tables) over the history, and the simulator's own
store judge (`harness.core.invariants`: `check_invariants` over the final rows and
events, `check_executions` over the fakes' ledger, `check_liveness` over the jobs left
open), so a run `harness check` passes is one the simulator's verdict passes too.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from harness.contracts.verdicts import list_verdicts
from harness.core.failover import waiting_on
from harness.core.invariants import check_executions, check_invariants, check_liveness
from harness.core.models import Event, Job
from harness.errors import HarnessError, ScenarioError
from harness.scenarios.actions import ACTIONS
from harness.scenarios.api_view import observe
from harness.scenarios.checker import Finding, check_history
from harness.scenarios.expectations import judge, judge_step, received_requests
from harness.scenarios.history import History, seconds
from harness.scenarios.model import Scenario
from harness.scenarios.stage import DOCUMENTED_MAX_RUNTIME, Stage
from harness.scenarios.witness import finding_blocks
from harness.store.database import Database

DIALECTS = {"sqlite": "sqlite", "postgresql": "postgres"}


@dataclass
class RunResult:
    """One scenario played once: whether it held, why not, and what happened."""

    scenario: Scenario
    database: str
    seed: int
    seconds: float
    failures: list[str] = field(default_factory=list)  # expectations and answers
    findings: list[Finding] = field(default_factory=list)  # invariant violations
    history: History | None = None
    skipped: str | None = None
    answers: list[Any] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # what the target could not observe

    @property
    def name(self) -> str:
        return self.scenario.name

    @property
    def passed(self) -> bool:
        return self.skipped is not None or (not self.failures and not self.findings)

    def problems(self) -> list[str]:
        """What went wrong, for people: failed expectations, then violations (identical
        ones once, with a count), each with its witness as text."""
        return [*self.failures, *finding_blocks(self.findings)]

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "file": self.scenario.file,
            "database": self.database,
            "seed": self.seed,
            "passed": self.passed,
            "skipped": self.skipped,
            "seconds": round(self.seconds, 4),
            "failures": self.failures,
            "violations": [f.to_dict() for f in self.findings],
            "notes": self.notes,
        }


def dialect_of(database: Database) -> str:
    return DIALECTS.get(database.dialect, database.dialect)


def run_scenario(
    scenario: Scenario,
    database: Database,
    *,
    seed: int = 0,
    namespace: str | None = None,
    observe_api: bool = True,
) -> RunResult:
    """Play `scenario` on `database` (its jobs under owners of a namespace of their own).
    `observe_api` False skips the second observer (a shrinker reproducing a finding the
    engine's own record shows needs no API reads; check always reads them)."""
    dialect = dialect_of(database)
    started = time.perf_counter()
    if not scenario.runs_on(dialect):
        return RunResult(
            scenario,
            dialect,
            seed,
            0.0,
            skipped=f"declared for {', '.join(scenario.databases)}, not {dialect}",
        )
    namespace = namespace or f"scn-{uuid.uuid4().hex[:10]}"
    result = RunResult(scenario, dialect, seed, 0.0)
    stored: list[Finding] = []
    received: list[dict[str, Any]] = []
    quiet = logging.getLogger("harness")
    level = quiet.level
    quiet.setLevel(logging.CRITICAL)  # crashes and refusals are the point, not noise
    try:
        stage = Stage(scenario, database, dialect, seed, namespace)
        try:
            _play(stage, result)
            jobs, events = stage.snapshot()
            ledger = stage.fakes.ledger.entries()
            received = received_requests(ledger)
            stored = _store_findings(stage, jobs, events, ledger)
            stage.history.finish(jobs, events, ledger)
            stage.history.api = observe(stage, jobs) if observe_api else None
            stage.history.verdicts = _listed_verdicts(stage)
            result.history = stage.history
        finally:
            stage.close()
    except HarnessError as exc:
        result.failures.append(f"{scenario.file}: {type(exc).__name__}: {exc.message}")
    finally:
        quiet.setLevel(level)
    if result.history is not None:
        data = result.history.to_dict()
        result.failures.extend(judge(scenario, data, received=received))
        result.findings = [*check_history(data), *stored]
    result.seconds = time.perf_counter() - started
    return result


def _listed_verdicts(stage: Stage) -> dict[str, list[dict[str, Any]]] | None:
    """The run's contract's verdicts as the verdict list shows them to an operator
    (`harness contracts verdicts --provider P`: `harness.contracts.list_verdicts`), for
    each provider the run configures; None without a contract. The checker finds in each
    list the verdicts the run recorded for that provider (I7, *verdicts listed*)."""
    if stage.contract is None:
        return None
    return {
        provider: [
            {"t": seconds(stage.start, v.created_at), "provider": v.provider, "passed": v.passed}
            for v in list_verdicts(
                stage.database, contract_name=stage.contract.name, provider=provider
            )
        ]
        for provider in sorted(stage.adapters)
    }


def _store_findings(
    stage: Stage, jobs: list[Job], events: list[Event], ledger: list[Any]
) -> list[Finding]:
    """The store judge's violations in the checker's form (job aliases, no witness: the
    rows it read are not history entries)."""
    config = stage.history.config
    assert config is not None, "a Stage sets its run's config as it is built"
    max_runtime = defaultdict(lambda: DOCUMENTED_MAX_RUNTIME, config["max_runtime"])
    lookups = frozenset(config["lookups"])
    executions = [entry.attempt_id for entry in ledger]
    return [
        Finding(
            v.invariant,
            stage.history.names.job(v.job_id) if v.job_id else None,
            f"in the stored rows: {v.message}",
        )
        for v in (
            *check_invariants(jobs, events),
            *check_executions(jobs, executions),
            *check_liveness(
                jobs, waiting=lambda j: waiting_on(j, max_runtime=max_runtime, lookups=lookups)
            ),
        )
    ]


def _play(stage: Stage, result: RunResult) -> None:
    for step in stage.scenario.steps:
        if step.at is not None:
            stage.turns.advance_to(stage.start + timedelta(seconds=step.at))
        if step.action is None:
            continue
        try:
            answer = ACTIONS[step.action](stage, step.args, step)
        except ScenarioError:
            raise
        except (HarnessError, KeyError, AssertionError, TypeError, ValueError) as exc:
            # A broken engine may fail in any way; the run goes on and says where.
            answer = f"error:{type(exc).__name__}"
            message = exc.message if isinstance(exc, HarnessError) else str(exc)
            result.failures.append(
                f"{stage.scenario.file}:{step.line}: step {step.index + 1} ({step.action}) "
                f"raised {type(exc).__name__}: {message}"
            )
        stage.turns.settle()
        result.answers.append(answer)
        failure = judge_step(stage.scenario, step, answer)
        if failure:
            result.failures.append(failure)
    stage.turns.settle()
    result.failures.extend(stage.problems)
    result.failures.extend(
        f"{stage.scenario.file}: pause: {name} at {held.point} was never resumed"
        for name, held in sorted(stage.pauses.items())
    )
    result.failures.extend(_uncaught(stage))


def _uncaught(stage: Stage) -> list[str]:
    """A worker's timer or task that raised what no engine refusal is (a TypeError, an
    AttributeError: a bug the worker's scheduler would only log): a failure of the run.
    The engine's own errors (a refused start, a worker killed on purpose) are its words."""
    seen: dict[str, None] = {}
    for exc in stage.turns.errors:
        if not isinstance(exc, HarnessError):
            seen[f"{type(exc).__name__}: {exc}"] = None
    return [
        f"{stage.scenario.file}: a worker's timer or task raised {what} (nothing catches it)"
        for what in seen
    ]
