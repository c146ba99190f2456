"""The OpenAPI document describes the bodies the API really sends.

Response schemas are Pydantic models, so each success body has a real schema; every
problem answer is declared as `application/problem+json` with the problem details schema;
and the bodies of real answers (successes and problems) validate against what the
document declares for their route and status.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import jsonschema
import pytest
from starlette.testclient import TestClient

from harness.api import create_app
from harness.api.problems import PROBLEM_JSON, REFUSAL_PROBLEMS, refusal_problem
from harness.api.schemas import PolicyResource
from harness.config import ServiceConfig
from harness.core.clock import VirtualClock
from harness.core.gate import GateReason, StaticGate
from harness.core.models import POLICY_FIELDS
from harness.core.states import STATE_REFUSALS, RefusalReason
from harness.engine import Engine
from harness.runtime.worker import Worker
from harness.store.database import Database
from tests.support.api import ALICE, BOB, BODY
from tests.support.scripted import HeldScheduler, ScriptedProvider

BODIES = {
    ("/v1/jobs", "post", "201"): "JobResource",
    ("/v1/jobs/{job_id}", "get", "200"): "JobResource",
    ("/v1/jobs/{job_id}/events", "get", "200"): "JobEvents",
    ("/v1/jobs/{job_id}/attempts", "post", "202"): "AttemptResource",
    ("/v1/jobs/{job_id}/attempts/{number}/resolve", "post", "200"): "AttemptResource",
    ("/v1/jobs/{job_id}/cancel", "post", "200"): "JobResource",
}


class Api:
    """A client that checks every answer against the document before handing it back."""

    def __init__(self, client: TestClient, engine: Engine) -> None:
        self.client, self.engine = client, engine
        self.document = client.get("/openapi.json").json()

    def call(self, method: str, template: str, *, at: Any = (), **kw: Any) -> httpx.Response:
        """`method` on `template` filled with `at` (the path's ids, in order)."""
        names = [part[1:-1] for part in template.split("/") if part.startswith("{")]
        ids = at if isinstance(at, tuple) else (at,)
        path = template.format(**dict(zip(names, ids, strict=True)))
        response = self.client.request(method, path, **kw)
        declared = self.document["paths"][template][method.lower()]["responses"]
        status = str(response.status_code)
        assert status in declared, (method, template, status, response.text)
        media = response.headers["content-type"]
        assert set(declared[status]["content"]) == {media}, (template, status)
        schema = {**declared[status]["content"][media]["schema"], **self._components()}
        jsonschema.Draft202012Validator(schema).validate(response.json())
        return response

    def _components(self) -> dict[str, Any]:
        return {"components": self.document["components"]}

    def schema(self, name: str) -> dict[str, Any]:
        return self.document["components"]["schemas"][name]


@pytest.fixture
def api(db: Database) -> Iterator[Api]:
    providers = {"primary": ScriptedProvider("primary"), "fallback": ScriptedProvider("fallback")}
    engine = Engine(db, gate=StaticGate({"primary"}), clock=VirtualClock())
    worker = Worker(engine, providers, HeldScheduler())
    config = ServiceConfig(tokens={"alice-token": "alice", "bob-token": "bob"}, max_body_bytes=512)
    app = create_app(engine, worker, config, provider_names=lambda: set(providers))
    with TestClient(app) as client:
        yield Api(client, engine)


def test_success_bodies_have_real_schemas(api: Api) -> None:
    for (path, method, status), name in BODIES.items():
        content = api.document["paths"][path][method]["responses"][status]["content"]
        assert content["application/json"]["schema"] == {"$ref": f"#/components/schemas/{name}"}
    for name in ("JobResource", "AttemptResource", "EventResource", "JobEvents"):
        assert api.schema(name)["properties"], name
    assert "resolution" in api.schema("AttemptResource")["properties"]
    assert "outcome" in api.schema("AttemptResource")["properties"]
    assert api.schema("JobEvents")["properties"]["events"]["items"] == {
        "$ref": "#/components/schemas/EventResource"
    }


def test_every_error_response_is_a_problem(api: Api) -> None:
    problem = {"$ref": "#/components/schemas/ProblemDetails"}
    seen = 0
    for path, operations in api.document["paths"].items():
        for method, operation in operations.items():
            for status, response in operation["responses"].items():
                if int(status) >= 400:
                    assert response["content"] == {PROBLEM_JSON: {"schema": problem}}, (
                        method,
                        path,
                        status,
                    )
                    seen += 1
    assert seen >= 30
    assert "HTTPValidationError" not in api.document["components"]["schemas"]
    assert api.schema("ProblemDetails")["required"] == ["type", "title", "status", "detail"]


def test_real_answers_match_the_document(api: Api) -> None:
    key = {**ALICE, "Idempotency-Key": "k1"}
    job = api.call("POST", "/v1/jobs", json=BODY, headers=key).json()["id"]
    replay = api.call("POST", "/v1/jobs", json=BODY, headers=key)
    assert replay.status_code == 200 and replay.headers["Idempotent-Replayed"] == "true"
    for body, headers, status in (
        ({**BODY, "input": {"other": 1}}, key, 409),
        (BODY, ALICE, 400),
        (BODY, {"Idempotency-Key": "k2"}, 401),
        ({"operation": "x"}, {**ALICE, "Idempotency-Key": "k2"}, 422),
        ({**BODY, "input": {"big": "x" * 600}}, {**ALICE, "Idempotency-Key": "k2"}, 413),
    ):
        assert api.call("POST", "/v1/jobs", json=body, headers=headers).status_code == status

    attempts = "/v1/jobs/{job_id}/attempts"

    def click(**body: str) -> httpx.Response:
        return api.call("POST", attempts, at=job, headers=ALICE, json=body)

    started = click().json()
    assert click(provider="primary").json()["reason"] == RefusalReason.LIVE_ATTEMPT  # 409
    assert click(provider="x").json()["reason"] == RefusalReason.UNKNOWN_PROVIDER  # 422
    # the gate answers before the live slot: the fallback holds no verdict (422)
    assert click(provider="fallback").json()["reason"] == GateReason.NO_VERDICT

    def resolve(number: int) -> httpx.Response:
        answer = {"outcome": "failed", "reason": "lost"}
        return api.call(
            "POST", f"{attempts}/{{number}}/resolve", at=(job, number), json=answer, headers=ALICE
        )

    assert resolve(1).status_code == 409  # it is starting, not unknown
    api.engine.record_timeout(started["id"])
    resolved = resolve(1).json()
    assert resolved["resolution"] == "failed" and resolved["outcome"] == "unknown"
    assert resolve(9).status_code == 404

    assert api.call("GET", "/v1/jobs/{job_id}", at=job, headers=ALICE).json()["attempts"]
    assert api.call("GET", "/v1/jobs/{job_id}", at=job, headers=BOB).status_code == 404
    events = api.call("GET", "/v1/jobs/{job_id}/events", at=job, headers=ALICE).json()["events"]
    assert "failover_refused" in [e["kind"] for e in events]
    other = api.call("POST", "/v1/jobs", json=BODY, headers={**ALICE, "Idempotency-Key": "k3"})
    for status in (200, 409):  # cancelled, then already finished
        cancel = api.call(
            "POST",
            "/v1/jobs/{job_id}/cancel",
            at=other.json()["id"],
            json={"reason": "enough"},
            headers=ALICE,
        )
        assert cancel.status_code == status


def test_the_policy_resource_follows_the_policy() -> None:
    assert tuple(PolicyResource.model_fields) == POLICY_FIELDS


def test_refusals_answer_409_only_for_the_job_state() -> None:
    reasons = {*RefusalReason, *GateReason} - {GateReason.ALLOWED}
    assert {p.slug for p in REFUSAL_PROBLEMS} == {refusal_problem(r).slug for r in reasons}
    for reason in reasons:
        assert refusal_problem(reason).status == (409 if reason in STATE_REFUSALS else 422)


def test_every_operation_needs_the_bearer_token(api: Api) -> None:
    schemes = api.document["components"]["securitySchemes"]
    assert schemes == {"HTTPBearer": {**schemes["HTTPBearer"], "type": "http", "scheme": "bearer"}}
    for path, operations in api.document["paths"].items():
        for method, operation in operations.items():
            assert operation["security"] == [{"HTTPBearer": []}], (method, path)
            assert "401" in operation["responses"], (method, path)


def test_body_routes_document_what_the_reader_refuses(api: Api) -> None:
    for path, operations in api.document["paths"].items():
        for method, operation in operations.items():
            if "requestBody" in operation:
                assert {"400", "413", "415", "422"} <= set(operation["responses"]), (method, path)


def test_provider_names_are_an_enum_of_the_configured_ones(api: Api) -> None:
    paths = api.document["paths"]
    create = paths["/v1/jobs"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    assert create["properties"]["providers"]["items"] == {"enum": ["fallback", "primary"]}
    start = paths["/v1/jobs/{job_id}/attempts"]["post"]["requestBody"]["content"]
    assert start["application/json"]["schema"]["properties"]["provider"] == {
        "enum": ["fallback", "primary"]
    }
    assert set(create["properties"]["policy"]["properties"]) == set(POLICY_FIELDS)


def test_new_members_are_documented(api: Api) -> None:
    job = api.schema("JobResource")["properties"]
    assert {"waiting_on", "replays", "last_replayed_at", "refused_failovers"} <= set(job)
    attempt = api.schema("AttemptResource")["properties"]
    assert {"cause", "status_code", "billed", "retry_after", "token"} <= set(attempt)
    assert set(api.schema("JobEvents")["properties"]) == {"job_id", "events", "next"}
    listed = api.call("GET", "/v1/providers", headers=ALICE).json()["providers"]
    assert [p["name"] for p in listed] == ["fallback", "primary"]
    assert {p["availability"] for p in listed} == {"available"}
