"""A live target over HTTP: a `harness serve` API and the fake-provider server its
providers call, as the scenario runner's HTTP target drives them (`remote.py`).

The one place where httpx's errors become ours: a refused connection, a timeout, an
error status from the fakes or an answer that is not JSON is `TargetUnreachable`, naming
the request (method and URL) and the reason. Bearer tokens are held by `Tokens`, which
never shows them: not in its repr, not in an error message, not in a history; URLs and
errors never carry them (they travel in a header only).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import httpx

from fake_providers import FakeControlClient, InvalidInput
from harness.errors import ConfigError, ScenarioError, TargetUnreachable

DEFAULT_TIME_SCALE = 0.1
"""Real seconds per scenario second: a 30 s provider latency takes 3 s."""
MAX_TIME_SCALE = 100.0
DEFAULT_TOKENS_ENV = "HARNESS_TARGET_TOKENS"
"""The environment variable holding `OWNER=TOKEN,OWNER=TOKEN` for the target's owners."""
REQUEST_TIMEOUT = 10.0
"""Seconds any one request to the target may take (none waits on a provider)."""
NEEDED_PROVIDERS = ("primary", "fallback")
"""The provider names scenarios use (`stage.PROVIDER_API`): the target must serve both."""

_TOKEN = re.compile(r"[\x21-\x7e]+")  # what an Authorization header can carry


class Tokens:
    """Bearer tokens by owner, for the owners a scenario acts as. Never shown: the repr
    counts them, and errors about them name an entry's position, never its text (a
    swapped `TOKEN=OWNER` would otherwise print a token as an owner's name)."""

    __slots__ = ("_by_owner",)

    def __init__(self, by_owner: Mapping[str, str]) -> None:
        self._by_owner = dict(by_owner)

    @classmethod
    def parse(cls, text: str, *, source: str) -> Tokens:
        """Tokens from `OWNER=TOKEN,OWNER=TOKEN` (as in the environment variable `source`)."""
        by_owner: dict[str, str] = {}
        for position, entry in enumerate(text.split(","), 1):
            owner, sep, token = (part.strip() for part in entry.partition("="))
            if not sep or not owner or not _TOKEN.fullmatch(token):
                raise ConfigError(f"{source}: entry {position} is not OWNER=TOKEN")
            if owner in by_owner:
                raise ConfigError(f"{source}: entry {position} repeats an earlier owner")
            by_owner[owner] = token
        return cls(by_owner)

    def __contains__(self, owner: object) -> bool:
        return owner in self._by_owner

    def __len__(self) -> int:
        return len(self._by_owner)

    def __repr__(self) -> str:
        return f"<Tokens for {len(self)} owner(s)>"

    def owners(self) -> tuple[str, ...]:
        """The owners, in the order they were given."""
        return tuple(self._by_owner)

    def header(self, owner: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {self._by_owner[owner]}"}


@dataclass(frozen=True, kw_only=True)
class Target:
    """Where the HTTP target runs: `api_url` a `harness serve`, `fakes_url` the
    fake-provider server its providers call (control API under `/control`); every scenario
    second lasts `time_scale` real seconds; `tokens` say who the scenario's owners are."""

    api_url: str
    fakes_url: str
    tokens: Tokens = field(repr=False)
    time_scale: float = DEFAULT_TIME_SCALE
    tokens_source: str = DEFAULT_TOKENS_ENV

    def __post_init__(self) -> None:
        for flag, url in (("--target", self.api_url), ("--fakes", self.fakes_url)):
            check_url(flag, url)
        object.__setattr__(self, "api_url", self.api_url.rstrip("/"))
        object.__setattr__(self, "fakes_url", self.fakes_url.rstrip("/"))
        scale = self.time_scale
        if isinstance(scale, bool) or not isinstance(scale, int | float):
            raise ConfigError("--time-scale must be a number")
        if not 0 < scale <= MAX_TIME_SCALE:
            raise ConfigError(f"--time-scale must be in (0, {MAX_TIME_SCALE:g}], not {scale:g}")
        if not len(self.tokens):
            raise ConfigError(f"{self.tokens_source} holds no OWNER=TOKEN entry")


def check_url(flag: str, url: str) -> None:
    try:
        parsed = httpx.URL(url)
    except (httpx.InvalidURL, TypeError):
        raise ConfigError(f"{flag}: {url!r} is not a URL") from None
    if parsed.scheme not in ("http", "https") or not parsed.host:
        raise ConfigError(f"{flag}: {url!r} is not an http:// or https:// URL")


class Reply(NamedTuple):
    """An API answer: its status and its JSON body (problem details on errors)."""

    status: int
    body: Any

    @property
    def reason(self) -> str | None:
        """A refusal's reason (`AttemptRefused.reason`), when the problem names one."""
        return self.body.get("reason") if isinstance(self.body, dict) else None

    @property
    def detail(self) -> str:
        return str(self.body.get("detail", "")) if isinstance(self.body, dict) else ""


class TargetClient:
    """HTTP to a live target: the API as any client (one owner's token per call) and the
    fakes' control API (scripts, ledger, reset), with every failure mapped to ours."""

    def __init__(self, target: Target, *, transport: httpx.BaseTransport | None = None) -> None:
        self.target = target
        self._http = httpx.Client(timeout=REQUEST_TIMEOUT, transport=transport)
        self._control = FakeControlClient(f"{target.fakes_url}/control", client=self._http)

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> TargetClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- the API -----------------------------------------------------------------------

    def api(self, method: str, path: str, *, owner: str, **kwargs: Any) -> Reply:
        """One API request as `owner` (`json`, `headers`, `params` as httpx takes them)."""
        url = f"{self.target.api_url}{path}"
        headers = {**kwargs.pop("headers", {}), **self.target.tokens.header(owner)}
        if "json" in kwargs:  # as Python writes it: NaN and Infinity reach the server, which
            # must refuse them (httpx's own encoder refuses to send them at all)
            kwargs["content"] = json.dumps(kwargs.pop("json")).encode()
            headers.setdefault("Content-Type", "application/json")
        with mapped(f"{method} {url}"):
            response = self._http.request(method, url, headers=headers, **kwargs)
            body = response.json() if response.content else None
        return Reply(response.status_code, body)

    def events(self, owner: str, job_id: int) -> list[dict[str, Any]]:
        """Every event of the job, oldest first (all pages)."""
        found: list[dict[str, Any]] = []
        path: str | None = f"/v1/jobs/{job_id}/events?limit=100"
        while path is not None:
            reply = self.api("GET", path, owner=owner)
            if reply.status != 200:
                raise TargetUnreachable(f"GET {path} answered HTTP {reply.status}: {reply.detail}")
            found.extend(reply.body["events"])
            path = reply.body["next"]
        return found

    # -- the fakes ---------------------------------------------------------------------

    def script(self, *behaviours: Any, api: str, then: Any = None) -> None:
        with mapped(f"POST {self.target.fakes_url}/control/scripts"):
            self._control.script(*behaviours, api=api, then=then)

    def ledger(self) -> list[dict[str, Any]]:
        with mapped(f"GET {self.target.fakes_url}/control/ledger"):
            return self._control.ledger()

    def reset(self) -> None:
        with mapped(f"POST {self.target.fakes_url}/control/reset"):
            self._control.reset()

    def release(self) -> None:
        with mapped(f"POST {self.target.fakes_url}/control/release"):
            self._control.release()

    # -- before anything runs ----------------------------------------------------------

    def preflight(self) -> None:
        """Both servers answer, every token names an owner, and the target serves the
        providers scenarios use. ConfigError or TargetUnreachable (exit 2) otherwise."""
        self._expect_ok("--target", f"{self.target.api_url}/healthz", "a harness serve")
        self._expect_ok("--fakes", f"{self.target.fakes_url}/control/health", "the fakes")
        for position, owner in enumerate(self.target.tokens.owners(), 1):
            reply = self.api("GET", "/v1/providers", owner=owner)
            if reply.status == 401:
                raise ConfigError(
                    f"{self.target.tokens_source}: the target refuses the token of entry "
                    f"{position} (401)"
                )
            if reply.status != 200:
                raise ConfigError(f"--target: GET /v1/providers answered HTTP {reply.status}")
        served = {p["name"] for p in reply.body["providers"]}
        missing = [name for name in NEEDED_PROVIDERS if name not in served]
        if missing:
            raise ConfigError(
                f"--target serves providers {sorted(served)}; scenarios need "
                f"{', '.join(NEEDED_PROVIDERS)} (OpenAI- and Anthropic-style, on the fakes)"
            )

    def _expect_ok(self, flag: str, url: str, what: str) -> None:
        with mapped(f"{flag} {url}"):
            response = self._http.get(url)
        if response.status_code != 200:
            raise ConfigError(
                f"{flag}: GET {url} answered HTTP {response.status_code}; is it {what}?"
            )


@contextmanager
def mapped(what: str) -> Iterator[None]:
    """httpx's failures (and the fakes' refusals) inside, as our errors naming `what`."""
    try:
        yield
    except httpx.TimeoutException:
        raise TargetUnreachable(f"{what}: no answer within {REQUEST_TIMEOUT:g} s") from None
    except httpx.TransportError as exc:
        raise TargetUnreachable(f"{what}: {type(exc).__name__}: {exc}") from None
    except httpx.HTTPStatusError as exc:
        raise TargetUnreachable(f"{what}: answered HTTP {exc.response.status_code}") from None
    except InvalidInput as exc:
        raise ScenarioError(f"{what}: the fakes refused {exc.field}: {exc.message}") from None
    except ValueError:
        raise TargetUnreachable(f"{what}: the answer is not JSON") from None
