"""plan_next: retry the same provider, fail over, wait, or give up; decided purely."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from harness.core.breaker import Availability
from harness.core.failover import PROBE_RECHECK, plan_next, retry_delay, waiting_on
from harness.core.models import Attempt, Job, Policy
from harness.core.signals import Signal
from harness.core.states import AttemptState, JobState, PlanReason

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def attempt(n: int, provider: str, cause: Signal | None, retry_after: float | None = None):
    return Attempt(
        id=n, job_id=1, number=n, provider=provider, model=None, state=AttemptState.FAILED,
        live_slot=None, read_version=0, provider_request_id=None, started_at=T0,
        deadline_at=None, finished_at=T0, outcome=None, error=None, raw_result=None,
        cause=cause, retry_after=retry_after,
    )  # fmt: skip


def job(*attempts: Attempt, policy: Policy | None = None, providers=("a", "b", "c")) -> Job:
    return Job(
        id=1, owner="o", idempotency_key="k", fingerprint="f", operation="op", input={},
        contract=None, providers=providers, policy=policy or Policy(), status=JobState.PENDING,
        version=1, attempt_count=len(attempts), completed_by=None, result=None,
        created_at=T0, updated_at=T0, attempts=attempts,
    )  # fmt: skip


ALL_UP: dict = {}


def test_first_attempt_goes_to_the_primary() -> None:
    plan = plan_next(job(), now=T0, health=ALL_UP)
    assert (plan.provider, plan.delay, plan.reason) == ("a", 0.0, PlanReason.FIRST)


def test_a_definite_5xx_is_retried_once_after_the_backoff_then_fails_over() -> None:
    one = attempt(1, "a", Signal.UNAVAILABLE)
    plan = plan_next(job(one), now=T0, health=ALL_UP)
    assert (plan.provider, plan.delay, plan.reason) == ("a", 0.5, PlanReason.RETRY_SAME)
    two = attempt(2, "a", Signal.UNAVAILABLE)
    plan = plan_next(job(one, two), now=T0, health=ALL_UP)
    assert (plan.provider, plan.reason) == ("b", PlanReason.FAIL_OVER)


def test_retry_after_within_the_bound_is_honoured_and_beyond_it_fails_over() -> None:
    short = attempt(1, "a", Signal.RATE_LIMITED, retry_after=2)
    assert plan_next(job(short), now=T0, health=ALL_UP).delay == 2
    long = attempt(1, "a", Signal.RATE_LIMITED, retry_after=60)
    assert plan_next(job(long), now=T0, health=ALL_UP).provider == "b"


def test_asking_again_later_gives_what_is_left_of_the_wait() -> None:
    one = attempt(1, "a", Signal.RATE_LIMITED, retry_after=2)  # ended at T0
    assert plan_next(job(one), now=T0 + timedelta(seconds=1.5), health=ALL_UP).delay == 0.5
    assert plan_next(job(one), now=T0 + timedelta(seconds=3), health=ALL_UP).delay == 0.0


def test_a_retry_that_waits_out_the_providers_own_hold_is_not_skipped() -> None:
    one = attempt(1, "a", Signal.RATE_LIMITED, retry_after=2)
    held = {"a": (Availability.RETRY_AFTER, T0 + timedelta(seconds=2))}
    plan = plan_next(job(one), now=T0, health=held)
    assert (plan.provider, plan.delay, plan.reason) == ("a", 2.0, PlanReason.RETRY_SAME)


def test_a_request_error_is_never_retried_on_the_same_provider() -> None:
    for cause in (Signal.BAD_REQUEST, Signal.UNAUTHORIZED, Signal.CONTEXT_LENGTH_EXCEEDED, None):
        assert retry_delay(job(attempt(1, "a", cause)), attempt(1, "a", cause)) is None


def test_no_retries_when_the_policy_says_none() -> None:
    one = attempt(1, "a", Signal.SERVER_ERROR)
    plan = plan_next(job(one, policy=Policy(same_provider_retries=0)), now=T0, health=ALL_UP)
    assert plan.provider == "b"


def test_an_open_breaker_is_skipped_and_recorded() -> None:
    health = {"b": (Availability.BREAKER_OPEN, T0 + timedelta(seconds=10))}
    plan = plan_next(job(attempt(1, "a", Signal.BAD_REQUEST)), now=T0, health=health)
    assert plan.provider == "c" and plan.skipped == (("b", Availability.BREAKER_OPEN),)


def test_when_every_provider_is_held_the_job_waits_for_the_first_free_one() -> None:
    health = {
        "b": (Availability.RETRY_AFTER, T0 + timedelta(seconds=3)),
        "c": (Availability.BREAKER_OPEN, T0 + timedelta(seconds=9)),
    }
    plan = plan_next(job(attempt(1, "a", Signal.BAD_REQUEST)), now=T0, health=health)
    assert (plan.provider, plan.delay, plan.reason) == ("b", 3.0, PlanReason.WAIT)


def test_an_exhausted_chain_says_so() -> None:
    last = attempt(1, "c", Signal.BAD_REQUEST)
    plan = plan_next(job(last), now=T0, health=ALL_UP)
    assert (plan.provider, plan.reason) == (None, PlanReason.EXHAUSTED)


def _live(state: AttemptState) -> Attempt:
    import dataclasses

    return dataclasses.replace(
        attempt(1, "a", None), state=state, deadline_at=T0 + timedelta(seconds=30)
    )


def test_waiting_on_names_what_ends_every_kind_of_wait() -> None:
    runtimes, lookups = {"a": 600.0, "b": 600.0, "c": 600.0}, frozenset({"a"})
    blocked = dataclasses_replace(job(_live(AttemptState.UNKNOWN)), JobState.BLOCKED_UNKNOWN)
    waiting = waiting_on(blocked, max_runtime=runtimes, lookups=lookups)
    assert waiting["attempt"] == 1 and waiting["state"] == "unknown"
    assert waiting["ends_by"][0] == "provider_lookup" and waiting["ends_by"][-1] == "operator"
    assert waiting["ends_by"][1] == {"max_runtime": (T0 + timedelta(seconds=600)).isoformat()}
    running = dataclasses_replace(job(_live(AttemptState.RUNNING)), JobState.RUNNING)
    assert waiting_on(running, max_runtime=runtimes, lookups=lookups)["ends_by"][0] == "answer"
    assert waiting_on(job(), max_runtime=runtimes, lookups=lookups) == {"ends_by": ["worker_claim"]}
    done = dataclasses_replace(job(), JobState.SUCCEEDED)
    assert waiting_on(done, max_runtime=runtimes, lookups=lookups) is None


def dataclasses_replace(made: Job, status: JobState) -> Job:
    import dataclasses

    return dataclasses.replace(made, status=status)


def test_a_provider_whose_probe_is_in_flight_is_waited_for_a_while_not_polled_at_once() -> None:
    """A half-open breaker (another job's probe still running) is held, and the instant
    its cool-down ended is past: waiting "0 s" for it re-planned the job at once, over and
    over, until the probe reported (a hot loop of waiting events; found by the
    simulator's profile)."""
    health = {
        "a": (Availability.BREAKER_OPEN, T0 - timedelta(seconds=5)),  # half-open: probing
        "b": (Availability.BREAKER_OPEN, T0 + timedelta(seconds=9)),
        "c": (Availability.BREAKER_OPEN, T0 + timedelta(seconds=9)),
    }
    plan = plan_next(job(), now=T0, health=health)
    assert plan.reason is PlanReason.WAIT and plan.provider == "a"
    assert plan.delay == PROBE_RECHECK > 0


def test_a_content_filter_refusal_stops_the_chain_unless_the_policy_fails_over() -> None:
    """Failing over would route around a safety decision: off unless the policy says so."""
    filtered = attempt(1, "a", Signal.CONTENT_FILTERED)
    plan = plan_next(job(filtered), now=T0, health=ALL_UP)
    assert (plan.provider, plan.reason) == (None, PlanReason.CONTENT_FILTERED)
    opted_in = Policy(fail_over_on_content_filter=True)
    plan = plan_next(job(filtered, policy=opted_in), now=T0, health=ALL_UP)
    assert (plan.provider, plan.reason) == ("b", PlanReason.FAIL_OVER)
    other = attempt(1, "a", Signal.CONTEXT_LENGTH_EXCEEDED)  # not a safety decision
    assert plan_next(job(other), now=T0, health=ALL_UP).provider == "b"


def test_a_content_filter_refusal_fails_over_only_when_the_contract_agrees_too() -> None:
    """Policy and contract clause must both say so; either one saying stop stops."""
    filtered = attempt(1, "a", Signal.CONTENT_FILTERED)
    opted_in = job(filtered, policy=Policy(fail_over_on_content_filter=True))
    plan = plan_next(opted_in, now=T0, health=ALL_UP, contract_allows_filter_failover=False)
    assert (plan.provider, plan.reason) == (None, PlanReason.CONTENT_FILTERED)
    plan = plan_next(opted_in, now=T0, health=ALL_UP, contract_allows_filter_failover=True)
    assert plan.provider == "b"
    plan = plan_next(job(filtered), now=T0, health=ALL_UP, contract_allows_filter_failover=True)
    assert plan.provider is None  # the clause alone routes nothing around
