"""The bundled probes' rules on hand-made runs (no network): a verdict must not depend on
how fast the gateway happens to be on this machine, nor on `--time-scale`.

A gateway that ignores Retry-After calls the provider again as soon as it can; how soon is
its own latency, which on a busy machine (load 20+ on 2 cores) is longer than a short
Retry-After (1.5 s: the naive gateway's "at once" took longer at load 12 on 2 cores, and
passed). The probe can only tell "ignored" from "honoured" when the declared wait covers
the whole time its patient caller waits: then any second call during the run is early,
however slow the gateway was to make it.
"""

from __future__ import annotations

import pytest

from harness.probe.driver import ClientRecord, ProbeRun
from harness.probe.files import load_probe
from harness.probe.judge import judge
from harness.probe.ledger import Execution, parse_entry

RETRY_AFTER = load_probe("probes/rate-limit-retry-after.probe.yaml")
NONCE = "hxn-rrrrrrrrrrrrrrrr"
START = 1000.0
GATEWAY_TIMEOUT = 10.0  # what the built-in profiles state


def _entry(i: int, provider: str, behaviour: str, status: int, at: float) -> Execution:
    billed = status == 200
    model = f"gpt-{provider}"
    return parse_entry(
        {
            "request_id": f"req_{i}",
            "provider": provider,
            "behaviour": behaviour,
            "status_code": status,
            "model": model,
            "billed": billed,
            "cost_usd": 0.001 if billed else 0.0,
            "nonce": NONCE,
            "received_at": at,
            "stream": False,
            "response": {"choices": [{"message": {"content": "ok"}}], "model": model}
            if billed
            else {"error": {"type": "rate_limit_error"}},
        }
    )


def _caller_wait(scale: float) -> float:
    """How long the probe's patient caller waits for an answer at `scale` (its bound:
    the fault's seconds, scaled, plus the gateway's own timeouts, which are not)."""
    return RETRY_AFTER.answer_within.resolve(scale, GATEWAY_TIMEOUT)


def _run(scale: float, second: tuple[str, float]) -> ProbeRun:
    """The primary answers 429 at once; the gateway's next call goes to `second[0]`,
    `second[1]` seconds later, and that call's answer reaches the caller."""
    provider, after = second
    run = ProbeRun(
        probe=RETRY_AFTER,
        repeat=0,
        time_scale=scale,
        quiet_window=2.0,
        started_at=START,
        gateway_timeout=GATEWAY_TIMEOUT,
        bound=_caller_wait(scale),
    )
    run.nonces = {"a": NONCE}
    first_at = START + 0.01
    answered_at = first_at + after + 0.01
    run.ledger = [
        _entry(0, "primary", "rate_limit", 429, first_at),
        _entry(1, provider, "success", 200, first_at + after),
    ]
    common = {"intent": "a", "nonce": NONCE, "stream": False, "retry": False, "status": 200}
    run.records = [
        ClientRecord(seq=1, step=0, key=f"probe-{NONCE}", sent_at=START, ended_at=answered_at,
                     outcome="answer", text="ok", model=f"gpt-{provider}", complete=True,
                     **common)
    ]  # fmt: skip
    run.alive = ClientRecord(seq=2, step=None, key=None, sent_at=answered_at + 1,
                             ended_at=answered_at + 1.1, outcome="answer", text="x",
                             model="gpt-primary", **common)  # fmt: skip
    run.ended_at = answered_at + 1.2
    return run


def _verdict(run: ProbeRun, name: str) -> str:
    return next(j.verdict.value for j in judge(run) if j.name == name)


@pytest.mark.parametrize("scale", [0.5, 1.0])
def test_ignoring_retry_after_fails_however_slowly_the_gateway_calls_again(scale) -> None:
    """The same gateway (retry at once, Retry-After ignored) on an idle machine and on a
    busy one, where its 'at once' takes almost all of its caller's wait: both fail."""
    wait = _caller_wait(scale)
    for after in (0.03, wait / 2, wait - 0.1):
        run = _run(scale, ("primary", after))
        assert _verdict(run, "retry_after_honoured") == "fail", (scale, after)


@pytest.mark.parametrize("scale", [0.5, 1.0])
def test_failing_over_instead_of_calling_the_limited_provider_again_passes(scale) -> None:
    """The rule is not merely strict: the gateway that leaves the 429ing primary alone
    and answers from the fallback, at once or late, holds it."""
    for after in (0.03, _caller_wait(scale) - 0.1):
        run = _run(scale, ("fallback", after))
        assert _verdict(run, "retry_after_honoured") == "pass", (scale, after)


def test_a_gateway_that_no_longer_answers_fails_alive_with_its_witness() -> None:
    """Every failing property names what it saw: here the plain request that went
    unanswered after the fault."""
    run = _run(1.0, ("fallback", 0.03))
    assert run.alive is not None
    run.alive = ClientRecord(
        seq=2, step=None, intent="(alive)", nonce=NONCE, key=None, stream=False, retry=False,
        sent_at=run.alive.sent_at, ended_at=run.alive.sent_at + 0.01, outcome="error",
        status=503, detail="down since a provider failed",
    )  # fmt: skip
    alive = next(j for j in judge(run) if j.name == "alive")
    assert alive.verdict.value == "fail"
    assert [w["kind"] for w in alive.witness] == ["client"], alive
