"""Answers as bytes: the JSON of a job, an attempt, a page of events, a provider list.

Routes return these responses directly, so FastAPI does not validate and serialise each
body a second time through its response model (the models in `harness.api.schemas`
document the same bodies, and the tests hold them together). Rendering never fails on
stored data: a value JSON cannot carry (a non-finite number written before the database
refused them) is rendered as null rather than answering 500.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

from fastapi import Response

from harness.api.deps import ApiState
from harness.api.schemas import attempt_json, job_json
from harness.core.failover import waiting_on
from harness.core.models import Attempt, Job

JSON = "application/json"


def _encode(value: Any) -> bytes:
    try:
        text = json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    except ValueError:
        text = json.dumps(_finite(value), ensure_ascii=False, separators=(",", ":"))
    return text.encode("utf-8", "surrogatepass")


def _finite(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value


def json_response(
    value: Any, *, status: int = 200, headers: Mapping[str, str] | None = None
) -> Response:
    """`value` as an `application/json` answer."""
    return Response(_encode(value), status_code=status, media_type=JSON, headers=headers)


def job_body(state: ApiState, job: Job) -> dict[str, Any]:
    """The job as the API shows it, with what it waits on (I11)."""
    waiting = waiting_on(job, max_runtime=state.runtime(job), lookups=state.lookups)
    return job_json(job, waiting=waiting)


def job_response(
    state: ApiState, job: Job, *, status: int = 200, headers: Mapping[str, str] | None = None
) -> Response:
    return json_response(job_body(state, job), status=status, headers=headers)


def attempt_response(attempt: Attempt, *, status: int = 200) -> Response:
    return json_response(attempt_json(attempt), status=status)
