"""The pytest plugin as a user meets it, in a fresh pytest run (pytester):
`fake_provider_server` with the openai SDK passes; a test that scripts a behaviour it
never triggers fails at teardown; the marker and the ini option opt out."""

from __future__ import annotations

import pytest

pytest_plugins = ["pytester"]

USER_TESTS = """
import httpx
import openai
import pytest

from fake_providers import FakeTransport

PROMPT = [{"role": "user", "content": "hi"}]

def test_openai_sdk_against_the_served_fakes(fake_provider_server):
    fake_provider_server.fakes.script("rate_limit", api="openai")
    client = openai.OpenAI(
        base_url=fake_provider_server.openai_base_url, api_key="sk-test", max_retries=0
    )
    with pytest.raises(openai.RateLimitError):
        client.chat.completions.create(model="gpt-4o-mini", messages=PROMPT)
    answer = client.chat.completions.create(model="gpt-4o-mini", messages=PROMPT)
    assert answer.choices[0].finish_reason == "stop"
    assert [e.status_code for e in fake_provider_server.fakes.ledger.entries()] == [429, 200]


def test_in_process_fakes_on_virtual_time(fake_providers):
    client = httpx.Client(transport=FakeTransport(fake_providers), base_url="http://fake")
    body = {"model": "fake/service_unavailable?window=6", "messages": PROMPT}
    assert client.post("/openai/v1/chat/completions", json=body).status_code == 503
    fake_providers.time.sleep(6)
    assert client.post("/openai/v1/chat/completions", json=body).status_code == 200
    assert len(fake_providers.ledger.entries()) == 2
"""

UNUSED = """
import pytest


def test_scripts_a_fault_it_never_triggers(fake_provider_server):
    fake_provider_server.fakes.script("server_error", api="anthropic")


def test_in_process_too(fake_providers):
    fake_providers.script("hang")


@pytest.mark.fake_providers(assert_all_used=False)
def test_opted_out(fake_provider_server):
    fake_provider_server.fakes.script("server_error", api="anthropic")
"""


def test_a_user_test_with_the_served_fixture_passes(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_user=USER_TESTS)
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=2)


def test_an_unused_script_fails_at_teardown(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_unused=UNUSED)
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=3, errors=2)
    result.stdout.fnmatch_lines(
        [
            "*ERROR at teardown of test_scripts_a_fault_it_never_triggers*",
            "*scripted fake-provider behaviours were never requested*server_error*",
            "*ERROR at teardown of test_in_process_too*",
        ]
    )


def test_the_ini_option_opts_a_whole_suite_out(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_unused=UNUSED)
    pytester.makeini("[pytest]\nfake_providers_assert_all_used = false\n")
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=3)


def test_a_misspelt_marker_option_is_a_usage_error(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_bad="""
import pytest

@pytest.mark.fake_providers(assert_all_usd=False)
def test_it(fake_providers):
    pass
"""
    )
    result = pytester.runpytest("-p", "no:cacheprovider")
    assert result.ret != 0
    result.stdout.fnmatch_lines(["*assert_all_usd*"])
