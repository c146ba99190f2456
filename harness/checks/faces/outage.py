"""The story of a face whose database is down: docs/gateway.md's error table answers it
with a 503 `api_error` (OpenAI's SDK raises `InternalServerError` for it, Anthropic's
`ServiceUnavailableError`) whose message is the error's
own (`database error: ...`), never the driver's text, and no job anywhere.

The expectations are written here, from the documented behaviour, never taken from the
gateway's code.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness.checks.faces.clients import error_message, received, sdk_client

if TYPE_CHECKING:
    from harness.checks.faces.stories import Play

SERVER_ERROR = "api_error"
OWN_MESSAGE = "database error"
"""How a 503's message begins (docs/gateway.md, Errors)."""
RAISED = {"openai": "InternalServerError", "anthropic": "ServiceUnavailableError"}
"""The exception class each SDK raises for a 503."""
DRIVER_WORDS = ("sqlite", "OperationalError", "store.db", "face-outage-")
"""What the driver's text would show: its name, its error class, the store's path."""


async def database_outage(p: Play) -> None:
    """A call, whole and streamed, while the face's database refuses every connection."""
    client = sdk_client(p.face, p.stage.outage())
    for stream in (False, True):
        what = f"a {'streamed ' if stream else ''}call while the database is down"
        got = await received(p.face, client, model="chat", text="hello", stream=stream, headers={})
        p.refused(got, 503, RAISED[p.face.sdk], what, SERVER_ERROR)
        message = error_message(p.face.sdk, got.body)
        p.expect(message.startswith(OWN_MESSAGE), f"{what}: the message is {message!r}")
        shown = [w for w in DRIVER_WORDS if w.lower() in message.lower()]
        p.expect(not shown, f"{what}: the message shows the driver's {shown}")
    p.counts(jobs=0, executions=0)
