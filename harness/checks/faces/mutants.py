"""Deliberately broken gateway faces: one per promise the faces make on top of the engine.

Each breaks the face the way a real gateway does (a key header read by the wrong name, a
conflict answered from the first job, members dropped from the fingerprint, a stream
begun before a winner exists, an SDK's retry not recognised, a timeout at the bound
answered as an error, tool calls left out of the answer, errors in another API's shape,
a tool turn sent back and not read, an image's detail, the sampling members or a
tool's description not carried, a malformed tool taken as given, a failed stream
that just ends, an answer's ending or usage misreported (or guessed where none was
given), a refusal's status, a document without the key's header, a caller leaving
that cuts off another).
The scenario suite never calls a face, so none of these can be caught by it; `harness
check --mutants` plays the face stories against each (`run_face_mutants`), and a face
mutant no story catches is a blind spot. They are `harness.mutants.Mutant`s:
`--mutant NAME` applies them too.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import Any

from fastapi.responses import JSONResponse

from harness.api.faces import anthropic_messages, conversation, openai_chat, openai_responses
from harness.api.faces import errors as face_errors
from harness.api.faces import face as face_module
from harness.api.faces import gateway as face_gateway
from harness.api.faces.errors import ErrorTable
from harness.api.faces.gateway import Held
from harness.api.faces.waiting import JobWatch
from harness.api.problems import HttpProblem
from harness.core.states import FINISHED_JOB_STATES
from harness.errors import IdempotencyConflict
from harness.mutants import Mutant, Patches, applied


def _key_header_ignored() -> Patches:
    """The key is read from a header name no client sends: every call is keyless."""

    def header_key(request: Any) -> str | None:
        return request.headers.get("x-idempotency-key")

    return {(face_gateway, "header_key"): header_key}


def _conflict_replays() -> Patches:
    """A key reused with another body answers the first job instead of 409."""
    real = face_gateway.Gateway._create

    def create(
        self: Any, owner: str, key: str | None, intent: Any, retry: bool, trace: Any = None
    ) -> Any:
        try:
            return real(self, owner, key, intent, retry, trace)
        except IdempotencyConflict as exc:
            return self.state.engine.get_job(exc.details["job_id"]), False

    return {(face_gateway.Gateway, "_create"): create}


def _fingerprint_drops_members() -> Patches:
    """Only the messages bind the key: `top_p`, `stop`, `user`... change nothing."""

    def fingerprint_input(body: Any) -> dict[str, Any]:
        return {}

    return {
        (module, "fingerprint_input"): fingerprint_input
        for module in (openai_chat, openai_responses, anthropic_messages)
    }


def _streams_before_the_winner() -> Patches:
    """The client's answer begins at the first attempt's end, before any winner exists:
    it carries what that attempt left (nothing usable)."""

    def outcome_recorded(self: JobWatch, job_id: int, job: Any = None) -> None:
        loop = self._loop
        if loop is not None:  # every outcome hands its job over, finished or not
            loop.call_soon_threadsafe(self._wake, job_id, job or self.engine.get_job(job_id))

    def finished(self: Held) -> bool:
        ended = any(a.finished_at is not None for a in self.job.attempts)
        return self.job.status in FINISHED_JOB_STATES or ended

    return {
        (JobWatch, "outcome_recorded"): outcome_recorded,
        (Held, "finished"): property(finished),
    }


def _sdk_retry_unrecognised() -> Patches:
    """The SDKs' try counter is read under another name: a retried keyless call is a new
    job and a second execution."""
    return {(face_gateway, "RETRY_HEADER"): "x-retry-count"}


def _timeout_at_the_bound() -> Patches:
    """A job still open at the wait bound is answered 504 (a proxy's timeout), which the
    SDKs retry as a failure, instead of 202 naming the job."""

    def pending(held: Held) -> JSONResponse:
        body = {"error": {"message": "timed out", "type": "api_error", "code": "timeout"}}
        return JSONResponse(body, status_code=504)

    return {(face_gateway, "pending"): pending}


def _tool_calls_dropped() -> Patches:
    """The winner's tool calls are not rendered: the client gets an empty text answer
    (and a stop reason) where the model asked for a tool."""

    def calls_of(result: Any) -> list[dict[str, str]]:
        return []

    return {
        (module, "calls_of"): calls_of
        for module in (openai_chat, openai_responses, anthropic_messages)
    }


def _errors_as_problem_details() -> Patches:
    """The faces answer errors in the job API's problem details: the SDKs find no error
    of their API's shape, and no `x-should-retry: false` stops their retries."""

    def render(self: ErrorTable, problem: HttpProblem) -> JSONResponse:
        body = {"type": problem.kind.slug, "title": problem.kind.title, "detail": problem.detail}
        return JSONResponse(
            {**body, "status": problem.status},
            status_code=problem.status,
            media_type="application/problem+json",
        )

    return {(ErrorTable, "render"): render}


def _tool_turns_unread() -> Patches:
    """A conversation sent back after a tool call loses the assistant's calls: the
    provider is asked the tool's result with no call it answers."""
    chat, responses = openai_chat._assistant, openai_responses._item
    anthropic = anthropic_messages._messages

    def assistant(m: Any, where: str) -> dict[str, Any]:
        found = chat(m, where)
        found.pop("tool_calls", None)
        return found

    def item(item: Any, where: str, messages: list[dict[str, Any]]) -> None:
        responses(item, where, messages)
        for message in messages:
            message.pop("tool_calls", None)

    def messages(m: Any, where: str) -> list[dict[str, Any]]:
        found = anthropic(m, where)
        for message in found:
            message.pop("tool_calls", None)
        return found

    return {
        (openai_chat, "_assistant"): assistant,
        (openai_responses, "_item"): item,
        (anthropic_messages, "_messages"): messages,
    }


def _image_detail_dropped() -> Patches:
    """An image part's `detail` is not read: the provider sees every image at its
    default resolution."""
    chat, responses = openai_chat._user, openai_responses._user

    def without_detail(read: Callable[..., dict[str, Any]]) -> Callable[..., dict[str, Any]]:
        def user(content: Any, where: str) -> dict[str, Any]:
            found = read(content, where)
            for part in found.get("parts", ()):
                part.pop("detail", None)
            return found

        return user

    return {
        (openai_chat, "_user"): without_detail(chat),
        (openai_responses, "_user"): without_detail(responses),
    }


def _endings_lost() -> Patches:
    """Every answer that calls no tool ends as if it had ended by itself: an answer cut
    at its token limit reads as whole."""
    return {(openai_chat, "FINISH"): {}, (anthropic_messages, "STOP"): {}}


def _sampling_dropped() -> Patches:
    """`top_p` and the stop sequences are read, bound by the key, and never sent."""

    def sampling(body: Any) -> dict[str, Any]:
        return {}

    return {(openai_chat, "_sampling"): sampling, (anthropic_messages, "_sampling"): sampling}


def _failed_stream_silent() -> Patches:
    """A streamed call whose job failed gets a stream that just ends: no error event, so
    the SDK reads an empty answer as a success."""
    real = face_gateway.answer

    def answer(held: Held, *, stream: bool, **kw: Any) -> Any:
        if stream and held.finished and held.job.status.value != "succeeded":
            kw["error_event"] = lambda problem: ""
        return real(held, stream=stream, **kw)

    return {(face_module, "answer"): answer}


def _bad_tools_carried() -> Patches:
    """A tool is taken as given: one without a name, or whose parameters are no JSON
    Schema, becomes a job (and a provider's 400) instead of the caller's."""

    def tool(
        name: Any, description: Any, parameters: Any, where: str, strict: Any = None
    ) -> dict[str, Any]:
        return {"name": name, "parameters": parameters}

    return {(conversation, "tool"): tool, (anthropic_messages, "tool"): tool}


def _tool_descriptions_dropped() -> Patches:
    """A tool's description and strictness are read, bound by the key, and never sent."""
    real = conversation.tool

    def tool(
        name: Any, description: Any, parameters: Any, where: str, strict: Any = None
    ) -> dict[str, Any]:
        return real(name, None, parameters, where)

    return {(conversation, "tool"): tool, (anthropic_messages, "tool"): tool}


def _usage_swapped() -> Patches:
    """The usage is answered with its input and output tokens swapped."""

    def usage_of(result: dict[str, Any]) -> dict[str, int]:
        usage = result.get("usage") or {}
        given, made = int(usage.get("output_tokens", 0)), int(usage.get("input_tokens", 0))
        return {"prompt_tokens": given, "completion_tokens": made, "total_tokens": given + made}

    return {(openai_chat, "usage_of"): usage_of}


def _usage_guessed() -> Patches:
    """A usage the provider did not give is answered as one token made, not none."""

    def usage_of(result: dict[str, Any]) -> dict[str, int]:
        usage = result.get("usage") or {}
        given, made = int(usage.get("input_tokens", 0)), int(usage.get("output_tokens", 1))
        return {"prompt_tokens": given, "completion_tokens": made, "total_tokens": given + made}

    return {(openai_chat, "usage_of"): usage_of}


def _repeated_content_type_as_400() -> Patches:
    """Two `Content-Type` headers are answered as any other malformed request (400), not
    415 as on every route of the API."""
    return {(face_errors, "KEPT_STATUS"): frozenset()}


def _leaver_stops_the_reader() -> Patches:
    """A caller leaving at its bound stops the job's shared reader, though another caller
    still waits on it: that caller is cut off before the answer comes."""
    real = JobWatch.wait

    async def wait(self: JobWatch, job: Any, timeout: float) -> Any:
        try:
            return await real(self, job, timeout)
        finally:
            reader = self._readers.get(job.id)
            if reader is not None:
                reader.task.cancel()

    return {(JobWatch, "wait"): wait}


def _headers_undocumented() -> Patches:
    """`/openapi.json` leaves out the `Idempotency-Key` and `Prefer` headers: a client
    made from the document never sends a key."""
    return {(face_module, "HEADERS"): ()}


FACE_MUTANTS: tuple[Mutant, ...] = (
    Mutant(
        "face_key_header_ignored",
        "I1",
        "the gateway reads the key from a header no client sends: a double click is two jobs",
        _key_header_ignored,
    ),
    Mutant(
        "face_conflict_replays",
        "I2",
        "a key reused with another body replays the first answer instead of 409",
        _conflict_replays,
    ),
    Mutant(
        "face_fingerprint_drops_members",
        "I2",
        "only the messages bind the key: another top_p or user replays the first answer",
        _fingerprint_drops_members,
    ),
    Mutant(
        "face_streams_before_the_winner",
        "I5",
        "the answer begins at the first attempt's end, before a winner exists",
        _streams_before_the_winner,
    ),
    Mutant(
        "face_sdk_retry_unrecognised",
        "I1",
        "an SDK's retry of a keyless call is a new job: the provider runs twice",
        _sdk_retry_unrecognised,
    ),
    Mutant(
        "face_timeout_at_the_bound",
        "I4",
        "a call still open at its wait bound is answered 504, not 202 naming the job",
        _timeout_at_the_bound,
    ),
    Mutant(
        "face_tool_calls_dropped",
        "I5",
        "the winner's tool calls are not rendered: the client reads an empty answer",
        _tool_calls_dropped,
    ),
    Mutant(
        "face_errors_as_problem_details",
        "I2",
        "the faces answer errors as problem details, not in their API's error shape",
        _errors_as_problem_details,
    ),
    Mutant(
        "face_tool_turns_unread",
        "I2",
        "a tool call sent back is not read: the provider gets a result answering no call",
        _tool_turns_unread,
    ),
    Mutant(
        "face_image_detail_dropped",
        "I2",
        "an image part's detail is not carried to the provider",
        _image_detail_dropped,
    ),
    Mutant(
        "face_endings_lost",
        "I5",
        "an answer cut at its token limit reads as one that ended by itself",
        _endings_lost,
    ),
    Mutant(
        "face_sampling_dropped",
        "I2",
        "top_p and the stop sequences are accepted and never sent",
        _sampling_dropped,
    ),
    Mutant(
        "face_failed_stream_silent",
        "I5",
        "a streamed call whose job failed gets a stream that just ends, no error event",
        _failed_stream_silent,
    ),
    Mutant(
        "face_bad_tools_carried",
        "I2",
        "a tool without a name, or with no schema, is taken as given: a job, not a 400",
        _bad_tools_carried,
    ),
    Mutant(
        "face_tool_descriptions_dropped",
        "I2",
        "a tool's description and strictness are accepted and never sent",
        _tool_descriptions_dropped,
    ),
    Mutant(
        "face_usage_swapped",
        "I5",
        "the answer's usage has its input and output tokens swapped",
        _usage_swapped,
    ),
    Mutant(
        "face_usage_guessed",
        "I5",
        "an answer whose provider gave no usage says one token made",
        _usage_guessed,
    ),
    Mutant(
        "face_repeated_content_type_as_400",
        "I2",
        "two Content-Type headers are answered 400, not 415",
        _repeated_content_type_as_400,
    ),
    Mutant(
        "face_leaver_stops_the_reader",
        "I4",
        "a caller leaving at its bound cuts off another still waiting on the same job",
        _leaver_stops_the_reader,
    ),
    Mutant(
        "face_headers_undocumented",
        "I1",
        "/openapi.json documents no Idempotency-Key or Prefer header",
        _headers_undocumented,
    ),
)

LIKELIEST = {
    "face_key_header_ignored": "double-click-with-key",
    "face_conflict_replays": "key-binds-intent",
    "face_fingerprint_drops_members": "key-binds-intent",
    "face_streams_before_the_winner": "cut-stream",
    "face_sdk_retry_unrecognised": "sdk-retry",
    "face_timeout_at_the_bound": "wait-bound",
    "face_tool_calls_dropped": "tool-call",
    "face_errors_as_problem_details": "refusals",
    "face_tool_turns_unread": "tool-round-trip",
    "face_image_detail_dropped": "image-parts",
    "face_endings_lost": "endings",
    "face_sampling_dropped": "parameter-bounds",
    "face_failed_stream_silent": "failed-stream",
    "face_bad_tools_carried": "malformed-requests",
    "face_tool_descriptions_dropped": "carried-members",
    "face_usage_swapped": "endings",
    "face_usage_guessed": "usage-not-given",
    "face_repeated_content_type_as_400": "error-table",
    "face_headers_undocumented": "openapi",
    "face_leaver_stops_the_reader": "waiter-leaves",
}
"""The story that states the promise each face mutant breaks: played first, so that a
run stopping at the first catch plays one story, not all of them. Whether a mutant is
caught does not depend on it (every story is played until one catches it)."""


def run_face_mutants(
    database: Any,
    *,
    mutants: Iterable[Mutant] = FACE_MUTANTS,
    on_result: Callable[[Any], None] | None = None,
) -> list[Any]:
    """For each face mutant, the first face story that caught it (on any face), as
    `harness.checks.suite.MutantResult`s named `face FACE: STORY`."""
    from harness.checks.faces.clients import FACES
    from harness.checks.faces.run import play_story
    from harness.checks.faces.stories import STORIES
    from harness.checks.suite import MutantResult

    found = []
    for mutant in mutants:
        first = LIKELIEST.get(mutant.name)
        order = sorted(STORIES, key=lambda s: s.name != first)
        started = time.perf_counter()
        caught: tuple[str, ...] = ()
        with applied(mutant):
            for story in order:
                caught = _first_catch(story, FACES, database, play_story)
                if caught:
                    break
        seconds = time.perf_counter() - started
        found.append(MutantResult(mutant, caught, seconds, story=f"face story {first}"))
        if on_result is not None:
            on_result(found[-1])
    return found


def _first_catch(story: Any, faces: Iterable[Any], database: Any, play: Any) -> tuple[str, ...]:
    """The first face on which `story` fails, as a catch's name (empty: none did)."""
    for face in faces:
        result = play(story, face, database)
        if not result.passed:
            return (f"face {result.name}",)
    return ()


def any_mutant_named(name: str) -> Mutant:
    """An engine mutant or a face mutant by name (`--mutant NAME`); a usage error
    listing them all when neither is."""
    from harness.errors import ConfigError
    from harness.mutants import MUTANTS

    for mutant in (*MUTANTS, *FACE_MUTANTS):
        if mutant.name == name:
            return mutant
    known = ", ".join(m.name for m in (*MUTANTS, *FACE_MUTANTS))
    raise ConfigError(f"unknown mutant {name!r}; known: {known}")
