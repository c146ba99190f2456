"""Stories of what the contract verifier (`harness contracts verify`) asks of the same
adapters the faces' worker calls: a token count (`count_prompt`), and an answer from a
model named on the command line (`--model`), not the configured one.

No face carries either (docs/gateway.md), so the stories ask the stage's adapters
directly, as the verifier does; they are played on every face like every story (a few
in-process calls, no job). The expectations are docs/providers.md's: an Anthropic-style
provider counts with `/v1/messages/count_tokens` (the fakes count with their documented
tokenizer), an OpenAI-style one has no count (`None`), and a count that fails (an error
status) or cannot be read (not JSON, not an object, no integer `input_tokens`) raises
`ProviderError` naming the provider, never another exception (which the verifier
would take for an adapter's bug); an answer's outcome names the model the answer names
(the fakes answer as the model asked for), the configured one only when it names none
(the fakes' `named: false`, as a Chat Completions answer may).
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

import httpx

from fake_providers import Behaviour, BehaviourName, FakeProviders, FakeTransport
from fake_providers.tokens import count_prompt_tokens
from harness.core.models import CompletionRequest, Message
from harness.errors import ProviderError

if TYPE_CHECKING:
    from harness.checks.faces.stories import Play

SYSTEM = "Count before you answer."
PROMPT = "How many tokens does this question take, counted by the provider itself?"
FAILED = "fake/server_error"
"""The model whose count the fakes answer with a 500 (docs/providers.md)."""

UNREADABLE = {
    FAILED: "a 500",
    "fake/malformed_body": "a body that is not JSON",
    "fake/malformed_body?shape=no_finish": "a count without input_tokens",
    "fake/malformed_body?shape=array": "a count inside a list",
    "fake/malformed_body?shape=nonstring_text": "input_tokens as text",
}
"""The models whose count the fakes answer with a fault, and what each is
(docs/providers.md)."""


ASKED = "claude-asked-by-name"
"""A model the verifier names, other than the built-in fakes' configured ones."""


def _request(model: str | None = None) -> CompletionRequest:
    return CompletionRequest(
        messages=(Message(role="user", content=PROMPT),), system=SYSTEM, model=model
    )


async def token_count(play: Play) -> None:
    """Each provider's count of one prompt, then a count answer without `input_tokens`."""
    providers = play.stage.worker.providers
    primary = await asyncio.to_thread(providers["primary"].count_tokens, _request())
    play.expect(primary is None, f"the OpenAI-style primary counted {primary!r}, not None")
    sent = len(play.stage.transport.sent())
    counted = await asyncio.to_thread(providers["fallback"].count_tokens, _request())
    expected = count_prompt_tokens((SYSTEM, PROMPT))
    play.expect(
        counted == expected,
        f"the Anthropic-style fallback counted {counted!r}, the fakes {expected}",
    )
    asked = play.stage.transport.sent()[sent:]
    bodies = [b for path, b in asked if path.endswith("/v1/messages/count_tokens")]
    play.expect(
        len(bodies) == 1 and len(asked) == 1,
        f"one count asks /v1/messages/count_tokens once; sent {[p for p, _ in asked]}",
    )
    if bodies:
        body = bodies[0] or {}
        play.expect(
            body.get("system") == SYSTEM
            and body.get("messages") == [{"role": "user", "content": PROMPT}],
            f"the count was asked for another prompt: {body}",
        )
    for model, fault in UNREADABLE.items():
        await _unreadable(play, model, fault)


async def _unreadable(play: Play, model: str, fault: str) -> None:
    """A count answered with `fault` raises ProviderError naming the provider."""
    providers = play.stage.worker.providers
    try:
        unread = await asyncio.to_thread(providers["fallback"].count_tokens, _request(model))
    except ProviderError as exc:
        play.expect(
            "fallback" in str(exc) and exc.details.get("provider") == "fallback",
            f"the error of a count answered with {fault} names no provider: {exc}",
        )
        play.expect(
            model != FAILED or "500" in str(exc),
            f"the error of a count answered with {fault} does not say so: {exc}",
        )
    except Exception as exc:  # the verifier would call it an adapter's bug
        play.problems.append(
            f"a count answered with {fault} raised {type(exc).__name__}: {exc}, not a ProviderError"
        )
    else:
        play.problems.append(f"a count answered with {fault} read as {unread!r}")


async def asked_model(play: Play) -> None:
    """Each adapter asked for a model by name: its outcome names the model that answered.
    Played on fakes of its own (the call is no job's: the stage's ledger keeps the jobs'
    executions alone), by an adapter of the stage's kind and configuration."""
    fakes = FakeProviders()
    adapters: list[tuple[str, Any]] = []
    with httpx.Client(transport=FakeTransport(fakes)) as client:
        for name, provider in sorted(play.stage.worker.providers.items()):
            staged: Any = getattr(provider, "inner", provider)  # an HTTP adapter
            adapter = type(staged)(
                name=staged.name, base_url=staged.base_url, model=staged.model, client=client
            )
            outcome = await asyncio.to_thread(adapter.complete, _request(ASKED), timeout=10.0)
            play.expect(
                outcome.executed and outcome.model == ASKED,
                f"{name} (configured {staged.model}) asked for {ASKED}: {outcome.kind} "
                f"{outcome.reason}, the outcome names model {outcome.model!r}",
            )
            adapters.append((name, adapter))
        # then answers that name no model (Chat Completions may not): the configured one
        fakes.script(then=Behaviour(name=BehaviourName.SUCCESS, named=False), api="openai")
        for name, adapter in adapters:
            outcome = await asyncio.to_thread(adapter.complete, _request(), timeout=10.0)
            play.expect(
                outcome.executed and outcome.model == adapter.model,
                f"{name} (configured {adapter.model}) answered naming no model: {outcome.kind} "
                f"{outcome.reason}, the outcome names model {outcome.model!r}",
            )
    play.expect(len(fakes.ledger.entries()) == 4, "each adapter called its fake twice")
