"""Playing one probe against a gateway, in real time, as its client would.

The driver scripts the named fake providers, plays the client's steps (a request streamed
or not with a client timeout, N identical requests at once with or without one key, a
retry of an intent after its timeout, an abandon after S seconds, waits), waits a quiet
window when a caller gave up (the gateway may still be calling for it), reads the fakes'
ledger, and finally sends one plain request to see the gateway still answers. It records;
`harness.probe.judge` judges.

Every intent gets a nonce (``hxn-...``) in its prompt text (and in ``user``/``metadata``
where the API has them): the fakes find it in what the gateway forwards, so executions are
tied to intents without relying on any header the gateway might drop.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx

from harness.probe.fakes import FakesLink
from harness.probe.ledger import Execution
from harness.probe.model import DEFAULT_QUIET_WINDOW, KeyMode, Probe, Request
from harness.probe.profiles import Answer, Profile

ALIVE_TIMEOUT = 15.0
SEEN_HEADERS = ("idempotent-replayed", "x-should-retry", "retry-after", "location")
"""Response headers the client keeps: what a gateway promises a client about replays,
retries and where its job is (judged where a property looks at them)."""
SDK_RETRY_HEADER = "x-stainless-retry-count"
CHANGED = "~changed"
"""Suffix of the record intent of a request that reuses an intent's key with another body."""
OBSERVE = 2.0
"""Seconds, at least, the driver watches for provider calls after a quiet window."""
SETTLE = 0.3
"""Seconds to let a gateway's last provider call land in the ledger after the answer."""
_SCALED = ("latency", "chunk_latency", "window", "flap")
"""Fault timings --time-scale multiplies. Not `retry_after`: it is a promise the gateway
must keep in absolute seconds against its own fixed timers and overheads; scaled below
them, a gateway that ignores it (a retry after its own upstream timeout, or one slowed by a
busy machine) would look as if it waited, so the verdict moved with the scale and the load."""


@dataclass(frozen=True, kw_only=True)
class ClientRecord:
    """One request the client sent and what it made of the answer."""

    seq: int
    step: int | None  # None: the alive check
    intent: str
    nonce: str
    key: str | None
    stream: bool
    retry: bool
    sent_at: float
    ended_at: float
    outcome: str  # answer | error | timeout | abandoned | unreachable
    status: int | None = None
    text: str | None = None
    model: str | None = None
    complete: bool = False
    detail: str | None = None
    usage: bool = False  # the answer carried token usage
    waited: float | None = None  # the client's timeout for this request, in seconds
    patient: bool = False  # it waited the probe's bound (not a timeout the step chose)
    accepted: int = 0  # 202s answered (each replayed with the same key) before this answer
    headers: dict[str, str] = field(default_factory=dict)  # SEEN_HEADERS the answer had

    @property
    def success(self) -> bool:
        return self.outcome == "answer"

    @property
    def seconds(self) -> float:
        return self.ended_at - self.sent_at

    def to_json(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


@dataclass(kw_only=True)
class ProbeRun:
    """Everything one play of a probe left behind: the client's records, the ledger
    entries from the probe's start to its judgement, and the alive check."""

    probe: Probe
    repeat: int
    time_scale: float
    quiet_window: float
    started_at: float
    gateway_timeout: float = 10.0  # the profile's, unscaled
    bound: float = 0.0  # seconds a patient caller waits (the probe's answer_within, resolved)
    ended_at: float = 0.0
    nonces: dict[str, str] = field(default_factory=dict)
    records: list[ClientRecord] = field(default_factory=list)
    ledger: list[Execution] = field(default_factory=list)
    abandoned_at: dict[str, float] = field(default_factory=dict)
    alive: ClientRecord | None = None
    alive_nonce: str = ""
    late: list[Execution] = field(default_factory=list)  # calls after the alive check
    earlier_nonces: frozenset[str] = frozenset()  # of the probes played before this one

    def scale(self, seconds: float) -> float:
        return seconds * self.time_scale


def nonce_for(*parts: object) -> str:
    """A probe nonce (``hxn-`` and 16 base-36 characters) from the given parts."""
    digest = int.from_bytes(hashlib.sha256("/".join(map(str, parts)).encode()).digest()[:10])
    chars = ""
    while len(chars) < 16:
        digest, r = divmod(digest, 36)
        chars += "0123456789abcdefghijklmnopqrstuvwxyz"[r]
    return f"hxn-{chars}"


def prompt_for(nonce: str) -> str:
    return f"Probe {nonce}: answer in one short sentence."


def _scaled(behaviour: Any, scale: float) -> Any:
    if scale == 1.0 or not isinstance(behaviour, dict):
        return behaviour
    return {k: v * scale if k in _SCALED else v for k, v in behaviour.items()}


class Driver:
    """Plays probes against one gateway through one profile, with one link to the fakes."""

    def __init__(
        self,
        *,
        gateway: str,
        profile: Profile,
        fakes: FakesLink,
        time_scale: float = 1.0,
        quiet_window: float | None = None,
        salt: str = "",
    ) -> None:
        self.gateway = gateway.rstrip("/")
        self.profile = profile
        self.fakes = fakes
        self.time_scale = time_scale
        self.quiet_window = quiet_window
        self.salt = salt
        self._seq = 0
        self._previous: ProbeRun | None = None
        self._issued: set[str] = set()
        self._lock = threading.Lock()

    def play(self, probe: Probe, repeat: int = 0) -> ProbeRun:
        # An explicit --quiet-window is seconds as given; a probe's (or the default) scales.
        quiet = self.quiet_window or (
            (probe.quiet_window or DEFAULT_QUIET_WINDOW) * self.time_scale
        )
        run = ProbeRun(
            probe=probe,
            repeat=repeat,
            time_scale=self.time_scale,
            quiet_window=quiet,
            started_at=0.0,
            gateway_timeout=self.profile.gateway_timeout,
            bound=probe.answer_within.resolve(self.time_scale, self.profile.gateway_timeout),
        )
        for intent in probe.intents:
            run.nonces[intent] = nonce_for(self.salt, probe.name, probe.seed, repeat, intent)
        run.alive_nonce = nonce_for(self.salt, probe.name, probe.seed, repeat, "(alive)")
        run.earlier_nonces = frozenset(self._issued)
        self._issued.update(run.nonces.values())
        self.collect_late()
        self.fakes.reset()
        for name, spec in probe.providers.items():
            if spec.script or spec.then is not None:
                script = [_scaled(b, self.time_scale) for b in spec.script]
                self.fakes.script(name, script, _scaled(spec.then, self.time_scale))
        run.started_at = time.time()
        for step in probe.steps:
            if step.at is not None:
                _sleep_until(run.started_at + run.scale(step.at))
            if step.action == "advance":
                _sleep(run.scale(step.seconds))
            elif step.request is not None:
                self._request_step(run, step.index, step.action, step.request)
        gave_up = [r for r in run.records if r.outcome in ("timeout", "abandoned")]
        if gave_up:
            # Watch one quiet window for the gateway to stop, then at least OBSERVE seconds
            # (and one gateway timeout: a gateway stuck in an upstream call retries only
            # when it ends) more for calls after it; its retry cadence does not scale.
            after = max(run.quiet_window, OBSERVE, run.gateway_timeout)
            _sleep_until(max(r.ended_at for r in gave_up) + run.quiet_window + after)
        else:
            _sleep(SETTLE)
        run.ledger = list(self.fakes.ledger())
        run.ended_at = time.time()
        self.fakes.clear_scripts()
        self.fakes.release()
        run.alive = self._send(
            run,
            step=None,
            intent="(alive)",
            nonce=run.alive_nonce,
            key=f"probe-{run.alive_nonce}",
            request=Request(intent="(alive)", timeout=ALIVE_TIMEOUT),
            retry=False,
        )
        # Released hangs return to the gateway now: what it does next for a caller who
        # left (a fallback call, a retry) lands within OBSERVE and is judged with this run.
        _sleep(OBSERVE if gave_up else SETTLE)
        seen = {e.request_id for e in run.ledger}
        run.late = [e for e in self.fakes.ledger() if e.request_id not in seen]
        self._previous = run
        return run

    def collect_late(self) -> None:
        """Calls for the last probe's intents that landed after it was played (a gateway
        still working for a caller who left) join its `late` list before the fakes are
        reset: they are judged with the probe they belong to, not found as strays in the
        next one. Judge a run once the next has started, or after calling this."""
        previous = self._previous
        if previous is None:
            return
        nonces = set(previous.nonces.values())
        seen = {e.request_id for e in (*previous.ledger, *previous.late)}
        previous.late += [
            e for e in self.fakes.ledger() if e.request_id not in seen and e.nonce in nonces
        ]

    def _request_step(self, run: ProbeRun, index: int, action: str, request: Request) -> None:
        nonce = run.nonces[request.intent]
        intent = request.intent
        retry = action == "retry"
        if request.change_body:  # the same key, another body: its executions are its own
            intent = request.intent + CHANGED
            nonce = run.nonces.setdefault(intent, nonce_for(self.salt, nonce, CHANGED))
        if retry:
            first = next(r for r in run.records if r.intent == request.intent)
            keys = [first.key]
        elif request.key is KeyMode.NONE:
            keys = [None] * request.count
        elif request.key is KeyMode.DISTINCT:
            keys = [f"probe-{nonce}-{i}" for i in range(request.count)]
        else:
            keys = [f"probe-{nonce}"] * request.count
        if len(keys) == 1:
            self._send(run, index, intent, nonce, keys[0], request, retry)
            return
        barrier = threading.Barrier(len(keys))
        threads = [
            threading.Thread(
                target=self._send,
                args=(run, index, request.intent, nonce, key, request, retry, barrier),
                name=f"probe-{run.probe.name}-{i}",
                daemon=True,
            )
            for i, key in enumerate(keys)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(_wait_of(run, request) + ALIVE_TIMEOUT)

    def _send(
        self,
        run: ProbeRun,
        step: int | None,
        intent: str,
        nonce: str,
        key: str | None,
        request: Request,
        retry: bool,
        barrier: threading.Barrier | None = None,
    ) -> ClientRecord:
        extra = {SDK_RETRY_HEADER: str(request.sdk_retry)} if request.sdk_retry else {}
        if request.prefer_wait is not None:
            extra["Prefer"] = f"wait={run.scale(request.prefer_wait):g}"
        call = self.profile.call(
            prompt=prompt_for(nonce), nonce=nonce, key=key, stream=request.stream, extra=extra
        )
        timeout = _wait_of(run, request) if step is not None else ALIVE_TIMEOUT
        with self._lock:
            self._seq += 1
            seq = self._seq
        common: dict[str, Any] = {
            "seq": seq,
            "step": step,
            "intent": intent,
            "nonce": nonce,
            "key": key,
            "stream": request.stream,
            "retry": retry,
            "waited": round(timeout, 3),
            "patient": step is not None and request.timeout is None,
        }
        with httpx.Client(base_url=self.gateway, timeout=timeout) as client:
            if barrier is not None:
                barrier.wait(ALIVE_TIMEOUT)
            sent = time.time()
            outcome = self._exchange(client, call, request.stream)
            outcome = self._replay_accepted(client, call, request, key, sent + timeout, outcome)
        ended = time.time()
        if outcome.get("outcome") == "timeout" and request.abandon is not None:
            outcome["outcome"] = "abandoned"
            run.abandoned_at[intent] = ended
        record = ClientRecord(**common, sent_at=sent, ended_at=ended, **outcome)
        with self._lock:
            if step is None:
                run.alive = record
            else:
                run.records.append(record)
        return record

    def _replay_accepted(
        self,
        client: httpx.Client,
        call: Any,
        request: Request,
        key: str | None,
        deadline: float,
        outcome: dict[str, Any],
    ) -> dict[str, Any]:
        """A 202 (the gateway's wait bound passed) is not an answer: as its docs tell a
        client, repeat the call with the same key after its Retry-After, until an answer
        or the caller's own deadline."""
        accepted = 0
        while outcome.get("status") == 202 and key is not None and time.time() < deadline:
            accepted += 1
            pause = _seconds((outcome.get("headers") or {}).get("retry-after"), 1.0)
            _sleep(min(pause, deadline - time.time()))
            remaining = deadline - time.time()
            if remaining <= 0:
                break
            client.timeout = httpx.Timeout(remaining)
            outcome = self._exchange(client, call, request.stream)
        if accepted:
            outcome["accepted"] = accepted
        if outcome.get("status") == 202:
            outcome = {**outcome, "outcome": "timeout", "detail": "202 until the deadline"}
        return outcome

    def _exchange(self, client: httpx.Client, call: Any, stream: bool) -> dict[str, Any]:
        try:
            if stream and self.profile.streams:
                return self._streamed(client, call)
            response = client.request(call.method, call.path, headers=call.headers, json=call.body)
            return self._whole(response)
        except httpx.TimeoutException:
            return {"outcome": "timeout", "detail": "no answer before the client's timeout"}
        except httpx.ConnectError:
            return {"outcome": "unreachable", "detail": "could not connect to the gateway"}
        except httpx.HTTPError as exc:
            return {"outcome": "error", "detail": f"connection broke: {type(exc).__name__}"}

    def _whole(self, response: httpx.Response) -> dict[str, Any]:
        status = response.status_code
        seen = _seen(response)
        if status not in self.profile.success:
            return {"outcome": "error", "status": status, "detail": response.text[:300], **seen}
        try:
            data = response.json()
        except ValueError:
            return {"outcome": "error", "status": status, "detail": "2xx body is not JSON", **seen}
        return {**_from_answer(self.profile.read_whole(data), status), **seen}

    def _streamed(self, client: httpx.Client, call: Any) -> dict[str, Any]:
        with client.stream(call.method, call.path, headers=call.headers, json=call.body) as resp:
            status, seen = resp.status_code, _seen(resp)
            if status not in self.profile.success:
                resp.read()
                return {"outcome": "error", "status": status, "detail": resp.text[:300], **seen}
            parts: list[tuple[str | None, str]] = []
            try:
                for pair in _sse(resp.iter_lines()):
                    parts.append(pair)
            except httpx.TimeoutException:
                answer = self.profile.read_stream(parts)
                detail = "the stream stalled past the client's timeout"
                return {**_from_answer(answer, status), "outcome": "timeout", "detail": detail}
            except httpx.HTTPError as exc:
                answer = self.profile.read_stream(parts)
                detail = f"the stream broke: {type(exc).__name__}"
                return {**_from_answer(answer, status), "outcome": "error", "detail": detail}
        return {**_from_answer(self.profile.read_stream(parts), status), **seen}


def _seen(response: httpx.Response) -> dict[str, Any]:
    found = {h: response.headers[h] for h in SEEN_HEADERS if h in response.headers}
    return {"headers": found}


def _seconds(value: str | None, default: float) -> float:
    try:
        return max(0.0, float(value)) if value is not None else default
    except ValueError:
        return default


def _wait_of(run: ProbeRun, request: Request) -> float:
    """The client's timeout: the step's own (scaled), else patient up to the bound."""
    return run.scale(request.timeout) if request.timeout is not None else run.bound


def _from_answer(answer: Answer, status: int) -> dict[str, Any]:
    outcome = "answer" if answer.error is None and answer.text is not None else "error"
    return {
        "outcome": outcome,
        "status": status,
        "text": answer.text,
        "model": answer.model,
        "complete": answer.complete,
        "detail": answer.error,
        "usage": answer.usage,
    }


def _sse(lines: Iterator[str]) -> Iterator[tuple[str | None, str]]:
    """(event name, data) per server-sent event."""
    event: str | None = None
    data: list[str] = []
    for line in lines:
        if not line:
            if data:
                yield event, "\n".join(data)
            event, data = None, []
        elif line.startswith("event:"):
            event = line[6:].strip()
        elif line.startswith("data:"):
            data.append(line[5:].strip())
    if data:
        yield event, "\n".join(data)


def _sleep(seconds: float) -> None:
    if seconds > 0:
        threading.Event().wait(seconds)


def _sleep_until(moment: float) -> None:
    _sleep(moment - time.time())
