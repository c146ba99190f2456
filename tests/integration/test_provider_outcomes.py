"""Every behaviour, through every adapter, in-process and over loopback,
maps to the right outcome kind (the tables themselves: tests/unit/test_provider_tables.py).

The expected kinds are written here independently of the adapters' tables. A behaviour
added to the fakes without a row here fails `test_every_behaviour_has_an_expected_outcome`
and every parametrised case for it (KeyError).
"""

from __future__ import annotations

import httpx
import pytest

from fake_providers import Behaviour, BehaviourName, FakeTransport
from fake_providers.behaviours import TRANSPORT_FAULTS, bills
from harness.providers import CompletionRequest, Message, OutcomeKind, Signal
from tests.support.fakes import CALLER_ENDS, IN_PROCESS_ROOT, Target

ADAPTER_KINDS = ("openai", "openai_compatible", "anthropic")
NOT = OutcomeKind.NOT_EXECUTED
UNUSABLE = OutcomeKind.EXECUTED_UNUSABLE
DONE = OutcomeKind.EXECUTED
UNKNOWN = OutcomeKind.UNKNOWN

# behaviour -> (OpenAI-style kinds, Anthropic)
EXPECTED: dict[BehaviourName, tuple[OutcomeKind, OutcomeKind]] = {
    BehaviourName.SUCCESS: (DONE, DONE),
    BehaviourName.HANG: (UNKNOWN, UNKNOWN),
    BehaviourName.ACCEPT_THEN_DROP: (UNKNOWN, UNKNOWN),
    BehaviourName.RATE_LIMIT: (NOT, NOT),
    BehaviourName.RATE_LIMIT_NO_RETRY_AFTER: (NOT, NOT),
    BehaviourName.SERVER_ERROR: (NOT, NOT),
    BehaviourName.SERVICE_UNAVAILABLE: (NOT, NOT),
    BehaviourName.OVERLOADED: (NOT, NOT),
    BehaviourName.RESET_BEFORE_HEADERS: (UNKNOWN, UNKNOWN),
    BehaviourName.STREAM_CUT: (UNUSABLE, UNUSABLE),
    BehaviourName.STREAM_STALL: (UNUSABLE, UNUSABLE),
    BehaviourName.STREAM_MALFORMED_CHUNK: (UNUSABLE, UNUSABLE),
    BehaviourName.STREAM_NO_DONE: (UNUSABLE, UNUSABLE),
    BehaviourName.STREAM_ERROR_EVENT: (NOT, NOT),  # whole: only an error (stream: below)
    BehaviourName.MALFORMED_BODY: (UNUSABLE, UNUSABLE),
    BehaviourName.CONTEXT_LENGTH_EXCEEDED: (NOT, NOT),
    BehaviourName.CONTENT_FILTER: (NOT, NOT),
    BehaviourName.MALFORMED_JSON: (DONE, DONE),
    BehaviourName.HALLUCINATED_KEY: (DONE, DONE),
    BehaviourName.PROSE_INSTEAD_OF_JSON: (DONE, DONE),
    BehaviourName.WRONG_TYPES: (DONE, DONE),
    BehaviourName.STREAM_CLOSED_EARLY: (UNUSABLE, UNUSABLE),
    BehaviourName.PREFILL_REJECTED: (DONE, DONE),  # no prefill here: the fault does not hold
    BehaviourName.STREAM_TRICKLE: (UNUSABLE, UNUSABLE),
    BehaviourName.STALL_AFTER_HEADERS: (UNUSABLE, UNUSABLE),
    BehaviourName.HTTP_ERROR: (NOT, NOT),  # the provider's own 401 (statuses: below)
    BehaviourName.GATEWAY_ERROR: (UNKNOWN, UNKNOWN),  # a gateway's 502 page
    BehaviourName.FOREIGN_SHAPE: (UNUSABLE, UNUSABLE),  # whole, even when streaming
    # the caller's own client failed (in-process; over a socket each is a reset: below)
    BehaviourName.CONNECTION_REFUSED: (NOT, NOT),
    BehaviourName.CONNECT_TIMEOUT: (NOT, NOT),
    BehaviourName.POOL_EXHAUSTED: (NOT, NOT),
    BehaviourName.PROXY_REFUSED: (NOT, NOT),
    BehaviourName.RESET_DURING_SEND: (UNKNOWN, UNKNOWN),
}

# The reason (Signal) where it does not depend on streaming.
EXPECTED_REASON: dict[BehaviourName, Signal] = {
    BehaviourName.SUCCESS: Signal.OK,
    BehaviourName.HANG: Signal.TIMEOUT_AFTER_SEND,
    BehaviourName.ACCEPT_THEN_DROP: Signal.CONNECTION_RESET,
    BehaviourName.RATE_LIMIT: Signal.RATE_LIMITED,
    BehaviourName.RATE_LIMIT_NO_RETRY_AFTER: Signal.RATE_LIMITED,
    BehaviourName.SERVER_ERROR: Signal.SERVER_ERROR,
    BehaviourName.SERVICE_UNAVAILABLE: Signal.UNAVAILABLE,
    BehaviourName.OVERLOADED: Signal.OVERLOADED,
    BehaviourName.RESET_BEFORE_HEADERS: Signal.CONNECTION_RESET,
    BehaviourName.STREAM_CUT: Signal.STREAM_CUT,
    BehaviourName.STREAM_STALL: Signal.STREAM_STALLED,
    BehaviourName.MALFORMED_BODY: Signal.MALFORMED_BODY,
    BehaviourName.CONTEXT_LENGTH_EXCEEDED: Signal.CONTEXT_LENGTH_EXCEEDED,
    BehaviourName.CONTENT_FILTER: Signal.CONTENT_FILTERED,
    BehaviourName.HTTP_ERROR: Signal.UNAUTHORIZED,
    BehaviourName.GATEWAY_ERROR: Signal.BAD_GATEWAY,
    BehaviourName.FOREIGN_SHAPE: Signal.MALFORMED_BODY,  # a body, to a stream request too
    BehaviourName.CONNECTION_REFUSED: Signal.CONNECT_FAILED,
    BehaviourName.CONNECT_TIMEOUT: Signal.CONNECT_TIMEOUT,
    BehaviourName.POOL_EXHAUSTED: Signal.POOL_TIMEOUT,
    BehaviourName.PROXY_REFUSED: Signal.NOT_SENT,
    BehaviourName.RESET_DURING_SEND: Signal.SEND_FAILED,
}

HANGS = CALLER_ENDS  # a short timeout for these, a generous one for the rest
SHORT_TIMEOUT, LONG_TIMEOUT = 0.3, 10.0


def test_every_behaviour_has_an_expected_outcome() -> None:
    assert set(EXPECTED) == set(BehaviourName)


def _request(stream: bool, attempt_id: str) -> CompletionRequest:
    return CompletionRequest(
        messages=(Message(role="user", content="Give me the answer as JSON."),),
        system="You answer in JSON.",
        json_schema={"type": "object", "properties": {"answer": {"type": "string"}}},
        stream=stream,
        attempt_id=attempt_id,
    )


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
@pytest.mark.parametrize("kind", ADAPTER_KINDS)
@pytest.mark.parametrize("behaviour", list(BehaviourName))
def test_behaviour_maps_to_outcome(target, behaviour, kind, stream) -> None:
    expected = EXPECTED[behaviour][1 if kind == "anthropic" else 0]
    if stream and behaviour is BehaviourName.STREAM_ERROR_EVENT:
        expected = UNUSABLE  # the error event follows content: it worked, nothing usable
    if stream and behaviour is BehaviourName.STREAM_NO_DONE:
        expected = DONE  # every chunk and the finish reason came; only the terminator not
    reason = EXPECTED_REASON.get(behaviour)
    if target.mode == "loopback" and behaviour in TRANSPORT_FAULTS:
        expected, reason = UNKNOWN, Signal.CONNECTION_RESET  # the request had arrived
    adapter = target.adapter(kind)
    attempt = f"{behaviour}-{kind}-{stream}"
    target.fakes.script(Behaviour(name=behaviour), attempt_id=attempt)

    timeout = SHORT_TIMEOUT if behaviour in HANGS else LONG_TIMEOUT
    outcome = adapter.complete(_request(stream, attempt), timeout=timeout)

    assert outcome.kind is expected, outcome
    assert outcome.provider == adapter.name
    if reason is not None:
        assert outcome.reason == reason.value, outcome
    (entry,) = target.fakes.ledger.entries(attempt_id=attempt)
    if behaviour is BehaviourName.PREFILL_REJECTED:
        behaviour = BehaviourName.SUCCESS  # the ledger names what the request got
    assert entry.behaviour == behaviour.value
    assert entry.billed is bills(behaviour, stream=stream)
    if expected in (UNUSABLE, DONE):  # it worked: the provider billed it
        assert entry.billed, entry
    if expected is NOT:  # the request is over and produced nothing
        assert not entry.billed, entry
    assert entry.stream is (stream and behaviour is not BehaviourName.FOREIGN_SHAPE)
    if expected is DONE:
        assert entry.delivered
        assert outcome.text
        assert outcome.request_id == entry.request_id
        assert outcome.finish_reason == "stop"
        assert outcome.usage["input_tokens"] == entry.input_tokens
    else:
        assert outcome.text is None
    if expected is UNKNOWN and behaviour not in _DELIVERED_BUT_BROKEN:
        assert not entry.delivered
    if behaviour is BehaviourName.RATE_LIMIT:
        assert outcome.retry_after == 1.0
    if behaviour is BehaviourName.RATE_LIMIT_NO_RETRY_AFTER:
        assert outcome.retry_after is None


# Whole responses that reached the caller yet are no answer (garbled, cut short by the
# provider itself, or an error after 200).
_DELIVERED_BUT_BROKEN = {
    BehaviourName.STREAM_MALFORMED_CHUNK,
    BehaviourName.STREAM_NO_DONE,
    BehaviourName.STREAM_CLOSED_EARLY,
    BehaviourName.STREAM_ERROR_EVENT,
    BehaviourName.MALFORMED_BODY,
    BehaviourName.SERVER_ERROR,
    BehaviourName.SERVICE_UNAVAILABLE,
    BehaviourName.OVERLOADED,
    BehaviourName.GATEWAY_ERROR,
}


# status -> (the signal of the provider's own error body, of a gateway's page)
STATUSES = {
    401: (Signal.UNAUTHORIZED, Signal.UNAUTHORIZED),
    403: (Signal.FORBIDDEN, Signal.FORBIDDEN),
    404: (Signal.NOT_FOUND, Signal.NOT_FOUND),
    408: (Signal.REQUEST_TIMEOUT, Signal.REQUEST_TIMEOUT),
    409: (Signal.CONFLICT, Signal.CONFLICT),
    413: (Signal.TOO_LARGE, Signal.TOO_LARGE),
    422: (Signal.UNPROCESSABLE, Signal.UNPROCESSABLE),
    418: (Signal.CLIENT_ERROR, Signal.CLIENT_ERROR),
    500: (Signal.SERVER_ERROR, Signal.INTERMEDIARY_ERROR),
    503: (Signal.UNAVAILABLE, Signal.INTERMEDIARY_ERROR),
    520: (Signal.OTHER_SERVER_ERROR, Signal.INTERMEDIARY_ERROR),
    502: (Signal.BAD_GATEWAY, Signal.BAD_GATEWAY),
    504: (Signal.GATEWAY_TIMEOUT, Signal.GATEWAY_TIMEOUT),
}


@pytest.mark.parametrize("kind", ADAPTER_KINDS)
def test_each_status_is_told_by_its_source(target, kind) -> None:
    """The provider's own error body makes a 5xx a refusal; the same status on an
    intermediary's HTML page leaves the call unknown (a 4xx refused it either way); a
    redirect to a login page is no answer at all."""
    adapter = target.adapter(kind)
    cases = [(BehaviourName.HTTP_ERROR, s, own) for s, (own, _) in STATUSES.items()]
    cases += [(BehaviourName.GATEWAY_ERROR, s, page) for s, (_, page) in STATUSES.items()]
    cases.append((BehaviourName.GATEWAY_ERROR, 302, Signal.UNEXPECTED_STATUS))
    for behaviour, status, signal in cases:
        attempt = f"{behaviour}-{status}-{kind}"
        target.fakes.script(Behaviour(name=behaviour, status=status), attempt_id=attempt)
        outcome = adapter.complete(_request(False, attempt), timeout=LONG_TIMEOUT)
        assert (outcome.reason, outcome.status_code) == (signal.value, status), attempt
        (entry,) = target.fakes.ledger.entries(attempt_id=attempt)
        assert not entry.billed and entry.status_code == status


@pytest.mark.parametrize("kind", ADAPTER_KINDS)
def test_an_error_as_the_first_stream_event_is_not_executed(target, kind) -> None:
    adapter = target.adapter(kind)
    script = Behaviour(name=BehaviourName.STREAM_ERROR_EVENT, cut_after=0)
    target.fakes.script(script, attempt_id="first")
    outcome = adapter.complete(_request(True, "first"), timeout=LONG_TIMEOUT)
    assert (outcome.kind, outcome.reason) == (NOT, Signal.ERROR_BEFORE_CONTENT.value), outcome
    (entry,) = target.fakes.ledger.entries(attempt_id="first")
    assert not entry.billed


@pytest.mark.parametrize("kind", ADAPTER_KINDS)
def test_clean_close_after_the_finish_chunk_is_a_complete_answer(target, kind) -> None:
    """A proxy that strips `data: [DONE]` (or `message_stop`): the last chunk carried
    the finish reason and usage, then the stream closed cleanly. A complete answer."""
    adapter = target.adapter(kind)
    target.fakes.script(Behaviour(name=BehaviourName.STREAM_NO_DONE), attempt_id="nodone")

    outcome = adapter.complete(_request(True, "nodone"), timeout=LONG_TIMEOUT)

    (entry,) = target.fakes.ledger.entries(attempt_id="nodone")
    assert outcome.kind is DONE, outcome
    assert outcome.reason == Signal.OK.value
    assert outcome.finish_reason == "stop"
    assert outcome.usage["output_tokens"] == entry.output_tokens
    assert outcome.evidence["terminator"] is False  # said, so nobody mistakes it for [DONE]


@pytest.mark.parametrize("kind", ADAPTER_KINDS)
def test_clean_close_before_the_finish_chunk_stays_unusable(target, kind) -> None:
    """The same clean close one chunk short of the finish reason is a truncated answer."""
    adapter = target.adapter(kind)
    script = Behaviour(name=BehaviourName.STREAM_NO_DONE, cut_after=1)
    target.fakes.script(script, attempt_id="short")

    outcome = adapter.complete(_request(True, "short"), timeout=LONG_TIMEOUT)

    assert outcome.kind is UNUSABLE, outcome
    assert outcome.reason == Signal.STREAM_INCOMPLETE.value
    assert "finish reason" in (outcome.error or "")
    assert outcome.text is None


@pytest.mark.parametrize("kind", ADAPTER_KINDS)
def test_a_wait_for_a_pooled_connection_ends_before_the_deadline(fakes, kind) -> None:
    """Nothing is sent while the pool is full: the wait is bounded like a connect
    (`connect_timeout`, 5 s), so it ends as `pool_timeout`, not executed, well before
    the call's 10 s deadline (where the worker's own deadline would make it unknown)."""
    client = httpx.Client(transport=FakeTransport(fakes))
    target = Target("in_process", fakes, IN_PROCESS_ROOT, client)
    fakes.script(Behaviour(name=BehaviourName.POOL_EXHAUSTED), attempt_id="pool")
    began = fakes.time.now()

    outcome = target.adapter(kind).complete(_request(False, "pool"), timeout=LONG_TIMEOUT)

    assert (outcome.kind, outcome.reason) == (NOT, Signal.POOL_TIMEOUT.value), outcome
    assert fakes.time.now() - began == pytest.approx(5.0)
