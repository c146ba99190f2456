"""The JUnit suites of the failover gate (`harness check --config`, `harness contracts
gate`) and of a contract verification (`harness contracts verify`), written in the
format of `harness.formats.junit`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from harness.formats.junit import Case, Suite

if TYPE_CHECKING:
    from harness.contracts.chains import Link
    from harness.contracts.verifier import Verification


def shared_seconds(total: float, count: int) -> float:
    """One case's share of work its suite did as a whole (every check of a verification
    judges the same responses; every gate answer reads the same verdicts)."""
    return total / count if count else 0.0


def gate_suite(
    links: Iterable[Link],
    *,
    name: str = "contracts gate",
    seconds: float = 0.0,
    file: str | None = None,
) -> Suite:
    """One case per fallback link of a failover chain; a refused link fails. ``seconds``:
    the real time the gate took to answer them all (shared among the cases); ``file``: the
    configuration the chains come from."""
    links = list(links)
    each = shared_seconds(seconds, len(links))
    cases = []
    for link in links:
        decision = link.check.decision
        case_name = f"{link.chain.contract or '(no contract)'}: {link.primary} -> {link.provider}"
        cases.append(
            Case(
                name=case_name,
                classname=f"contracts.gate.{link.chain.source}",
                failure=None if decision.allowed else f"{decision.reason}: {decision.detail}",
                failure_type=str(decision.reason),
                details=(
                    f"{case_name}: refused ({decision.reason}): {decision.detail}\n"
                    f"verify it: harness contracts verify {link.chain.contract or 'CONTRACT'}"
                    f" --provider {link.provider}"
                ),
                seconds=each,
            )
        )
    return Suite(name=name, cases=cases, file=file)


def verification_suite(verification: Verification, *, seconds: float = 0.0) -> Suite:
    """One case per contract check of a verification; a violated check fails. ``seconds``:
    the real time of the whole verification (its calls and checks), shared among the
    checks, which all judge the same responses."""
    contract = verification.contract
    classname = f"contracts.{contract.name}.{verification.provider}"
    each = shared_seconds(seconds, len(verification.checks))
    replay = (
        f"harness contracts verify {contract.source or contract.name} "
        f"--provider {verification.provider}"
    )
    cases = []
    for check in verification.checks:
        details = "\n".join(
            f"{f.sample or ''}{'' if f.repeat is None else f' #{f.repeat}'}: {f.message}"
            for f in check.failures
        )
        cases.append(
            Case(
                name=check.name,
                classname=classname,
                failure=check.detail if check.status == "fail" else None,
                failure_type="contract_violation",
                details=f"{check.name}: {check.detail}\n{details}\n\nreplay: {replay}",
                skipped=check.detail if check.status == "skip" else None,
                seconds=each,
            )
        )
    return Suite(
        name=f"contracts verify {contract.name} --provider {verification.provider}",
        cases=cases,
        file=contract.source,
    )
