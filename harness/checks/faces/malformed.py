"""The stories of what a face reads from a request beyond the plain question: each bad
input its API documents refused (400 in the face's shape, the member in `param`, no job,
no execution), and the members it carries (system prompts, a tool's description and
strictness, parallel calls, response formats, a legacy `function` turn, an assistant's
earlier words, a tool's error) reaching the provider as the provider's API spells them.

The expectations are written here, from the documented behaviour (docs/gateway.md, its
"Errors" and "Tools, structured output and images" sections, and each face's member
table), never taken from the faces' code; what a provider was asked is read from the
bodies the adapters sent (`FaceStage.transport`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from harness.checks.faces.clients import error_message
from harness.checks.faces.rendered import CITY, IMAGE, INVALID, _results_answer_calls

if TYPE_CHECKING:
    from harness.checks.faces.stories import Play

ASKED = "what is the weather in Paris?"
USER = [{"role": "user", "content": ASKED}]
OBJECT = {"type": "object", "properties": {}}
WEATHER = {"name": "get_weather", "parameters": CITY}
ARGUMENTS = '{"city": "Paris"}'
WEATHER_CALL = {"name": "get_weather", "arguments": ARGUMENTS}
CALLED = {"id": "t1", "name": "get_weather", "input": {"city": "Paris"}}


def _worded(kind: str, **members: Any) -> dict[str, Any]:
    """A content part of `kind` that also carries a `text` string (and, given them, an
    image's members): a part of a kind refused where it stands is refused by its kind,
    whatever else it holds."""
    return {"type": kind, "text": ASKED, **members}


_PICTURE = {"image_url": {"url": IMAGE}}
_CHAT_CALL = {"id": "c1", "type": "function", "function": WEATHER_CALL}

CHAT: tuple[tuple[str, str, dict[str, Any]], ...] = (
    ("no user message", "messages", {"messages": [{"role": "system", "content": "Be brief."}]}),
    (  # assistant sorts before user: a turn of any role is not a user's
        "an assistant turn and no user message",
        "messages",
        {"messages": [{"role": "assistant", "content": "Hello."}]},
    ),
    (
        "a tool result naming no call",
        "messages",
        {"messages": [*USER, {"role": "tool", "content": "sunny"}]},
    ),
    (
        "a text part whose text is no string",
        "messages",
        {"messages": [{"role": "user", "content": [{"type": "text", "text": 5}]}]},
    ),
    (
        "a function tool without a name",
        "tools",
        {"tools": [{"type": "function", "function": {"parameters": OBJECT}}]},
    ),
    (
        "a function tool whose parameters are no schema",
        "tools",
        {"tools": [{"type": "function", "function": {"name": "f", "parameters": "city"}}]},
    ),
    ("a function tool without its function", "tools", {"tools": [{"type": "function"}]}),
    *(  # custom sorts before function, web_search after: each carries a function
        (f"a {kind} tool", "tools", {"tools": [{"type": kind, "function": WEATHER}]})
        for kind in ("custom", "web_search")
    ),
    ("a tool choice of no kind", "tool_choice", {"tool_choice": "sometimes"}),
    (
        "a named tool choice without the name",
        "tool_choice",
        {"tool_choice": {"type": "function", "function": {}}},
    ),
    ("a response format of no kind", "response_format", {"response_format": {"type": "xml"}}),
    (
        "a json_schema format without its schema",
        "response_format",
        {"response_format": {"type": "json_schema", "json_schema": {"name": "city"}}},
    ),
    (
        "a json_schema format with an empty name",
        "response_format",
        {"response_format": {"type": "json_schema", "json_schema": {"name": "", "schema": CITY}}},
    ),
    (
        "a user's input_audio part",
        "messages",
        {"messages": [{"role": "user", "content": [_worded("input_audio", **_PICTURE)]}]},
    ),
    (
        "a user's file part",
        "messages",
        {
            "messages": [
                {"role": "user", "content": [_worded("file", file={"file_id": "f1"}, **_PICTURE)]}
            ]
        },
    ),
    (  # parts other than text are a user's alone
        "a system message's image part",
        "messages",
        {"messages": [{"role": "system", "content": [_worded("image_url", **_PICTURE)]}, *USER]},
    ),
    (
        "an assistant message's image part",
        "messages",
        {
            "messages": [
                *USER,
                {"role": "assistant", "content": [_worded("image_url", **_PICTURE)]},
                *USER,
            ]
        },
    ),
    (
        "a tool message's image part",
        "messages",
        {
            "messages": [
                *USER,
                {"role": "assistant", "content": None, "tool_calls": [_CHAT_CALL]},
                {
                    "role": "tool",
                    "tool_call_id": "c1",
                    "content": [_worded("image_url", **_PICTURE)],
                },
            ]
        },
    ),
    ("a refused member", "seed", {"seed": 7}),
)
"""Chat Completions requests this gateway refuses: (what, the member named, the body's
members). docs/gateway.md: function tools only; a tool result answers a call; a format
is `text`, `json_object` or `json_schema` with a schema."""

RESPONSES: tuple[tuple[str, str, dict[str, Any]], ...] = (
    ("no user message", "input", {"input": [{"role": "system", "content": "Be brief."}]}),
    (
        "a function_call without its arguments",
        "input",
        {"input": [*USER, {"type": "function_call", "call_id": "c1", "name": "get_weather"}]},
    ),
    (
        "a function_call_output without its output",
        "input",
        {"input": [*USER, {"type": "function_call_output", "call_id": "c1"}]},
    ),
    ("a function tool without a name", "tools", {"tools": [{"type": "function"}]}),
    *(  # file_search sorts before function, web_search after: each carries a function's members
        (f"a {kind} tool", "tools", {"tools": [{"type": kind, **WEATHER}]})
        for kind in ("file_search", "web_search")
    ),
    ("a message item without a role", "input", {"input": [*USER, {"content": "and?"}]}),
    (
        "a named tool choice without the name",
        "tool_choice",
        {"tool_choice": {"type": "function"}},
    ),
    (  # verbosity sorts after format, citations before: both are refused
        "a text member other than format",
        "text",
        {"text": {"format": {"type": "text"}, "verbosity": "low"}},
    ),
    ("a text member sorting before format", "text", {"text": {"citations": True}}),
    ("a text format that is no object", "text", {"text": {"format": "json"}}),
    (
        "a json_schema format without its schema",
        "text",
        {"text": {"format": {"type": "json_schema", "name": "city"}}},
    ),
    (
        "a user's input_file part",
        "input",
        {
            "input": [
                {"role": "user", "content": [_worded("input_file", file_id="f1", image_url=IMAGE)]}
            ]
        },
    ),
    (  # parts other than text are a user's alone
        "a developer message's image part",
        "input",
        {
            "input": [
                {"role": "developer", "content": [_worded("input_image", image_url=IMAGE)]},
                *USER,
            ]
        },
    ),
    (
        "an assistant message's image part",
        "input",
        {
            "input": [
                *USER,
                {"role": "assistant", "content": [_worded("input_image", image_url=IMAGE)]},
                *USER,
            ]
        },
    ),
    ("a refused member", "reasoning", {"reasoning": {"effort": "low"}}),
)
"""Responses requests this gateway refuses (as `CHAT`)."""

_URL_AS_BASE64 = {
    "type": "image",
    "source": {"type": "base64", "media_type": "image/png", "url": "https://example.com/a.png"},
}
"""An image block whose source says base64 and carries a URL instead of its data."""

_URL = {"type": "url", "url": IMAGE}


def _answered_with(content: list[Any]) -> dict[str, Any]:
    """A Messages conversation whose tool_result's content is `content`."""
    result = {"type": "tool_result", "tool_use_id": "t1", "content": content}
    return {
        "messages": [
            *USER,
            {"role": "assistant", "content": [{"type": "tool_use", **CALLED}]},
            {"role": "user", "content": [result]},
        ]
    }


_EVERY_SOURCE = {"media_type": "image/png", "data": "iVBORw0KGgo=", "url": IMAGE}
_UNKNOWN_SOURCES = ("BASE64", "file", "web")
"""Image source kinds other than `base64` and `url` (docs/gateway.md: only those two),
sorting before both, between them and after both; each source carries every member a
known kind needs, so it is refused by its kind alone."""


def _pictured(source: dict[str, Any]) -> dict[str, Any]:
    """A Messages request of a user's image block with `source`."""
    return {"messages": [{"role": "user", "content": [{"type": "image", "source": source}]}]}


MESSAGES: tuple[tuple[str, str, dict[str, Any]], ...] = (
    (
        "a tool_result naming no tool_use",
        "messages",
        {"messages": [{"role": "user", "content": [{"type": "tool_result", "content": "x"}]}]},
    ),
    (
        "a tool_use without its id",
        "messages",
        {
            "messages": [
                *USER,
                {"role": "assistant", "content": [{"type": "tool_use", "name": "f", "input": {}}]},
                *USER,
            ]
        },
    ),
    (
        "a tool_use whose input is no object",
        "messages",
        {
            "messages": [
                *USER,
                {
                    "role": "assistant",
                    "content": [{"type": "tool_use", "id": "t1", "name": "f", "input": "x"}],
                },
                *USER,
            ]
        },
    ),
    (
        "a tool_result whose content is neither text nor blocks",
        "messages",
        {
            "messages": [
                *USER,
                {"role": "assistant", "content": [{"type": "tool_use", **CALLED}]},
                {
                    "role": "user",
                    "content": [{"type": "tool_result", "tool_use_id": "t1", "content": 5}],
                },
            ]
        },
    ),
    ("a tool without a name", "tools", {"tools": [{"input_schema": CITY}]}),
    ("a server tool", "tools", {"tools": [{"type": "bash_20250124", "name": "bash"}]}),
    ("a tool choice of no kind", "tool_choice", {"tool_choice": {"type": "sometimes"}}),
    ("a tool choice of a tool without its name", "tool_choice", {"tool_choice": {"type": "tool"}}),
    (  # effort sorts before format, zeta after: a refusal of only one side is caught
        "output_config members other than format",
        "output_config",
        {"output_config": {"effort": "high"}},
    ),
    ("an unknown output_config member", "output_config", {"output_config": {"zeta": 1}}),
    (  # json_object sorts before json_schema, text after: both are refused
        "an output format other than json_schema",
        "output_config",
        {"output_config": {"format": {"type": "text"}}},
    ),
    (
        "an output format of json_object",
        "output_config",
        {"output_config": {"format": {"type": "json_object"}}},
    ),
    (  # base64 sorts before url: a base64 source is read as such, whatever else it has
        "a base64 image source without its data",
        "messages",
        {"messages": [{"role": "user", "content": [_URL_AS_BASE64]}]},
    ),
    (
        "a user's document block",
        "messages",
        {"messages": [{"role": "user", "content": [_worded("document", source=_URL)]}]},
    ),
    (  # web_search_tool_result sorts after image, document before: neither is read as one
        "a user's server tool result",
        "messages",
        {
            "messages": [
                {
                    "role": "user",
                    "content": [
                        _worded("web_search_tool_result", tool_use_id="s1", content=[], source=_URL)
                    ],
                }
            ]
        },
    ),
    (  # tool_use blocks are an assistant's, images a user's
        "a user's tool_use block",
        "messages",
        {"messages": [{"role": "user", "content": [_worded("tool_use", **CALLED)]}]},
    ),
    (
        "an assistant's image block",
        "messages",
        {"messages": [*USER, {"role": "assistant", "content": [_worded("image", source=_URL)]}]},
    ),
    (
        "an assistant's thinking block",
        "messages",
        {
            "messages": [
                *USER,
                {"role": "assistant", "content": [_worded("thinking", thinking="hmm")]},
            ]
        },
    ),
    (
        "a tool_result holding an image block",
        "messages",
        _answered_with([_worded("image", source=_URL)]),
    ),
    ("a tool_result holding a bare string", "messages", _answered_with(["Sunny."])),
    *(
        (
            f"an image source of kind {kind!r}",
            "messages",
            _pictured({**_EVERY_SOURCE, "type": kind}),
        )
        for kind in _UNKNOWN_SOURCES
    ),
    ("a refused member", "top_k", {"top_k": 5}),
)
"""Messages requests this gateway refuses (as `CHAT`)."""

EVERY_FACE: tuple[tuple[str, str, dict[str, Any]], ...] = (
    ("a member no API of the face has", "frobnicate", {"frobnicate": 1}),
    ("a metadata key that is no key", "metadata", {"metadata": {"idempotency_key": "é"}}),
)
"""Refused by every face: an unknown member, and a body key that breaks the key's rules
(1 to 255 visible ASCII characters)."""

LONGEST_MODEL = 255  # characters (docs/gateway.md)

BAD = {"openai.chat": CHAT, "openai.responses": RESPONSES, "anthropic.messages": MESSAGES}


def _param(p: Play, got: Any) -> str | None:
    """The member an OpenAI error names (`param`)."""
    return got.body.get("param") if isinstance(got.body, dict) else None


async def malformed_requests(p: Play) -> None:
    """Each bad input is a 400 in the face's shape naming its member, and changes nothing;
    a model name of 1 to 255 characters is a model like any other (404 when unknown)."""
    for i, (what, member, extra) in enumerate((*BAD[p.face.name], *EVERY_FACE)):
        got = await p.call(ASKED, key=f"bad-{i}", extra=extra)
        p.refused(got, 400, "BadRequestError", what, INVALID)
        named = _param(p, got)
        if p.face.sdk == "openai" and got.status == 400:
            root = (named or "").split(".")[0].split("[")[0]
            p.expect(root == member, f"{what}: the error names {named!r}, not {member}")
    # a model name is 1 to 255 characters (docs/gateway.md): within them, a name is
    # looked up (404 when unknown); outside them (empty, or longer), it is malformed
    unknown = "not_found_error" if p.face.sdk == "anthropic" else INVALID
    for name, status, error, kind in (
        ("", 400, "BadRequestError", INVALID),
        ("x", 404, "NotFoundError", unknown),
        ("m" * LONGEST_MODEL, 404, "NotFoundError", unknown),
        ("m" * (LONGEST_MODEL + 1), 400, "BadRequestError", INVALID),
    ):
        got = await p.call(ASKED, key=f"model-{len(name)}", model=name)
        p.refused(got, status, error, f"an unknown model of {len(name)} characters", kind)
        said = error_message(p.face.sdk, got.body)
        if status == 404:  # names the model asked, its first NAMED characters
            p.expect(
                repr(name[:NAMED]) in said
                and (len(name) <= NAMED or repr(name[: NAMED + 1]) not in said),
                f"an unknown model of {len(name)} characters is named {said[:120]!r}",
            )
    p.counts(jobs=0, executions=0)


NAMED = 80
"""The characters of an unknown model's name its 404 repeats (docs/gateway.md)."""


SYSTEM, DEVELOPER = "Be brief.", "Answer in English."
DESCRIPTION = "The weather of a city, today."
SAID = "Let me look that up."
RESULT = "Sunny, 24 C."


def _carried(face: str) -> dict[str, Any]:
    """One request of the members the face carries beyond the question, in its API's
        shape: a system prompt in two parts, a tool with a description (strict) and (OpenAI) one
    without parameters, parallel
        calls off, JSON output, and an earlier turn (the chat face's in the legacy
        `function` spelling; an assistant's words; a tool's error)."""
    if face == "openai.chat":
        called = {"name": "get_weather", "arguments": ARGUMENTS}
        return {
            "messages": [
                {"role": "system", "content": SYSTEM},
                {"role": "developer", "content": [{"type": "text", "text": DEVELOPER}]},
                *USER,
                {"role": "assistant", "content": SAID, "function_call": called},
                {"role": "function", "name": "get_weather", "content": RESULT},
            ],
            "tools": [
                {
                    "type": "function",
                    "function": {**WEATHER, "description": DESCRIPTION, "strict": True},
                },
                {"type": "function", "function": {"name": "get_time"}},
            ],
            "tool_choice": "auto",
            "parallel_tool_calls": False,
            "response_format": {"type": "json_object"},
        }
    if face == "openai.responses":
        return {
            "instructions": SYSTEM,
            "input": [
                {"role": "developer", "content": DEVELOPER},
                {"role": "user", "content": "hello"},
                {"role": "assistant", "content": SAID},
                *USER,
                *({"type": "function_call", "call_id": f"c{i}", **WEATHER_CALL} for i in (1, 2)),
                *(
                    {"type": "function_call_output", "call_id": f"c{i}", "output": RESULT}
                    for i in (1, 2)
                ),
            ],
            "tools": [
                {"type": "function", **WEATHER, "description": DESCRIPTION, "strict": True},
                {"type": "function", "name": "get_time"},
            ],
            "tool_choice": "auto",
            "parallel_tool_calls": False,
            "text": {"format": {"type": "json_object"}},
        }
    use = {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Paris"}}
    failed = {"type": "tool_result", "tool_use_id": "toolu_1", "content": RESULT, "is_error": True}
    return {
        "system": f"{SYSTEM}\n\n{DEVELOPER}",
        "messages": [
            *USER,
            {"role": "assistant", "content": [{"type": "text", "text": SAID}, use]},
            {"role": "user", "content": [failed, {"type": "text", "text": "and now?"}]},
        ],
        "tools": [{"name": "get_weather", "input_schema": CITY, "description": DESCRIPTION}],
        "tool_choice": {"type": "auto", "disable_parallel_tool_use": True},
        "output_format": {"type": "json_schema", "schema": CITY},
    }


def _sent_flaws(face: str, body: Any) -> list[str]:
    """What a Chat Completions body the provider was sent lacks of `_carried(face)`."""
    if not isinstance(body, dict):
        return ["no JSON body was sent"]
    messages = [m for m in body.get("messages") or () if isinstance(m, dict)]
    flaws = [*_prompt_flaws(face, body, messages), *_tool_flaws(face, body)]
    if body.get("parallel_tool_calls") is not False:
        flaws.append(f"parallel_tool_calls sent as {body.get('parallel_tool_calls')!r}, not false")
    want = "json_schema" if face == "anthropic.messages" else "json_object"
    fmt = body.get("response_format")
    fmt = fmt if isinstance(fmt, dict) else {}
    schema = (fmt.get("json_schema") or {}).get("schema")
    if fmt.get("type") != want or (want == "json_schema" and schema != CITY):
        flaws.append(f"the response format sent is {fmt!r:.120}, not {want}")
    return flaws


def _prompt_flaws(face: str, body: dict[str, Any], messages: list[dict[str, Any]]) -> list[str]:
    """The system prompt (both parts, in order) and the earlier turn, as sent."""
    flaws = []
    system = " ".join(str(m.get("content")) for m in messages if m.get("role") == "system")
    if not (SYSTEM in system and DEVELOPER in system) or system.index(SYSTEM) > system.index(
        DEVELOPER
    ):
        flaws.append(f"the system prompt sent is {system!r}, not both parts in order")
    if not _turns_well_formed(messages):
        flaws.append("a tool result does not follow the assistant message of its call")
    if face == "openai.chat" and not _results_answer_calls(body):
        flaws.append("the legacy function result was not sent as the answer to its call")
    earlier = [m.get("content") for m in messages if m.get("role") == "assistant"]
    if face == "openai.responses" and SAID not in earlier:
        flaws.append("the assistant's earlier words were not sent as the assistant's")
    contents = [str(m.get("content")) for m in messages]
    if face == "anthropic.messages" and f"error: {RESULT}" not in contents:
        flaws.append("the tool's error was not sent as its text prefixed with 'error: '")
    return flaws


def _tool_flaws(face: str, body: dict[str, Any]) -> list[str]:
    """The tools as sent: the described one with its description (and, OpenAI, strict),
    the one without parameters as a function of no arguments."""
    flaws = []
    functions = [t.get("function") or {} for t in body.get("tools") or () if isinstance(t, dict)]
    weather = [f for f in functions if f.get("name") == "get_weather"]
    if [f.get("description") for f in weather] != [DESCRIPTION]:
        flaws.append(f"the tool sent is {weather!r:.160}, without its description")
    if face == "anthropic.messages":
        return flaws
    if [f.get("strict") for f in weather] != [True]:
        flaws.append("the tool was sent without strict: true")
    # OpenAI: a function without `parameters` takes no arguments
    bare = [f.get("parameters") for f in functions if f.get("name") == "get_time"]
    if not (len(bare) == 1 and _no_arguments(bare[0])):
        flaws.append(f"the tool without parameters was sent with {bare!r}, not no arguments")
    return flaws


def _turns_well_formed(messages: list[dict[str, Any]]) -> bool:
    """Chat Completions' rule for tool turns: each `tool` message answers a call of the
    assistant message right before its run of `tool` messages (calls made in parallel
    are one assistant message, their results follow it)."""
    made: set[Any] = set()
    for message in messages:
        if message.get("role") == "tool":
            if message.get("tool_call_id") not in made:
                return False
            continue
        calls = message.get("tool_calls") if message.get("role") == "assistant" else None
        made = {c.get("id") for c in calls or () if isinstance(c, dict)}
    return True


def _no_arguments(schema: Any) -> bool:
    """A JSON Schema of a function that takes no arguments: an object with no properties
    (every provider's tool schema must be an object)."""
    return (
        isinstance(schema, dict) and schema.get("type") == "object" and not schema.get("properties")
    )


TEXT_FORMAT: dict[str, dict[str, Any]] = {
    "openai.chat": {"response_format": {"type": "text"}},
    "openai.responses": {"text": {"format": {"type": "text"}}},
}
"""Plain text asked for explicitly: the default, no format sent to the provider."""


async def carried_members(p: Play) -> None:
    got = await p.call(ASKED, key="carried", extra=_carried(p.face.name))
    p.answered(got, "the call with every carried member")
    sent = [body for path, body in p.stage.transport.sent() if "/openai/" in path]
    p.expect(len(sent) == 1, f"{len(sent)} provider requests for one call, not 1")
    for flaw in _sent_flaws(p.face.name, sent[0] if sent else None):
        p.problems.append(f"the call with every carried member: {flaw}")
    plain = TEXT_FORMAT.get(p.face.name)
    if plain is not None:
        text = await p.call(ASKED, key="text", extra=plain)
        p.answered(text, "the call asking for plain text")
        last = p.stage.transport.sent()[-1][1]
        p.expect(
            isinstance(last, dict) and "response_format" not in last,
            "plain text asked for, a response format was sent",
        )
    p.counts(jobs=1 + (plain is not None), executions=1 + (plain is not None))


HARMLESS: dict[str, dict[str, Any]] = {
    "openai.chat": {"store": False, "logprobs": False, "modalities": ["text"]},
    "openai.responses": {
        "store": False,
        "background": False,
        "include": [],
        "truncation": "disabled",
    },
    "anthropic.messages": {"thinking": {"type": "disabled"}, "mcp_servers": []},
}
"""docs/gateway.md's member tables: each refused member's one accepted value (it asks
for nothing the gateway leaves out)."""

ASKING: dict[str, dict[str, Any]] = {
    "openai.chat": {"store": True, "logprobs": True, "modalities": ["text", "audio"]},
    "openai.responses": {
        "store": True,
        "background": True,
        "include": ["reasoning.encrypted_content"],
        "truncation": "auto",
    },
    "anthropic.messages": {
        "thinking": {"type": "enabled", "budget_tokens": 1024},
        "mcp_servers": [{"type": "url", "url": "https://example.com/mcp", "name": "mcp"}],
    },
}
"""The same members at a value that asks for something: refused."""


async def harmless_values(p: Play) -> None:
    """Every refused member at its harmless value, in one call: answered, none of them
    sent to the provider; each at another value: a 400 naming it, no job."""
    accepted = HARMLESS[p.face.name]
    got = await p.call(ASKED, key="harmless", extra=accepted)
    p.answered(got, f"a call with {', '.join(accepted)} at their harmless values")
    for path, body in p.stage.transport.sent():
        sent = sorted(set(accepted) & set(body if isinstance(body, dict) else ()))
        p.expect(not sent, f"{path} was sent {sent}, which this gateway never carries")
    for i, (member, value) in enumerate(ASKING[p.face.name].items()):
        asked = await p.call(ASKED, key=f"asking-{i}", extra={member: value})
        p.refused(asked, 400, "BadRequestError", f"{member}: {value!r}", INVALID)
        named = _param(p, asked)
        if p.face.sdk == "openai" and asked.status == 400:
            p.expect(named == member, f"{member}: {value!r}: the error names {named!r}")
    p.counts(jobs=1, executions=1)
