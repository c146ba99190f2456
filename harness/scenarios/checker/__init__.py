"""The history checker: I1-I11 judged on a whole scenario history, each violation with a
minimal witness (the fewest history entries that show it).

Pure: a history mapping (`History.to_dict()`, or one rebuilt from API responses) in,
findings out. Every check states a property of a correct engine in general (DESIGN.md's
invariants and the outcome table of docs/providers.md), never the shape of one
scenario, so it also judges random runs that carry no expectations. A check whose data
is missing from the history (an HTTP target sees less) says nothing.

The checks, by invariant (a property the design states outside I1-I11 is attached to
the closest one and says which in its message):

- I1 one job per intent: every accepted create of one (owner, key) answers one job.
- I2 key binds intent: another intent under a used key is never accepted; the same
  intent is never a conflict; a conflict needs another intent accepted under the same
  owner's key (a conflict out of nowhere). *Bounded history*: a burst of the same
  conflict (or refused failover, I7) is one event.
- I3 one live attempt: never more live attempts than the job's policy allows. *Live
  slots*: each live attempt holds a slot below that bound that no other live attempt of
  its job holds (the database's unique index enforces I3 with them).
- I4 timeout is unknown: nothing starts beside an unknown attempt; an unknown attempt
  never fails without a resolution; only an attempt that is unknown is resolved.
  *Outcome table*: an attempt never becomes unknown for a signal the outcome table
  calls not executed or executed unusable (a provider's own 500/503/529, a 429, a cut
  stream), nor stays unknown after its own call answered so; a call answered with an
  HTTP error records the cause its status names (a 408 `request_timeout`). *Refusals
  true* (`winners`): a fallback click refused for an unknown attempt comes after one of
  the job's attempts became unknown, and one refused for a finished job after the job
  finished. *Evidence kept* (`winners`): an error a call answered after its attempt had
  moved on (an `observed` event) leaves the attempt carrying an error text, and that
  event, like a `became_unknown` its call's answer caused, keeps the call's evidence.
  *Hedges told* (`winners`): a worker's start beside live attempts of its job names them.
- I5 exactly one winner: one `won` per job; the winner and the result never change; a
  won job is succeeded; a finished job's version has moved past the one its create
  answered; every result offered to a job (a call that answered executed, a
  `succeeded` resolution) is either the job's or a `discarded_late_result`, and an
  executed answer stays on its attempt (*nothing lost*: a loser's kept for audit), and
  no attempt keeps a result nothing offered it (*nothing borrowed*); only a lost call
  is aborted (an `attempt_call_aborted` comes after an event that ended its attempt).
  *Outcome table*: only an attempt whose own call answered executed (or that a
  `succeeded` resolution settled) wins: never a cut stream or a garbled body.
- I6 fencing: never a fenced attempt wins; when a job is won every other live attempt
  is superseded or cancelled at that instant, and when it is cancelled none is left
  live; nothing wins a job that was cancelled or failed, and a cancelled job stays so.
- I7 contract-gated failover (with the verdict gate): no attempt on a provider past the
  first of the chain starts before a passing verdict for it (ordered by the history's
  operation numbers where the attempt's call is recorded). *The chain kept*: every
  attempt runs on a provider of its job's chain. *Refusals counted*: the
  failovers the gate refused a job are counted on that job, each once (no fewer than
  the clicks the gate refused and the events shown; where no worker refused, no more
  than those clicks), and on no other.
  *Verdicts listed*: the verdict list an operator reads for each provider (the
  contract's, `harness contracts verdicts --provider P`) holds exactly the verdicts the
  run recorded for that provider.
- I8 attributable side effects: every execution maps to exactly one attempt.
  *Output cap*: no execution answers more output tokens than the `max_tokens` the
  job's create asked for. *Model recorded*: an attempt that reached a provider records
  the model its request named. *Prompt sent* (`intents`): when the system prompt the
  engine documents for a job's intent (its input's `system`, else `operation: OP`)
  carries a probe nonce, every execution for the job is found to carry it.
  *Outcome table, Retry-After*: a worker's retry of the same provider after a 429 with
  Retry-After R (or a provider's own 5xx / 429 without it: the policy's back-off) never
  starts before the refusal's time + R; and no worker plans an attempt on a provider,
  for any job, before the latest such hold it asked for has ended.
- I10 isolation: an owner is never handed another owner's job (by a read or a create;
  a job of another run is marked as another owner's), one job is never answered to two
  owners, and a key another owner used never makes a conflict.
- I11 liveness: a finished job keeps nothing live, fails only with nothing live, and
  starts nothing after it finished; an open job has something that will move it.
  *Breaker*: `failures` definite failures of a provider within `window` open its
  breaker (a `breaker_opened` event), and while it is open (`cool_down`) no worker
  plans an attempt on it; the failures the provider list shows (`GET /v1/providers`,
  read by the second observer) are no more than those since the provider's last
  executed answer or opening (*breaker count shown*). *Max runtime*: an unknown attempt whose
  worker lived on is no longer unknown at its provider's maximum runtime. *Sweep*: a
  sweep that runs at or after a starting or running attempt's deadline leaves it
  running no longer. *A wait's end*: a claim round that runs at or after a pending
  job's wait ended (for a started job, a sweep too) moves the job on.

*Ground truth* (`ground`): what each attempt records of its provider call is judged
against the exchange the fakes' ledger recorded for it, by the checker's own table
(`oracle`), never by what the adapter or the engine said: the kind the fake's ending
makes the call (a reset before the head is unknown, never failed; I4, I5), the cause and
status an HTTP error names (any other status recorded, as sent) and a 429's Retry-After
as sent (I4, I8), on the event and the settled row, a call aborted once at most (I8),
and a resolution by the call's late answer or by the provider's lookup as the fake's
ending and work make it (a lookup's `failed` for billed work would run it again: I8),
and a lookup knowing a call as the ledger held it then (known only if received, and
whenever received before: I4); the attempt started no later than its request was
received, and its record of the answer is no earlier than the exchange ended (I8); the
error text names the status the fake sent (and its message, where the ledger keeps it),
the bytes received it records are the bytes its caller read (where the ledger counts
them: the in-process fakes), and no recorded text carries a credential (I4); a job won
by its winner's own answer holds what the fake delivered (I5).

*The second observer* (`observers`): each job as its owner reads it through the HTTP API
(status, version, winner, attempts, events in order) is the job the engine recorded
(I5), and another owner asking the API for it is answered 404 (I10). The fingerprint it
shows is the documented one (`intents`, I2: the checker's own statement of the
algorithm) of the intent the job's create sent.

I9 (durability across a crash) is judged by the runs that crash: a job acknowledged
before it must be found after it.

The package, one module per property family: `history` (reading a history, the findings;
no property), `keys` (I1, I2, I10), `outcomes` (the outcome table: I4, I5, I8),
`ground` (each attempt's record of its call against the ledger: I4, I5, I8),
`winners` (I3, I4, I5, I6, I7: live bound, winners, fencing, the gate), `intents`
(the documented fingerprint, I2; the prompt sent, I8), `timing`
(Retry-After, the breaker, max runtime, the sweep), `liveness` (I11) and `observers`
(the API's view against the engine's: I5, I10).
"""

from __future__ import annotations

from collections.abc import Mapping as _Mapping
from typing import Any as _Any

from harness.scenarios.checker.ground import (
    _aborted_once,
    _ended_after_the_exchange,
    _error_as_sent,
    _evidence_as_read,
    _lookups_as_received,
    _no_socket_in_process,
    _recorded_as_sent,
    _resolved_as_sent,
    _winner_text_as_sent,
)
from harness.scenarios.checker.history import EPSILON, REAL_TIME, Check, Entry, Finding, describe
from harness.scenarios.checker.intents import _documented_fingerprint, _prompt_sent
from harness.scenarios.checker.keys import (
    _bursts_once,
    _conflict_grounds,
    _isolated,
    _one_job_per_intent,
)
from harness.scenarios.checker.liveness import _live_or_waiting, _moves_on_at_once, unsettled
from harness.scenarios.checker.observers import (
    _api_agrees,
    _api_isolated,
    _api_policy,
    _api_replays,
    _api_waits,
    _api_waits_on,
)
from harness.scenarios.checker.oracle import DEFINITE_SIGNALS
from harness.scenarios.checker.outcomes import (
    _attributable,
    _classified_as_sent,
    _definite_never_unknown,
    _executions_named,
    _kept_only_its_own,
    _late_results_recorded,
    _model_recorded,
    _named_by_status,
    _offered_results_kept,
    _output_capped,
    _winner_answered,
)
from harness.scenarios.checker.timing import (
    _breaker_count_shown,
    _breaker_judged,
    _holds_kept,
    _max_runtime_ends_unknowns,
    _retry_waits,
    _sweep_ends_expired,
    _waits_end,
)
from harness.scenarios.checker.winners import (
    _aborted_when_lost,
    _clean_wins_unexplained,
    _evidence_kept,
    _fenced_at_finish,
    _final_state_as_recorded,
    _gated,
    _hedges_told,
    _in_chain,
    _live_bound,
    _one_winner,
    _refusals_counted,
    _refusals_true,
    _unknown_blocks,
    _verdicts_listed,
    _version_moved,
)

__all__ = [
    "API_CHECKS",
    "DEFINITE_SIGNALS",
    "EPSILON",
    "HISTORY_CHECKS",
    "REAL_TIME",
    "Check",
    "Entry",
    "Finding",
    "check_history",
    "describe",
    "unsettled",
]


def check_history(history: _Mapping[str, _Any]) -> list[Finding]:
    """Every violation of I1-I8, I10 and I11 the history shows (see the module doc)."""
    found: list[Finding] = []
    for check in HISTORY_CHECKS:
        found.extend(check(history))
    return found


API_CHECKS: tuple[Check, ...] = (
    _api_agrees,
    _api_isolated,
    _api_policy,
    _api_replays,
    _api_waits,
    _api_waits_on,
    _documented_fingerprint,
)
"""The second observer's checks: they judge the history's `api` section alone."""

HISTORY_CHECKS: tuple[Check, ...] = (
    _one_job_per_intent,
    _conflict_grounds,
    _bursts_once,
    _live_bound,
    _unknown_blocks,
    _definite_never_unknown,
    _classified_as_sent,
    _named_by_status,
    _recorded_as_sent,
    _resolved_as_sent,
    _lookups_as_received,
    _error_as_sent,
    _evidence_as_read,
    _no_socket_in_process,
    _aborted_once,
    _ended_after_the_exchange,
    _one_winner,
    _aborted_when_lost,
    _winner_answered,
    _winner_text_as_sent,
    _fenced_at_finish,
    _final_state_as_recorded,
    _version_moved,
    _late_results_recorded,
    _offered_results_kept,
    _kept_only_its_own,
    _gated,
    _in_chain,
    _refusals_counted,
    _refusals_true,
    _verdicts_listed,
    _clean_wins_unexplained,
    _evidence_kept,
    _hedges_told,
    _attributable,
    _executions_named,
    _output_capped,
    _model_recorded,
    _prompt_sent,
    _retry_waits,
    _holds_kept,
    _isolated,
    _live_or_waiting,
    _moves_on_at_once,
    _breaker_judged,
    _breaker_count_shown,
    _max_runtime_ends_unknowns,
    _sweep_ends_expired,
    _waits_end,
    *API_CHECKS,
)
