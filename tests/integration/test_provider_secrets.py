"""Secrets never leak: with a real-looking API key in the environment, run every behaviour
through every adapter (in-process and over loopback) and through both SDKs, and find
the key in no log record, exception message, repr, outcome or ledger entry.

The test first proves the key was really in play: it went out on every request.
"""

from __future__ import annotations

import contextlib
import json
import logging
import threading
from collections.abc import Iterator

import anthropic
import httpx
import openai
import pytest

from fake_providers import BehaviourName
from harness.errors import ProviderConfigError, ProviderError
from harness.providers import CompletionRequest, Message, build_provider
from tests.support.fakes import CALLER_ENDS

KEY = "sk-test-5e3c9a1f-THIS-KEY-MUST-NOT-LEAK"
ENV = "HARNESS_TEST_PROVIDER_KEY"
KINDS = ("openai", "openai_compatible", "anthropic")


def timeout_for(behaviour: BehaviourName) -> float:
    """Short only where the caller's timeout is the only way out (tests/support/fakes.py)."""
    return 0.2 if behaviour in CALLER_ENDS else 10.0


@contextlib.contextmanager
def released_while(fakes, behaviour: BehaviourName) -> Iterator[None]:
    """A trickle's keep-alive bytes keep an SDK's per-read timeout from ever firing (the
    fake would go on for 600 s): release the fakes until the call has returned."""
    done = threading.Event()

    def release_until_done() -> None:
        while not done.wait(0.2):
            fakes.release()

    releaser = threading.Thread(target=release_until_done)
    if behaviour is BehaviourName.STREAM_TRICKLE:
        releaser.start()
    try:
        yield
    finally:
        done.set()
        if releaser.is_alive():
            releaser.join()


def _log_text(caplog: pytest.LogCaptureFixture) -> str:
    formatter = logging.Formatter("%(name)s %(levelname)s %(message)s")
    return "\n".join(formatter.format(record) for record in caplog.records)


def test_api_key_appears_nowhere(target, caplog, monkeypatch) -> None:
    monkeypatch.setenv(ENV, KEY)  # also for build_provider's default environ below
    caplog.set_level(logging.DEBUG)
    sent: list[tuple[str, bool]] = []  # (path, carried the key)
    target.client.event_hooks = {
        "request": [lambda r: sent.append((r.url.path, KEY in str(dict(r.headers))))]
    }
    texts: list[str] = []

    for kind in KINDS:
        adapter = target.adapter(kind, api_key_env=ENV, environ={ENV: KEY})
        texts += [repr(adapter), str(adapter), repr(vars(adapter))]
        for behaviour in BehaviourName:
            for stream in (False, True):
                attempt = f"{kind}-{behaviour}-{stream}"
                target.fakes.script(behaviour.value, attempt_id=attempt)
                request = CompletionRequest(
                    messages=(Message(role="user", content="hi"),),
                    stream=stream,
                    attempt_id=attempt,
                )
                outcome = adapter.complete(request, timeout=timeout_for(behaviour))
                texts += [repr(outcome), str(outcome.error)]
                texts.append(repr(adapter.lookup(attempt)))
        if kind == "anthropic":
            texts.append(str(adapter.count_tokens(request)))

    # Failing side paths raise errors that must be clean too.
    broken = httpx.Client(transport=httpx.MockTransport(lambda r: httpx.Response(502)))
    failing = build_provider(target.config("anthropic", api_key_env=ENV), client=broken)
    for call in (lambda: failing.lookup("x"), lambda: failing.count_tokens(request)):
        with pytest.raises(ProviderError) as caught:
            call()
        texts += [str(caught.value), repr(caught.value)]
    with pytest.raises(ProviderConfigError) as missing:
        build_provider(target.config("openai", api_key_env="NOT_SET_ANYWHERE"), environ={})
    texts.append(str(missing.value))

    assert len(sent) > len(KINDS) * len(BehaviourName) * 2
    assert all(with_key for _, with_key in sent)  # the key really went out, every time
    texts.append(json.dumps([e.to_json() for e in target.fakes.ledger.entries()]))
    texts.append(target.client.get(f"{target.root}/control/ledger").text)

    assert len(target.fakes.ledger.entries()) == len(KINDS) * len(BehaviourName) * 2
    for text in [*texts, _log_text(caplog)]:
        assert KEY not in text


def test_sdk_errors_never_show_the_key(live, caplog) -> None:
    caplog.set_level(logging.DEBUG)
    oa = openai.OpenAI(base_url=live.openai_base_url, api_key=KEY, max_retries=0)
    an = anthropic.Anthropic(base_url=live.anthropic_base_url, api_key=KEY, max_retries=0)
    texts: list[str] = []
    for behaviour in BehaviourName:
        model, timeout = f"fake/{behaviour.value}", timeout_for(behaviour)
        for call in (_call_openai, _call_anthropic):
            try:
                with released_while(live.fakes, behaviour):
                    texts.append(repr(call(oa, an, model, timeout)))
            except Exception as exc:  # SDK errors, and raw transport errors mid-stream
                texts += [str(exc), repr(exc)]
    oa.close()
    an.close()
    texts.append(json.dumps([e.to_json() for e in live.fakes.ledger.entries()]))
    assert len(live.fakes.ledger.entries()) == 2 * len(BehaviourName)
    for text in [*texts, _log_text(caplog)]:
        assert KEY not in text


PROMPT = [{"role": "user", "content": "hi"}]


def _call_openai(oa: openai.OpenAI, an: anthropic.Anthropic, model: str, timeout: float):
    return oa.chat.completions.create(model=model, messages=PROMPT, timeout=timeout)


def _call_anthropic(oa: openai.OpenAI, an: anthropic.Anthropic, model: str, timeout: float):
    stream = an.messages.create(
        model=model, max_tokens=50, messages=PROMPT, stream=True, timeout=timeout
    )
    return list(stream)
