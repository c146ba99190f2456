"""The face stories' client-side judges, each shown what must fail it: an error body in
another API's shape, a structured answer outside its schema, a Location naming no job, a
stream out of its documented order, a usage other than the provider's, an image read
without its detail."""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from harness.checks.faces.clients import FACES, Received
from harness.checks.faces.rendered import (
    STREAM_EVENTS,
    _error_shape,
    _runs,
    _sent_images,
    _usage_holds,
)
from harness.checks.faces.stories import Play, _conforms, _job_id

if TYPE_CHECKING:
    from harness.checks.faces.stage import FaceStage

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


def test_a_stream_out_of_order_is_not_the_documented_order() -> None:
    said = STREAM_EVENTS["anthropic.messages"]
    played = ("message_start", "ping", "content_block_start", "content_block_delta")
    played += ("content_block_delta", "content_block_stop", "message_delta", "message_stop")
    assert _runs(played) == said
    assert _runs(("message_start", *played[2:6], "message_stop", "message_delta")) != said
    assert _runs(played[:-1]) != said
    assert _runs(("role", "content", "content", "finish", "usage")) == STREAM_EVENTS["openai.chat"]
    assert _runs(("role", "finish", "content", "usage")) != STREAM_EVENTS["openai.chat"]


def test_the_images_sent_are_read_with_their_detail() -> None:
    body = {
        "messages": [
            {"role": "system", "content": "be brief"},
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "what?"},
                    {"type": "image_url", "image_url": {"url": "u1", "detail": "low"}},
                    {"type": "image_url", "image_url": {"url": "u2"}},
                ],
            },
        ]
    }
    assert _sent_images(body) == [("u1", "low"), ("u2", None)]
    assert _sent_images({"messages": [{"role": "user", "content": "no image"}]}) == []
    assert _sent_images(None) == []


def test_a_usage_other_than_the_providers_is_a_problem() -> None:
    class Entry:
        input_tokens, output_tokens = 12, 5

    def judged(usage: tuple[int, int, int | None] | None) -> list[str]:
        play = Play(stage=cast("FaceStage", None), face=CHAT, problems=[], notes=[])
        _usage_holds(play, Received(status=200, headers={}, usage=usage), Entry(), "x")
        return play.problems

    assert judged((12, 5, 17)) == [] and judged((12, 5, None)) == []
    assert judged((5, 12, 17)) and judged((12, 5, 12)) and judged(None)


def test_what_an_api_never_answers_is_a_problem() -> None:
    play = Play(stage=cast("FaceStage", None), face=CHAT, problems=[], notes=[])
    play.read_well(Received(status=200, headers={}), "fine")
    assert play.problems == []
    play.read_well(Received(status=200, headers={}, flaws=("the first choice's index is -1",)), "x")
    assert play.problems == ["x: the first choice's index is -1"]
