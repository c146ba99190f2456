"""The face stories' client-side judges, each shown what must fail it: an error body in
another API's shape, a structured answer outside its schema, a Location naming no job."""

from __future__ import annotations

from harness.checks.faces.clients import FACES, Received
from harness.checks.faces.stories import _conforms, _error_shape, _job_id

CHAT, RESPONSES, MESSAGES = FACES


def test_an_error_body_in_another_shape_is_named() -> None:
    openai_body = {"message": "m", "type": "invalid_request_error", "param": None, "code": "c"}
    anthropic_body = {"type": "error", "error": {"type": "not_found_error", "message": "m"}}
    problem = {"type": "unknown-model", "title": "Unknown model", "status": 404, "detail": "x"}
    assert _error_shape(CHAT, openai_body) is None
    assert _error_shape(RESPONSES, openai_body) is None
    assert _error_shape(MESSAGES, anthropic_body) is None
    for face, body in ((CHAT, problem), (MESSAGES, problem), (CHAT, anthropic_body)):
        assert "not" in (_error_shape(face, body) or ""), (face.name, body)
    assert _error_shape(MESSAGES, openai_body) is not None
    assert _error_shape(CHAT, None) is not None


def test_a_structured_answer_outside_its_schema_does_not_conform() -> None:
    assert _conforms('{"city": "Paris"}')
    for text in ('{"city": 3}', '{"city": "P", "extra": 1}', "Paris", "", None, "[]"):
        assert not _conforms(text), text


def test_only_a_location_of_the_jobs_api_names_a_job() -> None:
    def got(location: str) -> Received:
        return Received(status=200, headers={"location": location})

    assert _job_id(got("/v1/jobs/12")) == 12
    for location in ("", "/v1/jobs/", "/v1/jobs/x", "/elsewhere/12"):
        assert _job_id(got(location)) is None, location


def test_the_judges_never_import_the_gateway_they_judge() -> None:
    """The stories and the coverage of the faces read the gateway through HTTP only: no
    import of the API (its faces, their tables) or the engine, even indirectly."""
    import grimp

    graph = grimp.build_graph(
        "harness",
        "fake_providers",
        include_external_packages=False,
        exclude_type_checking_imports=True,
    )
    for judge in ("stories", "clients", "coverage"):
        for judged in ("harness.api", "harness.engine", "harness.runtime", "harness.store"):
            chain = graph.find_shortest_chain(
                importer=f"harness.checks.faces.{judge}", imported=judged
            )
            assert chain is None, chain
