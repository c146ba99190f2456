"""Recorded jobs read over a live `harness serve`'s job API, for `capture` (`--target`).

`GET /v1/jobs/{id}` gives the job with its attempts and `GET /v1/jobs/{id}/events` its
history, page by page: everything `capture` reads, except the owner's name, which the
API never shows (the owner is the caller). Each job is asked for with each owner's token
in turn (another owner's job is a 404); the owner is the name given with the token that
sees it (`OWNER=TOKEN`, as `harness scenarios run --target` takes them). Tokens travel
in a header only: never in a URL, an error or the output.

Fields of the engine's records the API does not carry, and that `capture` never reads,
are filled neutrally (`live_slot`, `read_version`, `attempt_count`); they are named here
so no reader takes them for recorded values.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any

import httpx

from harness.core.models import Attempt, Event, Job, Policy
from harness.core.states import AttemptState, EventKind, JobState, OutcomeKind, Resolution
from harness.errors import NotFound, TargetUnreachable
from harness.scenarios.capture import Recorded
from harness.scenarios.target import REQUEST_TIMEOUT, Tokens, check_url, mapped

PAGE = 100  # events per page: the API's most


class JobApiReader:
    """Reads jobs and their histories from a job API as the owners `tokens` name."""

    def __init__(
        self, api_url: str, tokens: Tokens, *, transport: httpx.BaseTransport | None = None
    ) -> None:
        check_url("--target", api_url)  # the one check of a target's URL
        self.api_url = api_url.rstrip("/")
        self.tokens = tokens
        self._http = httpx.Client(timeout=REQUEST_TIMEOUT, transport=transport)

    def __enter__(self) -> JobApiReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self._http.close()

    def _get(self, path: str, owner: str) -> httpx.Response:
        url = f"{self.api_url}{path}"
        with mapped(f"GET {url}"):
            return self._http.get(url, headers=self.tokens.header(owner))

    def _body(self, path: str, owner: str) -> Any:
        response = self._get(path, owner)
        if response.status_code != 200:
            raise TargetUnreachable(
                f"GET {self.api_url}{path} answered HTTP {response.status_code}"
                + _problem(response)
            )
        with mapped(f"GET {self.api_url}{path}"):
            return response.json()

    def recorded(self, job_id: int) -> Recorded:
        """The job as the API shows it to the owner who sees it; `NotFound` when no
        owner's token sees it."""
        for owner in self.tokens.owners():
            response = self._get(f"/v1/jobs/{job_id}", owner)
            if response.status_code == 404:
                continue
            if response.status_code != 200:
                raise TargetUnreachable(
                    f"GET {self.api_url}/v1/jobs/{job_id} answered HTTP "
                    f"{response.status_code}" + _problem(response)
                )
            with mapped(f"GET {self.api_url}/v1/jobs/{job_id}"):
                body = response.json()
            return Recorded(job_from_api(body, owner=owner), tuple(self._events(job_id, owner)))
        raise NotFound(
            f"no job {job_id} seen by the {len(self.tokens)} owner(s) whose tokens were given",
            job_id=job_id,
        )

    def _events(self, job_id: int, owner: str) -> Iterable[Event]:
        path: str | None = f"/v1/jobs/{job_id}/events?limit={PAGE}"
        while path is not None:
            page = self._body(path, owner)
            for event in page["events"]:
                yield event_from_api(event, job_id=job_id)
            path = page["next"]


def recorded_from_api(reader: JobApiReader, job_ids: Iterable[int]) -> list[Recorded]:
    """Each job as the job API shows it (`JobApiReader.recorded`)."""
    return [reader.recorded(i) for i in job_ids]


def _problem(response: httpx.Response) -> str:
    try:
        detail = response.json().get("detail")
    except (ValueError, AttributeError):
        return ""
    return f": {str(detail)[:200]}" if detail else ""


def _at(text: str | None) -> datetime | None:
    return None if text is None else datetime.fromisoformat(text)


def _moment(text: str) -> datetime:
    return datetime.fromisoformat(text)


def attempt_from_api(data: dict[str, Any], *, job_id: int) -> Attempt:
    """An attempt as `AttemptResource` shows it."""
    return Attempt(
        id=data["id"],
        job_id=job_id,
        number=data["number"],
        provider=data["provider"],
        model=data["model"],
        state=AttemptState(data["state"]),
        live_slot=None,  # not shown by the API; capture never reads it
        read_version=0,  # not shown by the API; capture never reads it
        provider_request_id=data["provider_request_id"],
        started_at=_moment(data["started_at"]),
        deadline_at=_at(data["deadline_at"]),
        finished_at=_at(data["finished_at"]),
        outcome=None if data["outcome"] is None else OutcomeKind(data["outcome"]),
        error=data["error"],
        raw_result=data["result"],
        resolution=None if data["resolution"] is None else Resolution(data["resolution"]),
        cause=data["cause"],
        status_code=data["status_code"],
        billed=data["billed"],
        retry_after=data["retry_after"],
        token=data["token"],
    )


def job_from_api(data: dict[str, Any], *, owner: str) -> Job:
    """A job as `JobResource` shows it, owned by `owner` (the API does not repeat it)."""
    attempts = tuple(attempt_from_api(a, job_id=data["id"]) for a in data["attempts"])
    return Job(
        id=data["id"],
        owner=owner,
        idempotency_key=data["idempotency_key"],
        fingerprint=data["fingerprint"],
        operation=data["operation"],
        input=data["input"],
        contract=data["contract"],
        providers=tuple(data["providers"]),
        policy=Policy.from_dict(data["policy"]),
        status=JobState(data["status"]),
        version=data["version"],
        attempt_count=len(attempts),  # not shown by the API; capture never reads it
        completed_by=data["completed_by"],
        result=data["result"],
        created_at=_moment(data["created_at"]),
        updated_at=_moment(data["updated_at"]),
        attempts=attempts,
    )


def event_from_api(data: dict[str, Any], *, job_id: int) -> Event:
    """An event as `EventResource` shows it."""
    return Event(
        id=data["id"],
        job_id=job_id,
        kind=EventKind(data["kind"]),
        attempt_id=data["attempt_id"],
        actor=data["actor"],
        detail=dict(data["detail"] or {}),
        at=_moment(data["at"]),
    )
