"""The stories of what the gateway's faces read and render: endings and usage, a tool
turn sent back, image parts, the parameters' bounds, the error table and what
/openapi.json documents; and the error-shape readers and request tables the other
stories share (`harness.checks.faces.stories` plays them all).

The expectations are written here, from the documented behaviour (docs/gateway.md),
never taken from the faces' code.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from fake_providers import Behaviour, BehaviourName
from fake_providers.ledger import prompt_digest
from harness.checks.faces.clients import (
    FaceClient,
    Received,
)

if TYPE_CHECKING:
    from harness.checks.faces.stories import Play


def _error_shape(face: FaceClient, body: Any) -> str | None:
    """What is wrong with an error body as the face's SDK exposes it (None: it is the
    API's documented shape). The OpenAI SDKs expose the `error` member; the Anthropic
    SDK the whole `{"type": "error", "error": {...}}`."""
    if face.sdk == "openai":
        ok = isinstance(body, dict) and {"message", "type", "code"} <= set(body)
        return None if ok else f"the error body is not OpenAI's error shape: {body!r:.120}"
    inner = body.get("error") if isinstance(body, dict) else None
    ok = (
        isinstance(inner, dict)
        and body.get("type") == "error"
        and {"type", "message"} <= set(inner)
    )
    return None if ok else f"the error body is not Anthropic's error shape: {body!r:.120}"


def _error_type(face: FaceClient, body: Any) -> str | None:
    inner = body if face.sdk == "openai" else body.get("error")
    return inner.get("type") if isinstance(inner, dict) else None


def _code(face: FaceClient, body: Any) -> str | None:
    if face.sdk == "openai":
        return body.get("code") if isinstance(body, dict) else None
    inner = body.get("error") if isinstance(body, dict) else None
    return inner.get("type") if isinstance(inner, dict) else None


CITY = {
    "type": "object",
    "properties": {"city": {"type": "string"}},
    "required": ["city"],
    "additionalProperties": False,
}
"""The structured output's schema: one string member, nothing else."""

TOOL_FORMAT = {
    "openai.chat": lambda: {
        "tools": [{"type": "function", "function": {"name": "get_weather", "parameters": CITY}}],
        "tool_choice": {"type": "function", "function": {"name": "get_weather"}},
    },
    "openai.responses": lambda: {
        "tools": [{"type": "function", "name": "get_weather", "parameters": CITY}],
        "tool_choice": {"type": "function", "name": "get_weather"},
    },
    "anthropic.messages": lambda: {
        "tools": [{"name": "get_weather", "input_schema": CITY}],
        "tool_choice": {"type": "tool", "name": "get_weather"},
    },
}
"""How each face's request offers one tool (its arguments: `CITY`) and makes the model
call it (docs/gateway.md, its SDK's shape)."""


INVALID = "invalid_request_error"
"""The error type both APIs give a request they refuse (docs/gateway.md's table)."""
ENDINGS: dict[str, dict[str, str]] = {
    "openai.chat": {"stop": "stop", "length": "length", "tool": "tool_calls"},
    "openai.responses": {
        "stop": "completed",
        "length": "incomplete:max_output_tokens",
        "tool": "completed",
    },
    "anthropic.messages": {"stop": "end_turn", "length": "max_tokens", "tool": "tool_use"},
}
"""How each face's answer says why it ended (`finish_reason`, a response's `status`,
`stop_reason`), for an answer that ended by itself, one cut at its token limit and one
that calls a tool: the APIs' own words (docs/gateway.md)."""
LIMIT = {"openai.chat": "max_tokens", "openai.responses": "max_output_tokens"}
"""The member capping an answer's tokens (Messages: `max_tokens`, the default here)."""
STREAM_EVENTS = {
    "openai.chat": ("role", "content", "finish", "usage"),
    "openai.responses": (
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.content_part.added",
        "response.output_text.delta",
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.completed",
    ),
    "anthropic.messages": (
        "message_start",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
    ),
}
"""A text answer's stream, in order (each run of one kind as one; Anthropic's `ping` may
come anywhere): the chunks of Chat Completions (the role, the content, the finish, then
the usage asked for by `stream_options`), the Responses events, the Messages events."""
STREAM_USAGE = {"openai.chat": {"stream_options": {"include_usage": True}}}


def _limit(face: FaceClient) -> str:
    return LIMIT.get(face.name, "max_tokens")


def _runs(events: tuple[str, ...]) -> tuple[str, ...]:
    """The events with each run of one kind as one, and without `ping`s."""
    out: list[str] = []
    for event in events:
        if event != "ping" and (not out or out[-1] != event):
            out.append(event)
    return tuple(out)


def _usage_holds(p: Play, got: Received, entry: Any, what: str) -> None:
    """The client read the tokens the provider's execution counted (input, output) and,
    where the API gives one, their total."""
    given = None if entry is None else (entry.input_tokens, entry.output_tokens)
    read = got.usage[:2] if got.usage else None
    p.expect(read == given, f"{what}: the client read the usage {read}, the provider's {given}")
    total = got.usage[2] if got.usage else None
    if read is not None and total is not None:
        p.expect(total == sum(read), f"{what}: the total {total} is not {read[0]} + {read[1]}")


LONG = (
    "Once upon a time a gateway held every answer until it had won, then streamed it at "
    "once, in pieces: " + "x" * 90 + " and a word longer than any piece, then the end."
)
"""A story long enough to stream in several deltas, one word longer than any delta."""


async def endings(p: Play) -> None:
    said = ENDINGS[p.face.name]
    p.stage.fakes.script(Behaviour(name=BehaviourName.SUCCESS, content=LONG), api="openai")
    # a configured provider is a model of its own (a chain of one)
    whole = await p.call("tell me a story", key="end", model="primary")
    p.answered(whole, "a whole answer")
    p.expect(whole.text == LONG, f"a whole answer read {whole.text!r:.60}, not the provider's")
    p.read_well(whole, "a whole answer")
    p.expect(
        whole.ending == said["stop"], f"a whole answer ended {whole.ending}, not {said['stop']}"
    )
    done = p.executed()
    _usage_holds(p, whole, done[-1] if done else None, "a whole answer")
    streamed = await p.call(
        "tell me a story",
        key="end",
        model="primary",
        stream=True,
        extra=STREAM_USAGE.get(p.face.name),
    )
    what = "the same key streamed"
    p.answered(streamed, what)
    p.expect(streamed.text == LONG, f"{what} read {streamed.text!r:.60}, not the provider's")
    p.read_well(streamed, what)
    p.expect(streamed.replayed, f"{what} was not a replay")
    p.expect(streamed.ending == whole.ending, f"{what} ended {streamed.ending}, not {whole.ending}")
    p.expect(streamed.usage == whole.usage, f"{what}: usage {streamed.usage}, not {whole.usage}")
    order = _runs(streamed.events)
    p.expect(order == STREAM_EVENTS[p.face.name], f"{what}: the events came as {order}")
    cut = await p.call("tell me a story", key="cut", extra={_limit(p.face): 1})
    p.answered(cut, "an answer cut at 1 token")
    done = p.executed()
    entry = done[-1] if done else None
    p.expect(entry is not None and entry.max_tokens == 1, "the provider was not asked for 1 token")
    _usage_holds(p, cut, entry, "an answer cut at 1 token")
    if "length" in said:
        want = said["length"]
        p.expect(cut.ending == want, f"an answer cut at 1 token ended {cut.ending}, not {want}")
    p.stage.fakes.script(Behaviour(name=BehaviourName.SUCCESS, content=""), api="openai")
    empty = await p.call("say nothing", key="empty", model="primary")
    p.answered(empty, "an empty answer")
    layout = EMPTY_LAYOUT[p.face.name]
    p.expect(empty.layout == layout, f"an empty answer is laid out {empty.layout}, not {layout}")
    p.counts(jobs=3, executions=3)


EMPTY_LAYOUT = {
    "openai.chat": ("text",),
    "openai.responses": ("message",),
    "anthropic.messages": ("text",),
}
"""An answer of no text and no call is still a message: Chat Completions' `content` "",
a Responses message item, a Messages text block, each of empty text."""


async def usage_not_given(p: Play) -> None:
    """A provider answering with no `usage` (OpenAI's types let an answer leave it out):
    the face counts nothing it was not told, so the client reads 0 tokens in and out (and
    a total of 0 where the API has one), whole and streamed; never a guessed count."""
    p.stage.fakes.script(Behaviour(name=BehaviourName.SUCCESS, usage=False), api="openai")
    whole = await p.call("how long was this?", key="bare", model="primary")
    p.answered(whole, "an answer without usage")
    p.read_well(whole, "an answer without usage")
    done = p.executed()
    sent = done[-1].response if done else None
    p.expect(
        isinstance(sent, dict) and sent.get("usage") is None,
        "the provider's answer carried a usage: the story shows nothing",
    )
    p.expect(
        whole.usage is not None and whole.usage[:2] == (0, 0),
        f"an answer without usage: the client read the usage {whole.usage}, not 0 and 0",
    )
    total = whole.usage[2] if whole.usage else None
    p.expect(total in (None, 0), f"an answer without usage: the total {total}, not 0")
    extra = STREAM_USAGE.get(p.face.name)
    streamed = await p.call(
        "how long was this?", key="bare", model="primary", stream=True, extra=extra
    )
    p.expect(streamed.replayed, "the same key streamed was not a replay")
    p.expect(
        streamed.usage == whole.usage,
        f"the same key streamed: usage {streamed.usage}, not {whole.usage}",
    )
    p.counts(jobs=1, executions=1)


ASKED, SAID, RESULT = "what is the weather in Paris?", "Let me look.", "sunny, 21 C"
ARGUMENTS = json.dumps({"city": "Paris"})


def _round_trip(face: FaceClient) -> dict[str, Any]:
    """A conversation sent back after a tool call: the question, the model's call (with
    a few words before it, where the API lets an assistant say them) and the tool's
    result, in the face's own shape (docs/gateway.md, "a call, sent back")."""
    call = {"name": "get_weather", "arguments": ARGUMENTS}
    offered = {k: v for k, v in TOOL_FORMAT[face.name]().items() if k == "tools"}
    offered["tool_choice"] = {"type": "auto"} if face.sdk == "anthropic" else "auto"
    if face.name == "openai.chat":
        assistant = {
            "role": "assistant",
            "content": SAID,
            "tool_calls": [{"id": "call_1", "type": "function", "function": call}],
        }
        result = {"role": "tool", "tool_call_id": "call_1", "content": RESULT}
        return {"messages": [{"role": "user", "content": ASKED}, assistant, result], **offered}
    if face.name == "openai.responses":  # two rounds: the first call's output is empty
        items = [
            {"role": "user", "content": ASKED},
            {"type": "function_call", "call_id": "call_0", **call},
            {"type": "function_call_output", "call_id": "call_0", "output": ""},
            {"type": "function_call", "call_id": "call_1", **call},
            {"type": "function_call_output", "call_id": "call_1", "output": RESULT},
        ]
        return {"input": items, **offered}
    use = {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Paris"}}
    blocks = [{"type": "text", "text": SAID}, use]
    answered = {"type": "tool_result", "tool_use_id": "toolu_1", "content": RESULT}
    return {
        "messages": [
            {"role": "user", "content": ASKED},
            {"role": "assistant", "content": blocks},
            {"role": "user", "content": [answered]},
        ],
        **offered,
    }


async def tool_round_trip(p: Play) -> None:
    """The provider receives the whole turn: the fakes' ledger keeps a digest of the
    texts an execution was asked (docs/providers.md: the question, the assistant's words
    then its calls' arguments, each tool's result; the same from either dialect)."""
    turn = [ASKED, SAID + ARGUMENTS, RESULT]
    if p.face.name == "openai.responses":
        turn = [ASKED, ARGUMENTS, "", ARGUMENTS, RESULT]
    got = await p.call(ASKED, key="turn", extra=_round_trip(p.face))
    p.answered(got, "the turn sent back")
    asked = [e.prompt_sha256 for e in p.executed()]
    p.expect(
        asked == [prompt_digest(turn)],
        "the provider was not asked the whole turn (question, calls, results)",
    )
    sent = [body for path, body in p.stage.transport.sent() if "/openai/" in path]
    p.expect(
        len(sent) == 1 and _results_answer_calls(sent[0]),
        "the provider was sent tool results that answer no call of the turn",
    )
    p.counts(jobs=1, executions=1)


def _results_answer_calls(body: Any) -> bool:
    """In a Chat Completions body: there are tool results, and each answers, by its
    `tool_call_id`, a call an assistant message of the same body made."""
    messages = body.get("messages") if isinstance(body, dict) else None
    if not isinstance(messages, list):
        return False
    made = {
        call.get("id")
        for m in messages
        if m.get("role") == "assistant"
        for call in m.get("tool_calls") or ()
    }
    answered = [m.get("tool_call_id") for m in messages if m.get("role") == "tool"]
    return bool(answered) and all(id_ in made for id_ in answered)


MIXED_LAYOUT = {
    "openai.chat": ("text", "tool_call"),
    "openai.responses": ("message", "function_call"),
    "anthropic.messages": ("text", "tool_use"),
}
"""An answer of a few words then a call, in order: Chat Completions' `content` beside its
`tool_calls`, a Responses message item then a `function_call` item, a Messages text
block then a `tool_use` block (docs/gateway.md)."""


def _said_and_called(entry: Any) -> tuple[Any, list[tuple[Any, Any]]]:
    """The text and the calls (name, arguments read as JSON) of the Chat Completion a
    provider answered, as the fakes' ledger kept it."""
    response = getattr(entry, "response", None)
    choices = response.get("choices") if isinstance(response, dict) else None
    message = choices[0].get("message") if choices and isinstance(choices[0], dict) else None
    if not isinstance(message, dict):
        return None, []
    calls = []
    for call in message.get("tool_calls") or ():
        function = call.get("function") or {}
        arguments: Any = function.get("arguments")
        try:
            arguments = json.loads(arguments) if isinstance(arguments, str) else arguments
        except ValueError:
            pass  # kept as sent
        calls.append((function.get("name"), arguments))
    return message.get("content"), calls


async def words_then_call(p: Play) -> None:
    """A provider says a few words, then calls a tool: the client reads both, the text
    first, whole and (the same key) streamed, with the arguments the provider sent."""
    p.stage.fakes.script(Behaviour(name=BehaviourName.SUCCESS, content=SAID), api="openai")
    offered = TOOL_FORMAT[p.face.name]()
    whole = await p.call(ASKED, key="mixed", model="primary", extra=offered)
    streamed = await p.call(ASKED, key="mixed", model="primary", stream=True, extra=offered)
    done = p.executed()
    said, called = _said_and_called(done[-1] if done else None)
    p.expect(
        said == SAID and len(called) == 1,
        f"the provider did not answer words then one call ({said!r}, {called!r:.80}): "
        "the story shows nothing",
    )
    p.expect(streamed.replayed, "the same key streamed was not a replay")
    layout, ending = MIXED_LAYOUT[p.face.name], ENDINGS[p.face.name]["tool"]
    for got, what in ((whole, "words then a call, whole"), (streamed, "the same, streamed")):
        p.answered(got, what)
        p.read_well(got, what)
        p.expect(got.text == SAID, f"{what}: the client read the text {got.text!r}, not {SAID!r}")
        p.expect(got.layout == layout, f"{what}: the answer is laid out {got.layout}, not {layout}")
        p.expect(
            list(got.tools) == called,
            f"{what}: the client read the calls {got.tools!r:.80}, the provider sent "
            f"{called!r:.80}",
        )
        p.expect(got.ending == ending, f"{what}: it ended {got.ending}, not {ending}")
    if p.face.name == "openai.chat":  # a stream's layout is read from its role chunk
        order = [e for e in _runs(streamed.events) if e in ("content", "tool_call")]
        p.expect(
            order == ["content", "tool_call"],
            f"the same, streamed: its text and call deltas came as {order}",
        )
    p.counts(jobs=1, executions=1)


IMAGE, SKETCH = "https://example.com/cat.png", "https://example.com/sketch.png"
PIXELS = "iVBORw0KGgo="


def _images(face: FaceClient) -> tuple[dict[str, Any], list[tuple[str, str | None]]]:
    """A question with an image, then a message of an image alone, in the face's shape
    (docs/gateway.md), and the images an OpenAI-kind provider must be sent (each URL with
    its `detail`, if any)."""
    text = "what is in them?"
    if face.name == "openai.chat":
        parts = [
            {"type": "text", "text": text},
            {"type": "image_url", "image_url": {"url": IMAGE, "detail": "low"}},
        ]
        alone = [{"type": "image_url", "image_url": {"url": SKETCH}}]
        messages = [{"role": "user", "content": c} for c in (parts, alone)]
        return {"messages": messages}, [(IMAGE, "low"), (SKETCH, None)]
    if face.name == "openai.responses":
        parts = [
            {"type": "input_text", "text": text},
            {"type": "input_image", "image_url": IMAGE, "detail": "low"},
        ]
        alone = [{"type": "input_image", "image_url": SKETCH}]
        items = [{"role": "user", "content": c} for c in (parts, alone)]
        return {"input": items}, [(IMAGE, "low"), (SKETCH, None)]
    blocks = [
        {"type": "text", "text": text},
        {"type": "image", "source": {"type": "url", "url": IMAGE}},
    ]
    inline = {"type": "base64", "media_type": "image/png", "data": PIXELS}
    alone = [{"type": "image", "source": inline}]
    # a source is read by its type: a url source is its URL, whatever else it carries
    linked = [{"type": "image", "source": {**inline, "type": "url", "url": SKETCH}}]
    messages = [{"role": "user", "content": c} for c in (blocks, alone, linked)]
    want: list[tuple[str, str | None]] = [
        (IMAGE, None),
        (f"data:image/png;base64,{PIXELS}", None),
        (SKETCH, None),
    ]
    return {"messages": messages}, want


def _bad_image(face: FaceClient) -> dict[str, Any]:
    """An image the face cannot carry: no URL (OpenAI), a source of no known kind."""
    if face.name == "openai.chat":
        part = {"type": "image_url", "image_url": {"detail": "low"}}
        return {"messages": [{"role": "user", "content": [part]}]}
    if face.name == "openai.responses":
        part = {"type": "input_image", "detail": "low"}
        return {"input": [{"role": "user", "content": [part]}]}
    block = {"type": "image", "source": "https://example.com/cat.png"}
    return {"messages": [{"role": "user", "content": [block]}]}


def _sent_images(body: Any) -> list[tuple[Any, Any]]:
    """The `image_url` parts of a Chat Completions request, as (url, detail)."""
    found = []
    for message in (body or {}).get("messages") or ():
        content = message.get("content") if isinstance(message, dict) else None
        for part in content if isinstance(content, list) else ():
            image = part.get("image_url") if isinstance(part, dict) else None
            if isinstance(image, dict):
                found.append((image.get("url"), image.get("detail")))
    return found


async def image_parts(p: Play) -> None:
    extra, want = _images(p.face)
    got = await p.call("what is in them?", key="img", extra=extra)
    p.answered(got, "a question with images")
    sent = [body for path, body in p.stage.transport.sent() if "/openai/" in path]
    seen = [_sent_images(body) for body in sent]
    p.expect(seen == [want], f"the provider was sent the images {seen}, not {want}")
    bad = await p.call("what is in them?", key="img-bad", extra=_bad_image(p.face))
    p.refused(bad, 400, "BadRequestError", "an image the face cannot carry", INVALID)
    p.counts(jobs=1, executions=1)


TEMPERATURE = {"anthropic.messages": 1.0}
"""The top of `temperature` (OpenAI's APIs: 2; Anthropic's: 1); every face's `top_p`
is within [0, 1], its token limit within [1, 1,000,000]."""
MOST_TOKENS = 1_000_000
STOPS = ["@@1", "@@2", "@@3", "@@4"]


LONG_STOP = "\n\nObservation:"
"""Chat Completions' `stop` is at most 4 sequences; a single one may be longer than 4
characters, and is carried."""


def _bounds(
    face: FaceClient,
) -> tuple[dict[str, Any], dict[str, Any], list[tuple[str, Any]]]:
    """The members at their lower bounds, at their upper bounds, and each just past one
    (each refused alone)."""
    top, limit = TEMPERATURE.get(face.name, 2.0), _limit(face)
    # and a refused member at the one value that asks for nothing (docs/gateway.md)
    harmless = {"thinking": {"type": "disabled"}} if face.sdk == "anthropic" else {"store": False}
    low = {"temperature": 0, "top_p": 0, limit: 1, **harmless}
    high: dict[str, Any] = {"temperature": top, "top_p": 1, limit: MOST_TOKENS}
    past: list[tuple[str, Any]] = [
        ("temperature", -0.1),
        ("temperature", top + 0.01),
        ("top_p", 1.01),
        (limit, 0),
        (limit, MOST_TOKENS + 1),
    ]
    if face.name == "openai.chat":
        low["stop"] = LONG_STOP
        high |= {"stop": STOPS, "n": 1}
        past += [("stop", [*STOPS, "@@5"]), ("n", 2)]
        # the limit's newer name has the same bounds (docs/gateway.md)
        past += [("max_completion_tokens", 0), ("max_completion_tokens", MOST_TOKENS + 1)]
    elif face.name == "anthropic.messages":
        high["stop_sequences"] = STOPS
    return low, high, past


async def parameter_bounds(p: Play) -> None:
    low, high, past = _bounds(p.face)
    for name, members in (("lower", low), ("upper", high)):
        got = await p.call(f"at the {name} bounds", key=f"b-{name}", extra=members)
        p.answered(got, f"a call at every {name} bound")
        done = p.executed()
        entry = done[-1] if len(done) == 1 + (name == "upper") else None
        carried = None if entry is None else (entry.temperature, entry.max_tokens)
        want = (float(members["temperature"]), members[_limit(p.face)])
        sent = [body for path, body in p.stage.transport.sent() if "/openai/" in path]
        body = sent[-1] if len(sent) == len(done) and isinstance(sent[-1], dict) else {}
        stops = members.get("stop") or members.get("stop_sequences")
        stops = [stops] if isinstance(stops, str) else stops  # one sequence is sent as a list
        given = (body.get("top_p"), body.get("stop"))
        p.expect(
            given == (members["top_p"], stops),
            f"the provider was sent top_p and stop {given}, not {(members['top_p'], stops)}",
        )
        p.expect(
            carried == want, f"the provider was asked {carried}, not {want} (temperature, limit)"
        )
    for i, (member, value) in enumerate(past):
        got = await p.call("past a bound", key=f"b-past-{i}", extra={member: value})
        p.refused(got, 400, "BadRequestError", f"{member} {value!r}", INVALID)
    p.counts(jobs=2, executions=2)


ROUTING: tuple[tuple[str, int, str, str | None, str], ...] = (
    # what is wrong, the status, the OpenAI type and code, the Anthropic type
    ("another method", 405, INVALID, "method_not_allowed", INVALID),
    ("a path under the face's", 404, INVALID, "not_found", "not_found_error"),
    ("a path under the models'", 404, INVALID, "not_found", "not_found_error"),
    ("Content-Type twice", 415, INVALID, "unsupported_media_type", INVALID),
    ("a body over the limit", 413, INVALID, None, "request_too_large"),
)
"""The refusals before any reading, from docs/gateway.md's error table."""
OVER_THE_LIMIT = 64 * 1024 + 1  # limits.max_body_bytes' default, one byte past it


def _raw(p: Play, wrong: str) -> Any:
    """A request to the face that is wrong in one way, as raw HTTP (no SDK sends it)."""
    import httpx2

    from harness.checks.faces.clients import BASE_URL, TOKEN

    body: dict[str, Any] = {"model": "chat", "max_tokens": 8, "messages": [], "input": "hi"}
    method, path = "POST", p.face.path
    headers = [("authorization", f"Bearer {TOKEN}"), ("content-type", "application/json")]
    if p.face.sdk == "anthropic":  # the Anthropic SDK sends it on every request
        headers.append(("anthropic-version", "2023-06-01"))
    if wrong == "another method":
        method = "GET"
    elif wrong == "a path under the face's":
        path += "/elsewhere"
    elif wrong == "a path under the models'":  # both SDKs list models there
        method, path = "GET", "/v1/models/chat/elsewhere"
    elif wrong == "a path of no face":
        method, path = "GET", "/v1/elsewhere"
    elif wrong == "Content-Type twice":
        headers.append(("content-type", "application/json"))
    else:
        body["user"] = "x" * OVER_THE_LIMIT
    content = json.dumps(body).encode() if method == "POST" else b""
    return httpx2.Request(method, f"{BASE_URL}{path}", content=content, headers=headers)


async def error_table(p: Play) -> None:
    for wrong, status, openai_type, code, anthropic_type in ROUTING:
        answer = await p.stage.wire.handle_async_request(_raw(p, wrong))
        try:
            body = json.loads(answer.content)
        except ValueError:
            body = None
        seen = body.get("error") if p.face.sdk == "openai" and isinstance(body, dict) else body
        p.expect(
            answer.status_code == status, f"{wrong}: status {answer.status_code}, not {status}"
        )
        shape = _error_shape(p.face, seen)
        p.expect(shape is None, f"{wrong}: {shape}")
        if shape is not None:
            continue
        kind = openai_type if p.face.sdk == "openai" else anthropic_type
        found = _error_type(p.face, seen)
        p.expect(found == kind, f"{wrong}: the error's type is {found}, not {kind}")
        if p.face.sdk == "openai" and code is not None:
            given = _code(p.face, seen)
            p.expect(given == code, f"{wrong}: the code is {given}, not {code}")
    # a path under no face keeps the job API's problem details (RFC 9457)
    elsewhere = await p.stage.wire.handle_async_request(_raw(p, "a path of no face"))
    kind = elsewhere.headers.get("content-type", "")
    p.expect(
        (elsewhere.status_code, kind) == (404, "application/problem+json"),
        f"a path of no face: {elsewhere.status_code} {kind}, not 404 application/problem+json",
    )
    p.counts(jobs=0, executions=0)


REQUESTS = {
    "openai.chat": ("ChatCompletionRequest", "max_tokens", "chat_completions"),
    "openai.responses": ("ResponsesRequest", "max_output_tokens", "responses"),
    "anthropic.messages": ("MessagesRequest", "max_tokens", "messages"),
}
"""Each face's request schema in `/openapi.json`, its token limit's member, and its
operation's name (docs/gateway.md: the `operationId` a client generator names its method
by is that name, the path and the method, `<name>_v1_<name>_post`)."""


def _bounds_of(schema: Any) -> tuple[Any, Any]:
    """A member's documented (minimum, maximum), whether or not it may be null."""
    for branch in [schema, *(schema.get("anyOf") or ())] if isinstance(schema, dict) else ():
        if isinstance(branch, dict) and "maximum" in branch:
            return branch.get("minimum"), branch["maximum"]
    return None, None


ANSWERS = ["200", "202", "400", "401", "404", "409", "413", "415", "502", "503"]
"""The statuses of a face's answers by docs/gateway.md's error table, and its 202."""


async def openapi(p: Play) -> None:
    """`/openapi.json` documents the face as docs/gateway.md says: its operation's
    `operationId`, the key and wait headers, its stream's events, a whole and a streamed
    example, the models (the routes, then the providers) and the bounds of its sampling
    members."""
    import httpx2

    from harness.checks.faces.clients import BASE_URL

    answer = await p.stage.wire.handle_async_request(
        httpx2.Request("GET", f"{BASE_URL}/openapi.json")
    )
    p.expect(answer.status_code == 200, f"/openapi.json answered {answer.status_code}")
    document = json.loads(answer.content) if answer.status_code == 200 else {}
    operation = document.get("paths", {}).get(p.face.path, {}).get("post") or {}
    headers = {h.get("name") for h in operation.get("parameters", ())}
    p.expect({"Idempotency-Key", "Prefer"} <= headers, f"the headers documented: {headers}")
    documented = sorted(operation.get("responses", {}))
    p.expect(documented == ANSWERS, f"the answers documented are {documented}, not {ANSWERS}")
    answers = operation.get("responses", {}).get("200", {}).get("content", {})
    events = answers.get("text/event-stream", {}).get("itemSchema")
    p.expect(bool(events), "the stream's events are not documented (itemSchema)")
    body = operation.get("requestBody", {}).get("content", {}).get("application/json", {})
    examples = {k: v.get("value", {}) for k, v in (body.get("examples") or {}).items()}
    streams = sorted(bool(v.get("stream")) for v in examples.values())
    p.expect(streams == [False, True], f"the examples are not one whole, one streamed: {streams}")
    p.expect(
        all(v.get("model") == "chat" for v in examples.values()),
        "an example does not ask for the first model listed",
    )
    name, limit, named = REQUESTS[p.face.name]
    said = operation.get("operationId")
    p.expect(
        said == f"{named}_v1_{named}_post",
        f"the operation is named {said!r:.80}, not {named}_v1_{named}_post",
    )
    members = document.get("components", {}).get("schemas", {}).get(name, {}).get("properties")
    members = members or {}
    models = members.get("model", {}).get("enum") or []
    routes, providers = models[:3], set(models[3:])
    p.expect(
        routes == ["chat", "quick", "hedged"] and providers == {"primary", "fallback"},
        f"the models documented are {models}, not the routes then the providers",
    )
    top = TEMPERATURE.get(p.face.name, 2.0)
    for member, want in (("temperature", (0, top)), ("top_p", (0, 1)), (limit, (1, MOST_TOKENS))):
        found = _bounds_of(members.get(member))
        p.expect(found == want, f"{member} is documented within {found}, not {want}")
    p.counts(jobs=0, executions=0)
