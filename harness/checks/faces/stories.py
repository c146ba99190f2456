"""The bundled stories a gateway face can express, each played through the face's SDK.

A story scripts the fakes, makes its calls as an application would, and says what the
client must have received: the job's result as the answer's text, the SDK's exception
class and the error's shape and type, `Idempotent-Replayed`, the 202 at the wait bound,
an answer's ending, usage and stream events, and how many jobs and provider executions
the calls cost (read from the store and the fakes' ledger: what happened, not what the
gateway said). What a provider was asked (a tool turn sent back, an image's detail, the
sampling members) is read from the ledger and from the bodies the adapters sent
(`FaceStage.transport`), never from the job's input the face wrote. The history
checker then judges the same run as it judges a scenario (`harness.checks.faces.run`).

The expectations are written here, from the documented behaviour (docs/gateway.md),
never taken from the faces' code.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from fake_providers import Behaviour, BehaviourName
from harness.checks.faces.clients import FaceClient, Received, read_arguments, received, sdk_client
from harness.checks.faces.counting import asked_model, token_count
from harness.checks.faces.malformed import carried_members, harmless_values, malformed_requests
from harness.checks.faces.outage import database_outage
from harness.checks.faces.rendered import (
    CITY,
    ENDINGS,
    INVALID,
    TOOL_FORMAT,
    _code,
    _error_shape,
    _error_type,
    endings,
    error_table,
    image_parts,
    openapi,
    parameter_bounds,
    tool_round_trip,
    usage_not_given,
    words_then_call,
)
from harness.checks.faces.window import late_retry
from harness.scenarios.history import error_message

if TYPE_CHECKING:  # the judge never imports the gateway it judges: the stage is handed in
    from harness.checks.faces.stage import FaceStage

SETTLE_BOUND = 10.0
"""Seconds a story waits for a state the run must reach (an attempt becoming unknown, a
loser's late answer): far past what any declared timeout needs, and only a bound."""
POLL = 0.02


class Story:
    """One story: its name, what it shows, and how it is played (`play` returns what the
    client received wrongly; empty when it held). `allowed`: the gate's providers."""

    def __init__(
        self,
        name: str,
        summary: str,
        play: Callable[[Play], Awaitable[None]],
        *,
        allowed: frozenset[str] | None = None,
    ) -> None:
        self.name, self.summary, self.play, self.allowed = name, summary, play, allowed


@dataclass
class Play:
    """A story being played on one face: the stage, the face, and what went wrong."""

    stage: FaceStage
    face: FaceClient
    problems: list[str]
    notes: list[str]
    calls: list[str | None] = field(default_factory=list)  # each call's key, in order

    async def call(
        self,
        text: str = "hello",
        *,
        key: str | None = None,
        model: str = "chat",
        stream: bool = False,
        wait: float | None = None,
        retries: int = 0,
        token: str | None = None,
        extra: dict[str, Any] | None = None,
    ) -> Received:
        headers = {}
        if key is not None:
            headers["Idempotency-Key"] = f"{self.stage.namespace}/{key}"
        if wait is not None:
            headers["Prefer"] = f"wait={wait:g}"
        kw = {"token": token} if token else {}
        client = sdk_client(self.face, self.stage.wire, retries=retries, **kw)
        asked, client_index = _intent_digest(model, text, extra), len(self.calls)
        self.calls.append(key)
        self._record("invoke", key=key, client=client_index, fingerprint=asked)
        got = await received(
            self.face, client, model=model, text=text, stream=stream, headers=headers, extra=extra
        )
        job_id = _job_id(got)
        answer = {409: "conflict", 202: "created", 200: "created"}.get(got.status, "refused")
        if got.replayed:
            answer = "replayed"
        self._record(
            "ok" if job_id is not None or answer == "conflict" else "fail",
            key=key,
            client=client_index,
            answer=answer,
            job=None if job_id is None else f"job{job_id}",
        )
        return got

    def _record(self, type_: str, *, key: str | None, **fields: Any) -> None:
        """A keyed call as the client's create in the history (what the checker's I1
        and I2 read: one key answers one job; another intent under it is a conflict). A
        keyless call is a job of its own by design: no create the checker pairs by key."""
        if key is not None:
            now = self.stage.engine.clock.now()
            self.stage.history.op(now, "client:alice", type_, "create", key=key, **fields)

    def expect(self, holds: bool, message: str) -> None:
        if not holds:
            self.problems.append(message)

    def results(self) -> dict[int, str | None]:
        """Each job of the story by id: its result's text (None while it has none)."""
        return {
            j.id: (j.result or {}).get("text") if isinstance(j.result, dict) else None
            for j in self.stage.jobs()
        }

    def executions(self, provider_kind: str | None = None) -> int:
        entries = self.stage.fakes.ledger.entries()
        return sum(provider_kind in (None, e.provider_kind) for e in entries)

    def answered(self, got: Received, what: str) -> None:
        """`got` is a 200 whose text is its job's result (the job its Location names)."""
        self.expect(got.status == 200, f"{what}: status {got.status} ({got.error}), not 200")
        job_id = _job_id(got)
        results = self.results()
        self.expect(job_id in results, f"{what}: Location names no job of this owner")
        if job_id in results:
            self.expect(
                got.text == results[job_id],
                f"{what}: the client read {_short(got.text)}, the job's result is "
                f"{_short(results[job_id])}",
            )
        models = {(e.response or {}).get("model") for e in self.executed()}
        self.expect(
            got.model in models - {None, ""},
            f"{what}: the answer names model {got.model!r}, no provider answered as it "
            f"(the fakes answered as {sorted(map(str, models))})",
        )

    def counts(self, *, jobs: int, executions: int) -> None:
        found, ran = len(self.results()), self.executions()
        self.expect(found == jobs, f"{found} jobs for the story's calls, not {jobs}")
        self.expect(ran == executions, f"{ran} provider executions, not {executions}")

    def refused(
        self, got: Received, status: int, error: str, what: str, kind: str | None = None
    ) -> None:
        """`got` is the SDK's `error` with `status`, its body in the face's error shape
        (and, given `kind`, the error type docs/gateway.md's table names for it)."""
        self.expect(
            (got.status, got.error) == (status, error),
            f"{what}: the client got {got.status} {got.error}, not {status} {error}",
        )
        shape = _error_shape(self.face, got.body)
        self.expect(shape is None, f"{what}: {shape}")
        if kind is not None and shape is None:
            found = _error_type(self.face, got.body)
            self.expect(found == kind, f"{what}: the error's type is {found}, not {kind}")

    def read_well(self, got: Received, what: str) -> None:
        """What the SDK read holds nothing its API never answers."""
        for flaw in got.flaws:
            self.problems.append(f"{what}: {flaw}")

    def executed(self) -> list[Any]:
        """The fakes' ledger entries of the executions that answered (status 200)."""
        return [e for e in self.stage.fakes.ledger.entries() if e.status_code == 200]

    async def until(self, holds: Callable[[], bool], what: str) -> bool:
        """Wait (polling the store) until `holds`, at most `SETTLE_BOUND` seconds."""
        for _ in range(int(SETTLE_BOUND / POLL)):
            if holds():
                return True
            await asyncio.sleep(POLL)
        self.problems.append(f"never reached within {SETTLE_BOUND:g} s: {what}")
        return False


def _intent_digest(model: str, text: str, extra: dict[str, Any] | None) -> str:
    """What the client asked for, as a digest of its own (two calls asking the same have
    the same one): the checker tells intents apart by it."""
    intent = {k: v for k, v in (extra or {}).items() if k not in DELIVERY}
    asked = json.dumps([model, text, intent], sort_keys=True)
    return hashlib.sha256(asked.encode()).hexdigest()[:16]


DELIVERY = frozenset({"stream", "stream_options"})
"""The members that say how an answer is delivered, not what is asked (docs/gateway.md)."""


def _job_id(got: Received) -> int | None:
    location = got.headers.get("location", "")
    tail = location.rsplit("/", 1)[-1]
    return int(tail) if location.startswith("/v1/jobs/") and tail.isdigit() else None


def _short(text: str | None) -> str:
    return "nothing" if text is None else repr(text[:40] + ("..." if len(text) > 40 else ""))


# -- the stories ---------------------------------------------------------------------


async def double_click_with_key(p: Play) -> None:
    one, two = await asyncio.gather(p.call(key="k"), p.call(key="k"))
    p.answered(one, "first click")
    p.answered(two, "second click")
    p.expect(
        sorted([one.replayed, two.replayed]) == [False, True],
        "exactly one of the two clicks must carry Idempotent-Replayed: true "
        f"(got {one.replayed}, {two.replayed})",
    )
    p.counts(jobs=1, executions=1)


async def double_click_without_key(p: Play) -> None:
    one = await p.call()
    two = await p.call()
    p.answered(one, "first keyless click")
    p.answered(two, "second keyless click")
    p.expect(not one.replayed and not two.replayed, "a keyless first try is never a replay")
    p.expect(_job_id(one) != _job_id(two), "two keyless clicks answered from one job")
    p.counts(jobs=2, executions=2)


async def sdk_retry(p: Play) -> None:
    p.stage.wire.drop_next = 1  # the first answer is lost: the SDK retries the call
    got = await p.call(retries=1)
    tries = [x.retry_count for x in p.stage.wire.exchanges]
    p.expect(tries == ["0", "1"], f"the SDK's tries were numbered {tries}, not ['0', '1']")
    p.answered(got, "the retried call")
    p.expect(got.replayed, "the SDK's retry was not answered as a replay")
    p.counts(jobs=1, executions=1)


async def key_binds_intent(p: Play) -> None:
    first = await p.call("hello", key="k")
    other = await p.call("something else", key="k", retries=2)
    await p.call("hello", key="m")
    member = await p.call("hello", key="m", extra={"top_p": 0.5})
    # a member the engine's reading of the request does not keep binds the key too
    unread = {"user": "u-2"} if p.face.sdk == "openai" else {"metadata": {"user_id": "u-2"}}
    await p.call("hello", key="u")
    unread_member = await p.call("hello", key="u", extra=unread)
    p.answered(first, "the key's first call")
    p.refused(other, 409, "ConflictError", "the key with another body", INVALID)
    p.refused(member, 409, "ConflictError", "the key with another top_p")
    p.refused(unread_member, 409, "ConflictError", f"the key with another {next(iter(unread))}")
    want = "idempotency_key_reused" if p.face.sdk == "openai" else "invalid_request_error"
    p.expect(_code(p.face, other.body) == want, f"the conflict's code is not {want}")
    p.expect(
        other.headers.get("x-should-retry") == "false",
        "the conflict lacks x-should-retry: false",
    )
    p.expect(len(p.stage.wire.exchanges) == 6, "the SDK retried an answer no retry can change")
    p.counts(jobs=3, executions=3)


async def wait_bound(p: Play) -> None:
    p.stage.fakes.script("hang", api="openai")
    held = await p.call(key="slow", model="quick", wait=0.5)
    p.expect(held.status == 202, f"a call past its wait bound got {held.status}, not 202")
    body = held.body if isinstance(held.body, dict) else {}
    p.expect(body.get("object") == "gateway.job", "the 202's body is not a gateway.job")
    job_id = _job_id(held)
    p.expect(job_id is not None and body.get("job_id") == job_id, "the 202 names no job")
    p.expect(held.headers.get("retry-after") == "1", "the 202 lacks Retry-After: 1")
    if job_id is None:
        return
    engine = p.stage.engine
    if not await p.until(
        lambda: engine.get_job(job_id).attempts[0].state.value == "unknown",
        "the hung attempt timing out as unknown",
    ):
        return
    resolved = await p.stage.wire.handle_async_request(_resolve(job_id))
    p.expect(resolved.status_code == 200, f"resolving the unknown attempt: {resolved.status_code}")
    again = await p.call(key="slow", model="quick", wait=10)
    p.answered(again, "the same key after the resolution")
    p.expect(again.replayed, "the repeat was not answered as a replay")
    p.counts(jobs=1, executions=2)


async def waiter_leaves(p: Play) -> None:
    """Two callers wait on one job and the one with the shorter bound leaves first (its
    202) while the provider still works: the other still gets the answer when it comes.
    The order rests on a margin (the staying caller is sent 0.2 s first), not a barrier:
    a loaded machine can only make the leaver come first, which the story then plays as
    two waits one after the other, never as a failure."""
    p.stage.fakes.script(Behaviour(name=BehaviourName.SUCCESS, latency=1.0), api="openai")
    stays = asyncio.ensure_future(p.call(key="two", wait=10))
    await asyncio.sleep(0.2)
    leaves = await p.call(key="two", wait=0.2)
    got = await stays
    p.expect(leaves.status == 202, f"the caller bound to 0.2 s got {leaves.status}, not 202")
    p.answered(got, "the caller that stayed after the other left")
    p.counts(jobs=1, executions=1)


async def cancelled_job(p: Play) -> None:
    """A job its owner cancelled answers its key with 409 `job_cancelled`, which the SDK
    does not retry (docs/gateway.md, "Errors"), and never runs again."""
    p.stage.fakes.script("hang", api="openai")
    held = await p.call(key="cancelled", wait=0)
    p.expect(held.status == 202, f"a call asking not to wait got {held.status}, not 202")
    job_id = _job_id(held)
    if job_id is None:
        return
    cancelled = await p.stage.wire.handle_async_request(_cancel(job_id))
    p.expect(cancelled.status_code == 200, f"cancelling the job: {cancelled.status_code}")
    asked = len(p.stage.wire.exchanges)
    again = await p.call(key="cancelled", retries=2)
    p.refused(again, 409, "ConflictError", "the key of a cancelled job", INVALID)
    want = "job_cancelled" if p.face.sdk == "openai" else INVALID
    p.expect(_code(p.face, again.body) == want, f"the cancelled job's code is not {want}")
    p.expect(len(p.stage.wire.exchanges) == asked + 1, "the SDK retried a cancelled job")
    p.counts(jobs=1, executions=1)  # the hung call, never another


def _cancel(job_id: int) -> Any:
    import httpx2

    from harness.checks.faces.clients import BASE_URL, TOKEN

    return httpx2.Request(
        "POST",
        f"{BASE_URL}/v1/jobs/{job_id}/cancel",
        json={"reason": "the user gave up"},
        headers={"Authorization": f"Bearer {TOKEN}"},
    )


def _resolve(job_id: int) -> Any:
    import httpx2

    from harness.checks.faces.clients import BASE_URL, TOKEN

    return httpx2.Request(
        "POST",
        f"{BASE_URL}/v1/jobs/{job_id}/attempts/1/resolve",
        json={"outcome": "failed", "reason": "operator: the provider dropped it", "force": True},
        headers={"Authorization": f"Bearer {TOKEN}"},
    )


async def reverse_order(p: Play) -> None:
    p.stage.fakes.script(Behaviour(name=BehaviourName.SUCCESS, latency=0.6), api="openai")
    got = await p.call(key="race", model="hedged")
    p.answered(got, "the hedged call")
    engine = p.stage.engine
    job_id = _job_id(got)
    if job_id is None:
        return
    await p.until(
        lambda: all(
            a.state.value not in ("starting", "running") for a in engine.get_job(job_id).attempts
        ),
        "every attempt of the hedged job finishing",
    )
    job = engine.get_job(job_id)
    if (job.result or {}).get("provider") != "fallback" or p.executions() != 2:
        p.notes.append("not reached: the hedge did not win before the first attempt answered")


async def failover_through_gate(p: Play) -> None:
    p.stage.fakes.script("server_error", api="openai", then="server_error")  # an outage
    got = await p.call(key="fo")
    p.answered(got, "the failed-over call")
    jobs = p.stage.jobs()
    p.expect(
        [(j.result or {}).get("provider") for j in jobs] == ["fallback"],
        "the fallback's answer did not win",
    )
    p.expect(p.executions("anthropic") == 1, "the fallback did not execute exactly once")
    p.expect(len(jobs) == 1, f"{len(jobs)} jobs for one call")


async def gate_refuses(p: Play) -> None:
    p.stage.fakes.script("server_error", api="openai", then="server_error")  # an outage
    got = await p.call(key="refused", retries=2)
    p.refused(
        got, 502, "InternalServerError", "a job whose only allowed provider failed", "api_error"
    )
    p.expect(got.headers.get("x-should-retry") == "false", "the 502 lacks x-should-retry: false")
    p.expect(len(p.stage.wire.exchanges) == 1, "the SDK retried a failed job")
    p.expect(p.executions("anthropic") == 0, "the unverified fallback was called")
    p.expect(len(p.stage.jobs()) == 1, "one call made other than one job")


async def failed_stream(p: Play) -> None:
    """A streamed call whose job fails ends its stream with the API's error event, which
    the SDK raises as an error (docs/gateway.md, "Streaming"): never an answer."""
    # an outage that changes its words: the error must name the last attempt's
    p.stage.fakes.script("service_unavailable", api="openai", then="server_error")
    got = await p.call(key="failed-stream", stream=True)
    p.expect(got.error is not None, f"a failed job's stream read as an answer: {got.text!r}")
    p.expect(got.text is None, "a failed job's stream carried text")
    shape = _error_shape(p.face, got.body)
    p.expect(shape is None, f"the stream's error event: {shape}")
    if shape is None:
        found = _error_type(p.face, got.body)
        p.expect(found == "api_error", f"the stream's error is {found}, not api_error")
        said = [error_message(e.response) or "" for e in p.stage.fakes.ledger.entries()]
        told = _message(p.face, got.body)
        p.expect(
            len(set(said)) > 1 and said[-1] in told and said[0] not in told,
            f"the stream's error says {told!r}: not the last attempt's error ({said[-1:]})",
        )
    if p.face.sdk == "openai" and shape is None:
        code = _code(p.face, got.body)
        p.expect(code == "job_failed", f"the stream's error code is {code}, not job_failed")
    p.expect(p.executions("anthropic") == 0, "the unverified fallback was called")
    p.expect(len(p.stage.jobs()) == 1, "one call made other than one job")


def _message(face: FaceClient, body: Any) -> str:
    """An error's message: OpenAI's `message`, Anthropic's `error.message`."""
    inner = body if face.sdk == "openai" else (body or {}).get("error")
    message = inner.get("message") if isinstance(inner, dict) else None
    return message if isinstance(message, str) else ""


async def cut_stream(p: Play) -> None:
    p.stage.fakes.script("stream_cut", api="openai")
    # the fallback answers a second later: a client answered at the cut sees no winner, and a
    # face that answers there has a second to show it, on a busy machine too
    p.stage.fakes.script(Behaviour(name=BehaviourName.SUCCESS, latency=1.0), api="anthropic")
    got = await p.call("tell me a story", key="cut", stream=True)
    p.answered(got, "the streamed call")
    jobs = p.stage.jobs()
    if jobs:
        p.expect(
            (jobs[0].result or {}).get("provider") == "fallback",
            "the cut stream's attempt won",
        )
    p.counts(jobs=1, executions=2)


SCHEMA_FORMAT: dict[str, Callable[[], dict[str, Any]]] = {
    "openai": lambda: {
        "response_format": {
            "type": "json_schema",
            "json_schema": {"name": "city", "schema": CITY, "strict": True},
        }
    },
    "openai.responses": lambda: {
        "text": {"format": {"type": "json_schema", "name": "city", "schema": CITY, "strict": True}}
    },
    "anthropic": lambda: {"output_config": {"format": {"type": "json_schema", "schema": CITY}}},
}
"""How each face's request carries a JSON schema (docs/gateway.md, its SDK's shape)."""


def _conforms(text: str | None) -> bool:
    """The text is JSON holding exactly what `CITY` allows (stated here, not validated by
    anything the gateway uses)."""
    try:
        value = json.loads(text or "")
    except ValueError:
        return False
    return isinstance(value, dict) and set(value) == {"city"} and isinstance(value["city"], str)


async def structured_output(p: Play) -> None:
    p.stage.fakes.script("server_error", api="openai", then="server_error")  # an outage
    shape = SCHEMA_FORMAT.get(p.face.name) or SCHEMA_FORMAT[p.face.sdk]
    got = await p.call("where is it warm?", key="schema", extra=shape())
    p.answered(got, "the call with a JSON schema")
    p.expect(_conforms(got.text), f"the answer does not keep the schema: {_short(got.text)}")
    p.expect(p.executions("anthropic") == 1, "the schema's call did not fail over once")


CALL_LAYOUT = {
    "openai.chat": ("tool_call",),
    "openai.responses": ("function_call",),
    "anthropic.messages": ("tool_use",),
}
"""A forced call's answer holds the call alone: no message content (Chat Completions'
`content` null), no message item, no text block (docs/gateway.md, "a call, answered")."""


async def tool_call(p: Play) -> None:
    for stream in (False, True):
        what = f"the {'streamed' if stream else 'whole'} call with a tool"
        p.stage.fakes.script("server_error", api="openai", then="server_error")  # an outage
        got = await p.call(
            "what is the weather?",
            key=f"tool-{stream}",
            stream=stream,
            extra=TOOL_FORMAT[p.face.name](),
        )
        p.expect(got.status == 200, f"{what}: status {got.status} ({got.error}), not 200")
        names = [name for name, _ in got.tools]
        p.expect(names == ["get_weather"], f"{what}: the client read the tool calls {names}")
        ending = ENDINGS[p.face.name]["tool"]
        p.expect(got.ending == ending, f"{what}: it ended {got.ending}, not {ending}")
        layout = CALL_LAYOUT[p.face.name]
        p.expect(got.layout == layout, f"{what}: the answer is laid out {got.layout}, not {layout}")
        p.expect(
            all(_conforms(json.dumps(args)) for _, args in got.tools),
            f"{what}: arguments that do not keep the tool's schema: {got.tools!r:.120}",
        )
        job_id = _job_id(got)
        stored = next((j.result for j in p.stage.jobs() if j.id == job_id), None) or {}
        kept = [
            (c.get("name"), read_arguments(c.get("arguments")))
            for c in stored.get("tool_calls", [])
        ]
        p.expect(
            kept == list(got.tools),
            f"{what}: the client read {got.tools!r:.80}, the job's result holds {kept!r:.80}",
        )
    p.expect(p.executions("anthropic") == 2, "each tool call did not fail over exactly once")
    # the first call's two failures and the second's one open the primary's breaker (3):
    # the second call's retry skips it
    p.counts(jobs=2, executions=5)


async def refusals(p: Play) -> None:
    anthropic = p.face.sdk == "anthropic"
    denied = await p.call(token="not-a-token", key="r1")
    unauthorised = "authentication_error" if anthropic else INVALID
    p.refused(denied, 401, "AuthenticationError", "an unknown token", unauthorised)
    missing = await p.call(model="gpt-9", key="r2")
    unknown = "not_found_error" if anthropic else INVALID
    p.refused(missing, 404, "NotFoundError", "an unknown model", unknown)
    bad = await p.call(key="r3", extra={"temperature": 7})
    p.refused(bad, 400, "BadRequestError", "a temperature out of range", INVALID)
    below = await p.call(key="r4", extra={"top_p": -0.5})
    p.refused(below, 400, "BadRequestError", "a top_p below 0", INVALID)
    # a refused member is refused at every value but the one that asks for nothing
    thinking = {"type": "enabled", "budget_tokens": 1024}
    member, value = ("thinking", thinking) if anthropic else ("store", True)
    asked = await p.call(key="r5", extra={member: value})
    p.refused(asked, 400, "BadRequestError", f"{member}: {value!r}", INVALID)
    if anthropic:  # a tool_use block is the assistant's; a user's is refused, not dropped
        use = {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {}}
        said = [{"role": "user", "content": [{"type": "text", "text": "hi"}, use]}]
        misplaced = await p.call(key="r6", extra={"messages": said})
        p.refused(misplaced, 400, "BadRequestError", "a user's tool_use block", INVALID)
    listed = await sdk_client(p.face, p.stage.wire).models.list()
    names = {m.id for m in listed.data}
    p.expect({"chat", "quick", "hedged"} <= names, f"the model list lacks the routes: {names}")
    for m in listed.data:  # docs/gateway.md: each named by itself, created at the epoch
        shown = (m.display_name, m.created_at.timestamp()) if anthropic else (m.owned_by, m.created)
        meant = (m.id, 0) if anthropic else ("harness", 0)
        p.expect(shown == meant, f"model {m.id} is listed as {shown}, not {meant}")
    if anthropic and listed.data:  # Anthropic's list names its first and last model
        ends = (listed.first_id, listed.last_id)
        want = (listed.data[0].id, listed.data[-1].id)
        p.expect(ends == want, f"the list's first and last ids are {ends}, not {want}")
    p.counts(jobs=0, executions=0)


STORIES: tuple[Story, ...] = (
    Story(
        "double-click-with-key",
        "two clicks with one key: one job, one answer",
        double_click_with_key,
    ),
    Story("double-click-without-key", "two keyless clicks: two jobs", double_click_without_key),
    Story("sdk-retry", "a lost answer retried by the SDK: a replay, not a job", sdk_retry),
    Story(
        "late-retry",
        "a keyless SDK retry past the retry window: a new job, not an old answer",
        late_retry,
    ),
    Story("key-binds-intent", "a key with another body: 409, never retried", key_binds_intent),
    Story("wait-bound", "timeout, unknown, 202 at the bound, then the replay answers", wait_bound),
    Story(
        "waiter-leaves",
        "one of two callers on a job leaves at its bound: the other still gets the answer",
        waiter_leaves,
    ),
    Story(
        "cancelled-job",
        "the key of a job its owner cancelled: 409 job_cancelled, never retried",
        cancelled_job,
    ),
    Story("reverse-order", "a hedge finishes first: its answer, once", reverse_order),
    Story(
        "failover-through-gate",
        "the primary fails; the allowed fallback answers",
        failover_through_gate,
    ),
    Story(
        "gate-refuses",
        "the primary fails; the unverified fallback is never called: 502",
        gate_refuses,
        allowed=frozenset({"primary"}),
    ),
    Story(
        "failed-stream",
        "a streamed call whose job fails: the API's error event, raised by the SDK",
        failed_stream,
        allowed=frozenset({"primary"}),
    ),
    Story("cut-stream", "a cut stream never reaches the client", cut_stream),
    Story(
        "structured-output",
        "a JSON schema kept across a failover to another provider kind",
        structured_output,
    ),
    Story(
        "tool-call",
        "a forced tool call, whole and streamed, kept across a failover to another kind",
        tool_call,
    ),
    Story("refusals", "401, 404, 400 in the face's shape, no job; the routes listed", refusals),
    Story(
        "endings",
        "each ending, its usage and its stream's events, as the face's API says them",
        endings,
    ),
    Story(
        "usage-not-given",
        "a provider's answer without usage: 0 tokens read, never a guess",
        usage_not_given,
    ),
    Story(
        "words-then-call",
        "a few words then a tool call: the text first, then the call, whole and streamed",
        words_then_call,
    ),
    Story(
        "tool-round-trip",
        "a tool call and its result sent back reach the provider",
        tool_round_trip,
    ),
    Story("image-parts", "an image part, with its detail, reaches the provider", image_parts),
    Story("openapi", "/openapi.json documents the face as the docs say", openapi),
    Story(
        "error-table",
        "a wrong method, path, Content-Type or size: the documented status and type",
        error_table,
    ),
    Story(
        "malformed-requests",
        "each bad input: 400 in the face's shape naming its member, no job",
        malformed_requests,
    ),
    Story(
        "carried-members",
        "system prompts, a tool's description, formats and earlier turns reach the provider",
        carried_members,
    ),
    Story(
        "parameter-bounds",
        "sampling members accepted at their bounds and carried, refused past them",
        parameter_bounds,
    ),
    Story("token-count", "a provider's token count read, an unreadable one refused", token_count),
    Story("asked-model", "a model asked for by name is the one the outcome names", asked_model),
    Story("database-outage", "the database down: 503 api_error, its own message", database_outage),
    Story(
        "harmless-values",
        "each refused member at its harmless value accepted, at another refused",
        harmless_values,
    ),
)
"""Every story, in the order they are played (per face)."""
