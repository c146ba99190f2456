"""`FakeProviders`: the one state both fakes share (ledger, scripts, time, hang releaser)
and the dispatcher that turns an HTTP request into an `Exchange` for a driver to play
(`fake_providers.transport` in-process, `fake_providers.asgi` over a socket).

Routes (one port, both APIs):

    POST /openai/v1/chat/completions          OpenAI Chat Completions
    POST /openai/v1/responses                 OpenAI Responses
    POST /openai/v1/embeddings                OpenAI Embeddings
    POST /anthropic/v1/messages               Anthropic Messages
    POST /anthropic/v1/messages/count_tokens  Anthropic token counting
    GET  /openai/v1/models, /anthropic/v1/models, stored chat completions and responses:
                                              fake_providers.retrieval
    /control/...                              the control API (fake_providers.control)
    /p/{name}/openai/..., /p/{name}/anthropic/...
                                              the same routes as the named fake provider
                                              {name}; the unprefixed ones are "default"

Which behaviour a completion request gets, first match wins: the model name
(``fake/<behaviour>``), then the most specific matching script, then success. A count
request (never scripted) answers its count, unless its model names ``server_error`` (a 500)
or ``malformed_body`` (a 200 count that cannot be read, by ``shape``: `_unreadable_count`).
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from fake_providers.anthropic_wire import AnthropicDialect
from fake_providers.behaviours import Behaviour, BehaviourName, bills
from fake_providers.control import handle_control
from fake_providers.embeddings import EmbeddingsDialect
from fake_providers.errors import InvalidInput
from fake_providers.gates import ModelGates
from fake_providers.ledger import (
    DEFAULT_CAPACITY,
    Ledger,
    LedgerEntry,
    image_sources,
    prompt_digest,
    response_format_of,
)
from fake_providers.nonce import find_nonce
from fake_providers.openai_wire import OpenAIDialect
from fake_providers.plans import (
    Exchange,
    FakeRequest,
    Head,
    Pause,
    Plan,
    Stall,
    Step,
    Trickle,
    plan,
    whole_response,
)
from fake_providers.prices import Price, PriceTable
from fake_providers.responses_wire import ResponsesDialect
from fake_providers.retrieval import ID_PREFIXES, STORABLE, ModelList, handle_retrieval
from fake_providers.scripts import Script, ScriptBook
from fake_providers.timing import BaseTime, RealTime, Releaser
from fake_providers.tokens import count_prompt_tokens
from fake_providers.tools import ChoiceMode, ToolChoice
from fake_providers.wire import (
    ANTHROPIC_PREFIX,
    CONTROL_PREFIX,
    OPENAI_PREFIX,
    Api,
    Dialect,
    ErrorKind,
    Ids,
    WireError,
    WireResponse,
    json_body,
)
from harness.core import models

log = logging.getLogger("fake_providers")

ATTEMPT_HEADER = models.ATTEMPT_HEADER.lower()
"""`harness.core.models.ATTEMPT_HEADER` as the fakes read it: both drivers hand over
header names lower-cased, as HTTP/2 and ASGI do."""
RETRY_COUNT_HEADER = "x-stainless-retry-count"
PROVIDER_PREFIX = "/p/"  # a named fake provider: /p/{name}/openai/..., /p/{name}/anthropic/...
DEFAULT_PROVIDER = "default"  # the provider name of the unprefixed routes
PROVIDER_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
SENDS_ITS_ANSWER = frozenset(
    {
        BehaviourName.SUCCESS,
        BehaviourName.MALFORMED_JSON,
        BehaviourName.HALLUCINATED_KEY,
        BehaviourName.PROSE_INSTEAD_OF_JSON,
        BehaviourName.WRONG_TYPES,
    }
)
"""Behaviours that send the answer they produced as it is, whole (`plans._answered` with
no fault): the ledger's `answer_sent`. A background request's answer is fetched, not
sent with the reply."""


@dataclass(frozen=True)
class _Route:
    dialect: Dialect
    counting: bool = False


_DIALECTS: Mapping[Api, Dialect] = {Api.OPENAI: OpenAIDialect(), Api.ANTHROPIC: AnthropicDialect()}
_ROUTES: Mapping[tuple[str, str], _Route] = {
    ("POST", f"{OPENAI_PREFIX}/v1/chat/completions"): _Route(_DIALECTS[Api.OPENAI]),
    ("POST", f"{OPENAI_PREFIX}/v1/responses"): _Route(ResponsesDialect()),
    ("POST", f"{OPENAI_PREFIX}/v1/embeddings"): _Route(EmbeddingsDialect()),
    ("POST", f"{ANTHROPIC_PREFIX}/v1/messages"): _Route(_DIALECTS[Api.ANTHROPIC]),
    ("POST", f"{ANTHROPIC_PREFIX}/v1/messages/count_tokens"): _Route(
        _DIALECTS[Api.ANTHROPIC], counting=True
    ),
}


class FakeProviders:
    """Both fake APIs behind one object: what they answer, and what they executed.

    One instance serves OpenAI and Anthropic alike, in-process or over a socket. It
    guarantees that every completion request it parses is recorded in `ledger` before
    any byte of the answer is played (so a dropped or hung answer is still counted as
    executed), that each request takes at most one scripted behaviour, and that
    `release()` ends every current hang. Thread-safe.
    """

    def __init__(
        self,
        *,
        time: BaseTime | None = None,
        ledger_capacity: int = DEFAULT_CAPACITY,
        providers: Iterable[str] | None = None,
        prices: PriceTable | Mapping[str, Price] | None = None,
    ) -> None:
        """`providers`: the names served under ``/p/{name}/...`` (None: any well-formed
        name); `prices`: the price table the ledger's ``cost_usd`` comes from."""
        self.providers = None if providers is None else tuple(_provider_names(providers))
        self.prices = prices if isinstance(prices, PriceTable) else PriceTable(prices)
        self.time: BaseTime = time if time is not None else RealTime()
        self.ledger = Ledger(self.time.now, capacity=ledger_capacity)
        self.scripts = ScriptBook()
        self.model_gates = ModelGates()
        self.models = ModelList()
        self.releaser = Releaser()

    # -- scripting -------------------------------------------------------------------

    def script(
        self,
        *behaviours: Behaviour | str,
        api: Api | str | None = None,
        model: str | None = None,
        attempt_id: str | None = None,
        then: Behaviour | str | None = None,
        provider: str | None = None,
    ) -> Script:
        """Queue behaviours for the next matching requests, in order; `provider` limits the
        script to one named fake provider (``default``: the unprefixed routes)."""
        return self.scripts.add(
            behaviours,
            api=api,
            model=model,
            attempt_id=attempt_id,
            then=then,
            provider=provider,
        )

    def release(self) -> None:
        """End every hang and stall now (teardown); later hangs still hang."""
        old, self.releaser = self.releaser, Releaser()
        old.release()

    def reset(self) -> None:
        """Forget scripts, timed faults' clocks, seen models and the ledger (with what it
        stored), and release hung requests."""
        self.scripts.clear()
        self.model_gates.clear()
        self.models.clear()
        self.ledger.clear()
        self.release()

    # -- dispatch --------------------------------------------------------------------

    def dispatch(self, request: FakeRequest) -> Exchange:
        if request.path.startswith(CONTROL_PREFIX):
            return handle_control(self, request, request.path[len(CONTROL_PREFIX) :])
        provider = DEFAULT_PROVIDER
        if request.path.startswith(PROVIDER_PREFIX):
            name, _, rest = request.path[len(PROVIDER_PREFIX) :].partition("/")
            if not self._serves(name):
                return self._no_provider(name)
            provider, request = name, replace(request, path=f"/{rest}")
        route = _ROUTES.get((request.method, request.path))
        if route is None:
            found = handle_retrieval(self, request)
            return found if found is not None else self._not_found(request)
        number = self.ledger.next_id()
        if route.counting:
            return self._count_tokens(route.dialect, request, number)
        return self._complete(route.dialect, request, number, provider)

    def _serves(self, name: str) -> bool:
        if self.providers is not None:
            return name in self.providers
        return PROVIDER_NAME.fullmatch(name) is not None and name != DEFAULT_PROVIDER

    def _no_provider(self, name: str) -> Exchange:
        known = "any name" if self.providers is None else ", ".join(self.providers) or "none"
        message = f"no fake provider named {name!r} (served: {known})"
        body = {"error": {"type": "not_found", "message": message}}
        response = WireResponse(
            status=404, headers=(("content-type", "application/json"),), body=json_body(body)
        )
        return whole_response(response)

    def _ids(self, dialect: Dialect, number: int) -> Ids:
        prefix = ID_PREFIXES[dialect.endpoint]
        return Ids(
            request_id=f"req_fake{number:08d}",
            message_id=f"{prefix}{number:08d}",
            created=int(self.time.now()),
        )

    def _not_found(self, request: FakeRequest) -> Exchange:
        request_id = f"req_fake{self.ledger.next_id():08d}"
        if request.path.startswith(OPENAI_PREFIX):
            path = request.path[len(OPENAI_PREFIX) :]
            response = _DIALECTS[Api.OPENAI].error(
                ErrorKind.NOT_FOUND, request_id, message=f"Invalid URL ({request.method} {path})"
            )
        elif request.path.startswith(ANTHROPIC_PREFIX):
            response = _DIALECTS[Api.ANTHROPIC].error(ErrorKind.NOT_FOUND, request_id)
        else:
            known = "/openai/v1/chat/completions, /anthropic/v1/messages, /control/..."
            body = {"error": {"type": "not_found", "message": f"no route; try {known}"}}
            response = WireResponse(
                status=404, headers=(("content-type", "application/json"),), body=json_body(body)
            )
        return whole_response(response)

    def _count_tokens(self, dialect: Dialect, request: FakeRequest, number: int) -> Exchange:
        ids = self._ids(dialect, number)
        try:
            req = dialect.parse(request.headers, request.body, counting=True)
        except WireError as exc:
            return whole_response(_refusal(dialect, ids, exc))
        counted = dialect.token_count(req, count_prompt_tokens(req.texts))
        asked = _count_fault(req.model) if counted is not None else None
        if asked is not None and asked.name is BehaviourName.SERVER_ERROR:
            return whole_response(dialect.error(ErrorKind.SERVER_ERROR, ids.request_id))
        body = json_body(counted)
        if asked is not None:
            body = _unreadable_count(asked.shape, counted or {})
        response = WireResponse(
            status=200, headers=dialect.headers(ids.request_id, sse=False), body=body
        )
        return whole_response(response)

    def _complete(
        self, dialect: Dialect, request: FakeRequest, number: int, provider: str
    ) -> Exchange:
        ids = self._ids(dialect, number)
        attempt_id = request.headers.get(ATTEMPT_HEADER)
        now = self.time.now()
        raw = _json_or_none(request.body)
        common = {
            "provider": provider,
            "nonce": find_nonce(raw),
            "temperature": _temperature(raw),
            "top_p": _number(raw, "top_p"),
            "stop": _stop(raw, "stop_sequences" if dialect.api is Api.ANTHROPIC else "stop"),
            "body_digest": hashlib.blake2b(request.body, digest_size=12).hexdigest(),
            "request_id": ids.request_id,
            "attempt_id": attempt_id,
            "provider_kind": dialect.api.value,
            "endpoint": dialect.endpoint,
            "sdk_retry_count": _int_or_none(request.headers.get(RETRY_COUNT_HEADER)),
            "received_at": now,
            "finished": False,
            "delivered": False,
        }
        try:
            req = dialect.parse(request.headers, request.body, counting=False)
            behaviour = self._choose(dialect.api, req.model, attempt_id, provider)
            if behaviour.name is BehaviourName.PREFILL_REJECTED and not req.prefill:
                behaviour = Behaviour(name=BehaviourName.SUCCESS, latency=behaviour.latency)
        except (WireError, InvalidInput) as exc:
            refusal = _refusal(dialect, ids, exc)
            self.ledger.record(
                LedgerEntry(
                    **common,
                    model=None,
                    behaviour="invalid_request",
                    stream=False,
                    status_code=refusal.status,
                    input_tokens=0,
                    output_tokens=0,
                    billed=False,
                    completes_at=now,
                    ends_at=now,
                    response=_json_or_none(refusal.body),
                )
            )
            return whole_response(refusal, ids.request_id)
        input_tokens = count_prompt_tokens(req.texts)
        planned: Plan = plan(behaviour, req, dialect, ids, input_tokens)
        if dialect.endpoint == "embeddings":  # a vector is no output text
            planned = replace(planned, output_tokens=0)
        self.models.seen(dialect.api, req.model)
        billed = bills(behaviour.name, stream=req.stream, cut_after=behaviour.cut_after)
        cost = self.prices.cost(req.model, input_tokens, planned.output_tokens) if billed else 0.0
        self.ledger.record(
            LedgerEntry(
                **common,
                model=req.model,
                behaviour=behaviour.name.value,
                stream=req.stream and not planned.whole,  # what it sent, not what was asked
                status_code=planned.status_code,
                input_tokens=input_tokens,
                output_tokens=planned.output_tokens,
                billed=billed,
                cost_usd=cost,
                prompt_sha256=prompt_digest(req.texts),
                max_tokens=req.max_tokens,
                parallel_tools=req.tool_use.parallel,
                tool_choice=_choice(req.tool_use.choice),
                images=image_sources(raw),
                tools=[t.name for t in req.tool_use.tools],
                strict_tools=[t.name for t in req.tool_use.tools if t.strict],
                tool_descriptions={
                    t.name: t.description for t in req.tool_use.tools if t.description is not None
                },
                response_format=response_format_of(
                    req.schema, req.json_mode, any_object_is_json_mode=dialect.api is Api.ANTHROPIC
                ),
                error_kind=planned.error_kind,
                completes_at=None if planned.duration is None else now + planned.duration,
                ends_at=ends_at(planned.steps, now),
                answer_sent=behaviour.name in SENDS_ITS_ANSWER and not req.background,
                retry_after=retry_after(planned.steps),
                response=planned.response,
                stored=req.store and behaviour.name in STORABLE,
                metadata=dict(req.metadata) if req.metadata else None,
            )
        )
        log.debug(
            "%s %s model=%s behaviour=%s",
            dialect.api.value,
            ids.request_id,
            req.model,
            behaviour.name.value,
        )
        return Exchange(steps=planned.steps, request_id=ids.request_id)

    def _choose(self, api: Api, model: str, attempt_id: str | None, provider: str) -> Behaviour:
        now = self.time.now()
        chosen = Behaviour.from_model(model)
        if chosen is not None:
            return self.model_gates.resolve(api, model, chosen, now, provider)
        chosen = self.scripts.take(api, model, attempt_id, now, provider)
        return chosen or Behaviour(name=BehaviourName.SUCCESS)


def ends_at(steps: Iterable[Step], received: float) -> float | None:
    """When an exchange that began at `received` ends, on the fakes' clock, played to a
    caller who keeps listening: after every pause before its last step (the last byte
    sent, the connection dropped, the caller's client failing), or after a trickle's
    whole run (then dropped); None when it stalls (only the caller's deadline or a
    release ends it). A caller who stops listening earlier ends it earlier."""
    at = received
    for step in steps:
        if isinstance(step, Stall):
            return None
        if isinstance(step, Pause):
            at += step.seconds
        elif isinstance(step, Trickle):
            at += step.interval * step.count
    return at


def retry_after(steps: Iterable[Step]) -> float | None:
    """The wait, in seconds, that an exchange's head asks for: its `retry-after-ms` where it
    carries one (the SDKs read it first), else its Retry-After; None without either."""
    head = next((s for s in steps if isinstance(s, Head)), None)
    sent = {} if head is None else {k.lower(): v for k, v in head.headers}
    try:
        if "retry-after-ms" in sent:
            return float(sent["retry-after-ms"]) / 1000
        return float(sent["retry-after"]) if "retry-after" in sent else None
    except ValueError:  # an HTTP date: the fakes send numbers only
        return None


def _refusal(dialect: Dialect, ids: Ids, exc: WireError | InvalidInput) -> WireResponse:
    if isinstance(exc, InvalidInput):
        return dialect.error(
            ErrorKind.INVALID_REQUEST, ids.request_id, message=str(exc), param="model"
        )
    return dialect.error(
        exc.kind, ids.request_id, message=exc.message, param=exc.param, code=exc.code
    )


def _provider_names(names: Iterable[str]) -> list[str]:
    checked = []
    for name in names:
        if PROVIDER_NAME.fullmatch(name) is None or name == DEFAULT_PROVIDER:
            raise InvalidInput(
                "providers",
                f"{name!r} is not a provider name (letters, digits, '_', '.', '-'; "
                f"not {DEFAULT_PROVIDER!r}, the unprefixed routes' name)",
            )
        checked.append(name)
    return checked


def _int_or_none(value: str | None) -> int | None:
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


def _temperature(body: object) -> float | None:
    """The sampling temperature a request body asked for (the same member in every
    dialect), when it is a number."""
    value = body.get("temperature") if isinstance(body, Mapping) else None
    return value if isinstance(value, int | float) and not isinstance(value, bool) else None


def _choice(choice: ToolChoice) -> str:
    """A request's tool choice as the ledger records it, alike for every API."""
    if choice.mode is ChoiceMode.NAMED:
        return f"tool:{choice.name}"
    return choice.mode.value


def _count_fault(model: str) -> Behaviour | None:
    """The fault a count request's model asks for: `server_error`, or `malformed_body`
    (any other behaviour, or a name that is none, is counted as usual: counting is never
    scripted)."""
    try:
        asked = Behaviour.from_model(model)
    except InvalidInput:
        return None
    faults = (BehaviourName.SERVER_ERROR, BehaviourName.MALFORMED_BODY)
    return asked if asked is not None and asked.name in faults else None


def _unreadable_count(shape: str | None, counted: Mapping[str, Any]) -> bytes:
    """A 200 count that cannot be read, by `malformed_body`'s shape: none, text that is not
    JSON; `no_finish`, the object without `input_tokens`; `array`, the object inside a
    list; `nonstring_text`, `input_tokens` as text; any other shape, as `no_finish`."""
    if shape is None:
        return b"count: not json"
    if shape == "array":
        return json_body([dict(counted)])
    if shape == "nonstring_text":
        return json_body({**counted, "input_tokens": str(counted.get("input_tokens"))})
    return json_body({k: v for k, v in counted.items() if k != "input_tokens"})


def _number(body: object, member: str) -> float | None:
    value = body.get(member) if isinstance(body, Mapping) else None
    return value if isinstance(value, int | float) and not isinstance(value, bool) else None


def _stop(body: object, member: str) -> list[str] | None:
    """The stop sequences a request body gives in `member` (one string or a list)."""
    value = body.get(member) if isinstance(body, Mapping) else None
    if isinstance(value, str):
        return [value]
    if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
        return list(value)
    return None


def _json_or_none(body: bytes) -> dict[str, Any] | None:
    try:
        found = json.loads(body)
    except ValueError:
        return None
    return found if isinstance(found, dict) else None
