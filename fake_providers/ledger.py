"""The ledger: every request a fake provider executed, so side effects can be counted.

One entry per request that reached a completion endpoint — including the ones the fake
failed on purpose, so an SDK's hidden retries show up as extra entries. Each entry says
whether a real provider would bill it, whether the work has finished (by the fakes'
clock: an answer with latency finishes when the latency has passed, whether or not the
caller is still listening) and whether the full response reached the caller.

Entries never hold headers beyond the caller's attempt id and the SDK retry count: no
API key or other credential is ever stored.
"""

from __future__ import annotations

import hashlib
import json
import math
import threading
from collections import OrderedDict, deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass, replace
from typing import Any


@dataclass(frozen=True, kw_only=True)
class LedgerEntry:
    """One execution a fake performed (or one request it refused), as tests count them.

    ``finished`` and ``charged`` are computed when the entry is read (``completes_at``
    against the fakes' time), so a snapshot never changes under its reader. ``billed``
    says the execution is billable, whether or not its work has finished yet; a slow
    answer is ``charged`` only once its work is done (work that never finishes, a stall
    after content, is charged at once).
    """

    request_id: str  # the fake's id, sent back as x-request-id / request-id
    attempt_id: str | None  # from the caller's ATTEMPT_HEADER
    provider_kind: str  # the route's Api value, "openai" | "anthropic" (see the package doc)
    model: str | None
    behaviour: str  # a BehaviourName value, or "invalid_request"
    stream: bool
    status_code: int | None  # the status the fake answered with; None: no response at all
    input_tokens: int
    output_tokens: int
    billed: bool  # a real provider charges for this execution (once its work is done)
    finished: bool  # the work is done (as of when this snapshot was taken)
    delivered: bool  # the whole response reached the caller
    sdk_retry_count: int | None  # the SDK's x-stainless-retry-count header, if sent
    received_at: float
    completes_at: float | None  # when the work finishes; None: never
    response: dict[str, Any] | None = None  # what the execution produced (body or error)
    endpoint: str = "chat.completions"  # or "responses", "messages", "embeddings"
    stored: bool = False  # kept for retrieval (`store`): listed or fetched once finished
    metadata: dict[str, str] | None = None  # the request's `metadata`, for stored listings
    nonce: str | None = None  # the probe nonce found in the request (fake_providers.nonce)
    prompt_sha256: str | None = None  # of the prompt's texts (`prompt_digest`); None: unread
    max_tokens: int | None = None  # the output cap the request asked for; None: none, or unread
    temperature: float | None = None  # the sampling temperature it asked for; None: none
    top_p: float | None = None  # the nucleus sampling it asked for; None: none
    stop: list[str] | None = None  # its stop sequences (OpenAI `stop`, Anthropic
    # `stop_sequences`); None: none
    parallel_tools: bool | None = None  # it lets the model call several tools at once
    # (False: OpenAI `parallel_tool_calls: false`, Anthropic `tool_choice.
    # disable_parallel_tool_use: true`); None: unread
    images: list[str] | None = None  # the images its messages carry, in order
    # (`image_sources`); None: unread
    tool_choice: str | None = None  # how it let the model choose among them: "auto",
    # "required" (Anthropic "any"), "none" or "tool:<name>"; None: unread
    tools: list[str] | None = None  # the function tools it offered, by name, in order
    # (`[]`: none); None: unread
    strict_tools: list[str] | None = None  # of those, the ones sent with `strict: true`
    tool_descriptions: dict[str, str] | None = None  # of those, the descriptions sent,
    # by tool name (a tool sent without one is absent)
    response_format: str | None = None  # the output it asked for (`response_format_of`):
    # "text", "json_object" or "json_schema:<digest>"; None: unread
    provider: str = "default"  # the named fake provider (/p/{name}/...); unprefixed: default
    cost_usd: float = 0.0  # what a real provider charges for it, from the price table
    charged: bool = False  # billed and its work done by now (computed when read; below)
    error_kind: str | None = None  # the error it answered (an ErrorKind value), 200 or not
    body_digest: str | None = None  # of the request body, to tell resends apart
    repeat: int = 0  # earlier entries with the same body (0: the first time it was seen)
    resent_by: str | None = None  # a resend: "sdk" (x-stainless-retry-count > 0) or "caller"
    hung_up_at: float | None = None  # the caller closed the connection before the whole
    # response reached it, at this time on the fakes' clock (over HTTP only: in-process
    # there is no connection to close)
    retry_after: float | None = None  # the Retry-After (seconds) its answer's head carried
    answer_sent: bool = False  # it sent its answer as produced (`response`), whole and
    # intact (not cut, garbled, withheld or queued): a success or a content fault
    ends_at: float | None = None  # when the fake's answer ends on the fakes' clock, played
    # to a caller who keeps listening: its last byte sent, its connection dropped, its
    # client's failure raised (`completes_at` is when the work is done); None: never on
    # its own (a stall: the caller's deadline or a release ends it)
    bytes_read: int | None = None  # the body bytes its caller read, counted as the
    # in-process transport handed them over (0 from the request on); None over HTTP
    # (what crossed the socket is the caller's to count, not the fake's)
    head_read_at: float | None = None  # when its caller got the response head (None:
    first_byte_read_at: float | None = None  # none), and its first body byte (in process)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def prompt_digest(texts: Iterable[str]) -> str:
    """What a ledger entry records of the prompt a request carried: SHA-256, in lowercase
    hex, of the UTF-8 bytes of the JSON array of its texts (the system prompt, then each
    message's text, in order; compact separators, non-ASCII characters as themselves).
    Both dialects give the same texts for the same plain conversation (a tool
    conversation's follow each wire: arguments as sent, the results an Anthropic request
    joins in one message joined), so a client can tell what a provider was asked without
    the ledger keeping the prompt itself."""
    text = json.dumps(list(texts), ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def response_format_of(
    schema: Mapping[str, Any] | None, json_mode: bool, *, any_object_is_json_mode: bool
) -> str:
    """What a ledger entry records of the output a request asked for: ``text`` (none
    asked for), ``json_object`` (a JSON object of any shape: OpenAI's JSON mode) or
    ``json_schema:`` and the SHA-256 (lowercase hex) of the schema's canonical JSON
    (keys sorted, compact separators, non-ASCII as itself, a whole-number float as an
    integer). Anthropic Messages has no JSON mode: there a schema that is
    ``{"type": "object"}`` alone asks for any object, which is JSON mode
    (`any_object_is_json_mode`)."""
    if schema is None:
        return "json_object" if json_mode else "text"
    if any_object_is_json_mode and dict(schema) == {"type": "object"}:
        return "json_object"
    text = json.dumps(_canonical(schema), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return f"json_schema:{hashlib.sha256(text.encode('utf-8')).hexdigest()}"


def image_sources(body: Any) -> list[str] | None:
    """The images a request's messages carry, in order, each as one text whichever API
    sent it: an inline image as ``data:<media type>;sha256=<SHA-256 of its base64
    text>`` (Chat Completions' and Responses' ``data:`` URL, Messages' ``base64``
    source), one fetched by URL as that URL. None: a body with no messages to read."""
    if not isinstance(body, Mapping):
        return None
    messages = body.get("messages", body.get("input"))
    if not isinstance(messages, list):
        return [] if isinstance(messages, str) else None
    found: list[str] = []
    for message in messages:
        content = message.get("content") if isinstance(message, Mapping) else None
        for part in content if isinstance(content, list) else ():
            source = _image(part) if isinstance(part, Mapping) else None
            if source is not None:
                found.append(source)
    return found


def _image(part: Mapping[str, Any]) -> str | None:
    kind = part.get("type")
    if kind == "image_url":  # Chat Completions
        image = part.get("image_url")
        url = image.get("url") if isinstance(image, Mapping) else None
    elif kind == "input_image":  # Responses
        url = part.get("image_url")
    elif kind == "image":  # Messages
        source = part.get("source")
        if not isinstance(source, Mapping):
            return None
        if source.get("type") == "base64":
            return _inline(str(source.get("media_type")), str(source.get("data")))
        url = source.get("url")  # fetched by URL, whatever it holds: never decoded
        return url if isinstance(url, str) else None
    else:
        return None
    if not isinstance(url, str):
        return None
    head, comma, data = url.partition(",")
    if comma and head.startswith("data:") and head.endswith(";base64"):
        return _inline(head.removeprefix("data:").removesuffix(";base64"), data)
    return url


def _inline(media: str, data: str) -> str:
    return f"data:{media};sha256={hashlib.sha256(data.encode('utf-8')).hexdigest()}"


def _canonical(value: Any) -> Any:
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        return int(value)
    if isinstance(value, Mapping):
        return {str(k): _canonical(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_canonical(v) for v in value]
    return value


DEFAULT_CAPACITY = 10_000
"""Entries a ledger keeps before it forgets the oldest (and counts them in `dropped`)."""


class Ledger:
    """Thread-safe, in-memory; read it in-process or over the control API.

    Bookkeeping per request is O(1) (entries are kept by request id, and by attempt id
    for lookups), and memory is bounded: past `capacity` entries the oldest is forgotten
    and counted in `dropped`, so a long-running server neither slows down nor grows."""

    def __init__(self, now: Callable[[], float], *, capacity: int = DEFAULT_CAPACITY) -> None:
        if capacity < 1:
            raise ValueError("a ledger keeps at least one entry")
        self._now = now
        self.capacity = capacity
        self._lock = threading.Condition()
        # By request id, oldest first. An OrderedDict, not a dict: popping a dict's first
        # key leaves a hole that every later `next(iter(...))` walks past, so a dict used
        # as a queue costs O(n) per eviction.
        self._entries: OrderedDict[str, LedgerEntry] = OrderedDict()
        self._by_attempt: dict[str, deque[str]] = {}  # attempt id -> request ids, oldest first
        self._by_nonce: dict[str, deque[str]] = {}  # probe nonce -> request ids, oldest first
        self._by_body: dict[str, deque[str]] = {}  # body digest -> request ids, oldest first
        self._sequence = 0
        self._dropped = 0

    @property
    def dropped(self) -> int:
        """Entries forgotten because the ledger was full (oldest first)."""
        with self._lock:
            return self._dropped

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)

    def next_id(self) -> int:
        with self._lock:
            self._sequence += 1
            return self._sequence

    def record(self, entry: LedgerEntry) -> None:
        with self._lock:
            if len(self._entries) >= self.capacity:
                self._forget_oldest()
            if entry.body_digest is not None:
                same = self._by_body.setdefault(entry.body_digest, deque())
                entry = replace(entry, repeat=len(same), resent_by=_resender(entry, len(same)))
                same.append(entry.request_id)
            self._entries[entry.request_id] = entry
            if entry.attempt_id is not None:
                self._by_attempt.setdefault(entry.attempt_id, deque()).append(entry.request_id)
            if entry.nonce is not None:
                self._by_nonce.setdefault(entry.nonce, deque()).append(entry.request_id)
            self._lock.notify_all()

    def _forget_oldest(self) -> None:
        _, oldest = self._entries.popitem(last=False)
        self._dropped += 1
        for index, key in (
            (self._by_attempt, oldest.attempt_id),
            (self._by_nonce, oldest.nonce),
            (self._by_body, oldest.body_digest),
        ):
            if key is not None:
                ids = index[key]
                ids.popleft()  # the oldest entry is the oldest of its attempt (nonce) too
                if not ids:
                    del index[key]

    def mark_hung_up(self, request_id: str) -> None:
        """The caller closed the connection before the response was delivered."""
        with self._lock:
            entry = self._entries.get(request_id)
            if entry is not None and not entry.delivered and entry.hung_up_at is None:
                self._entries[request_id] = replace(entry, hung_up_at=self._now())
                self._lock.notify_all()

    def count_read(self, request_id: str, size: int, *, head: bool = True) -> None:
        """The in-process caller read `size` more bytes of the response body, its head
        read before them (`head` False: it has sent its request and read nothing yet)."""
        with self._lock:
            entry = self._entries.get(request_id)
            if entry is None:
                return
            now, first, got = self._now(), entry.first_byte_read_at, entry.head_read_at
            self._entries[request_id] = replace(
                entry,
                bytes_read=(entry.bytes_read or 0) + size,
                head_read_at=now if head and got is None else got,
                first_byte_read_at=now if first is None and size > 0 else first,
            )

    def mark_delivered(self, request_id: str) -> None:
        with self._lock:
            entry = self._entries.get(request_id)
            if entry is not None:
                self._entries[request_id] = replace(entry, delivered=True)
                self._lock.notify_all()

    def _snapshot(self, entry: LedgerEntry) -> LedgerEntry:
        done = entry.completes_at is not None and self._now() >= entry.completes_at
        charged = entry.billed and (done or entry.completes_at is None)
        return replace(entry, finished=done, charged=charged)

    def entries(
        self,
        *,
        attempt_id: str | None = None,
        provider_kind: str | None = None,
        nonce: str | None = None,
        provider: str | None = None,
    ) -> list[LedgerEntry]:
        """Entries matching every filter given, oldest first; by attempt id or nonce the
        lookup is indexed."""
        with self._lock:
            if attempt_id is not None:
                found = [self._entries[i] for i in self._by_attempt.get(attempt_id, ())]
            elif nonce is not None:
                found = [self._entries[i] for i in self._by_nonce.get(nonce, ())]
            else:
                found = list(self._entries.values())
        wanted = {"attempt_id": attempt_id, "provider_kind": provider_kind, "nonce": nonce}
        wanted = {k: v for k, v in {**wanted, "provider": provider}.items() if v is not None}
        found = [e for e in found if all(getattr(e, k) == v for k, v in wanted.items())]
        return [self._snapshot(e) for e in found]

    def by_nonce(self, nonce: str) -> list[LedgerEntry]:
        """The executions whose request carried this probe nonce, oldest first."""
        return self.entries(nonce=nonce)

    def get(self, request_id: str) -> LedgerEntry | None:
        with self._lock:
            found = self._entries.get(request_id)
        return None if found is None else self._snapshot(found)

    def wait_for(self, count: int, *, timeout: float = 5.0, **filters: str) -> list[LedgerEntry]:
        """Block until at least `count` entries match `filters`; for tests that must know a
        request has reached the fake before acting (no sleeping)."""
        with self._lock:
            ok = self._lock.wait_for(lambda: len(self._matching(filters)) >= count, timeout)
        if not ok:
            raise TimeoutError(f"the ledger did not reach {count} entries matching {filters}")
        return self.entries(**filters)

    def _matching(self, filters: dict[str, str]) -> list[LedgerEntry]:
        return [
            e for e in self._entries.values() if all(getattr(e, k) == v for k, v in filters.items())
        ]

    def lookup(
        self,
        *,
        attempt_id: str | None = None,
        request_id: str | None = None,
        provider_kind: str | None = None,
        provider: str | None = None,
    ) -> dict[str, Any]:
        """Did the execution for this attempt (or request) finish, and with what?

        With several executions for one attempt (retries), a finished, billed one that
        produced an answer wins; else a billed one still working (the attempt is not
        finished while any billed work is running); otherwise the latest one speaks."""
        if request_id is not None:
            entry = self.get(request_id)
            matches = [] if entry is None else [entry]
        else:
            matches = self.entries(
                attempt_id=attempt_id, provider_kind=provider_kind, provider=provider
            )
        if not matches:
            return {"found": False, "executions": 0}
        answered = [e for e in matches if e.finished and e.billed and e.response is not None]
        working = [e for e in matches if e.billed and not e.finished]
        if answered:
            chosen = answered[0]
        elif working:
            chosen = working[0]
        else:
            chosen = matches[-1]
        return {
            "found": True,
            "executions": len(matches),
            "finished": chosen.finished,
            "request_id": chosen.request_id,
            "attempt_id": chosen.attempt_id,
            "provider_kind": chosen.provider_kind,
            "behaviour": chosen.behaviour,
            "status_code": chosen.status_code,
            "billed": chosen.billed,
            "charged": chosen.charged,
            "delivered": chosen.delivered,
            "response": chosen.response if chosen.finished else None,
        }

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._by_attempt.clear()
            self._by_nonce.clear()
            self._by_body.clear()
            self._dropped = 0

    def to_json(self) -> list[dict[str, Any]]:
        return [e.to_json() for e in self.entries()]


def _resender(entry: LedgerEntry, earlier: int) -> str | None:
    """Who sent this body again: the SDK (it counts its retries in a header) or the
    caller itself (a router's retry or fallback goes through a fresh SDK call, count 0)."""
    if entry.sdk_retry_count:
        return "sdk"
    return "caller" if earlier else None
