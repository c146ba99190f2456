"""Probe and profile files: the bundled catalogue loads and covers every fault class in
`FAULTS` below; a mistake names file:line and field; the CLI exits 2 with one line for a bad
profile and for a gateway that is not up."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from harness.cli.main import main
from harness.errors import ProbeFileError
from harness.formats.loopback import bound_socket, url_of
from harness.probe.files import load_probe, parse_probe, probe_files
from harness.probe.profiles import load_profile

FAULTS = {
    "rate_limit",
    "rate_limit_no_retry_after",
    "server_error",
    "service_unavailable",
    "overloaded",
    "reset_before_headers",
    "accept_then_drop",
    "hang",
    "stream_cut",
    "stream_stall",
    "stream_malformed_chunk",
    "stream_no_done",
    "stream_error_event",
    "malformed_body",
    "context_length_exceeded",
    "content_filter",
}
IDEMPOTENCY = {
    "double-click-one-key",
    "double-click-no-key",
    "retry-after-client-timeout",
    "timeout-then-failover",
    "abandon-silent-provider",
    "double-click-during-outage",
}


def _behaviours(probe) -> set[str]:
    found = set()
    for spec in probe.providers.values():
        for b in (*spec.script, spec.then):
            if b is not None:
                found.add(b if isinstance(b, str) else b["behaviour"])
    return found


def test_the_bundled_catalogue_covers_every_fault_class_and_the_idempotency_probes() -> None:
    probes = [load_probe(f) for f in probe_files()]
    assert len(probes) >= 24
    assert len({p.name for p in probes}) == len(probes)
    used = set().union(*(_behaviours(p) for p in probes))
    assert used >= FAULTS, FAULTS - used
    names = {p.name for p in probes}
    assert names >= IDEMPOTENCY | {"flapping-provider", "wrong-model-named", "slow-first-byte"}
    flapping = next(p for p in probes if p.name == "flapping-provider")
    assert flapping.providers["primary"].then["flap"] == 1


GOOD = """format: 1
name: x
summary: s
providers:
  primary: {script: [server_error]}
steps:
  - request: {intent: a}
"""


def test_a_good_probe_loads_with_its_intents_and_checks() -> None:
    probe = parse_probe(GOOD + "judge: [answered, {silent_attempts: {provider: primary}}]\n")
    assert probe.intents == ("a",)
    assert [c.name for c in probe.checks] == ["answered", "silent_attempts"]


@pytest.mark.parametrize(
    ("text", "line", "field", "words"),
    [
        (GOOD + "colour: red\n", 8, "colour", "unknown field"),
        (GOOD.replace("server_error", "server_eror"), 5, "providers.primary.script[0]", "unknown"),
        (GOOD + "  - retry: {intent: b}\n", 8, "steps[1].retry.intent", "not requested before"),
        (GOOD.replace("intent: a}", "intent: a, timeout: -1}"), 7, "steps[0].request.timeout", ""),
        (GOOD + "judge: [{silent_attempts: {provider: backup}}]\n", 8, "judge[0]", "no provider"),
    ],
)
def test_a_mistake_names_file_line_and_field(text, line, field, words) -> None:
    with pytest.raises(ProbeFileError) as caught:
        parse_probe(text, file="bad.probe.yaml")
    error = caught.value
    assert (error.file, error.line) == ("bad.probe.yaml", line), str(error)
    assert error.field.startswith(field), str(error)
    assert words in str(error)


BAD_PROFILE = """format: 1
profile: http
request:
  path: /summarise
  methd: POST
answer: {text: /summary}
"""


def test_a_profile_with_a_mistake_exits_2_naming_file_line_and_field(tmp_path) -> None:
    path = tmp_path / "toy.yaml"
    path.write_text(BAD_PROFILE)
    result = CliRunner().invoke(
        main, ["probe", "--gateway", "http://127.0.0.1:9", "--profile", str(path)]
    )
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    expected = "request.methd: unknown field 'methd'; did you mean 'method'?"
    assert lines == [f"error: {path}:5: {expected}"]


def test_a_header_naming_an_unset_variable_is_refused(tmp_path, monkeypatch) -> None:
    monkeypatch.delenv("TOY_TOKEN", raising=False)
    path = tmp_path / "toy.yaml"
    header = "headers: {Authorization: 'Bearer ${TOY_TOKEN}'}\n"
    path.write_text(BAD_PROFILE.replace("  methd: POST\n", "") + header)
    with pytest.raises(ProbeFileError) as caught:
        load_profile(path)
    message = str(caught.value)
    assert "headers.Authorization" in message and "TOY_TOKEN is not set" in message


def test_a_gateway_that_is_not_up_exits_2_with_one_line() -> None:
    with bound_socket() as nothing_listens:
        url = url_of(nothing_listens)
        result = CliRunner().invoke(
            main, ["probe", "--gateway", url, "--wait", "0.5", "--only", "server-error-500"]
        )
    assert result.exit_code == 2
    assert result.stderr.strip().splitlines()[-1] == (
        f"error: the gateway at {url} did not answer within 0.5 s"
    )
    assert "Traceback" not in result.stderr
    assert "fake provider primary: http://127.0.0.1:" in result.stdout


def test_an_unknown_probe_name_exits_2_listing_the_known_ones() -> None:
    result = CliRunner().invoke(main, ["probe", "--gateway", "http://x", "--only", "nope"])
    assert result.exit_code == 2
    assert "no probe named 'nope'; known:" in result.output


def _engine_face(tmp_path, policy: dict, name: str) -> dict:
    """`harness serve` over the named fakes, routing `probe` to primary then fallback
    under `policy`, without the fakes' lookup; `no-response` played against it."""
    import json

    from fake_providers import FakeServer
    from harness.probe.fakes import provider_urls
    from tests.support.live import service_config, start_serve, stop

    out = tmp_path / f"{name}.json"
    with FakeServer() as fakes:
        config = service_config(fakes.url, tokens={"probe-token": "alice"})
        config["providers"][0]["base_url"] = provider_urls(fakes.url, "primary")["openai"]
        config["providers"][1]["base_url"] = provider_urls(fakes.url, "fallback")["anthropic"]
        for provider in config["providers"]:
            provider.pop("lookup_url")
        config["routes"] = {"probe": {"providers": ["primary", "fallback"], "policy": policy}}
        url, process = start_serve(config, f"sqlite:///{tmp_path}/{name}.db", tmp_path)
        try:
            result = CliRunner(env={"HARNESS_PROBE_TOKEN": "probe-token"}).invoke(
                main,
                ["probe", "--gateway", url, "--fakes", fakes.url, "--time-scale", "0.3",
                 "--quiet-window", "1", "--gateway-timeout", "1", "--json", str(out),
                 "--only", "no-response"],
            )  # fmt: skip
        finally:
            stop(process)
    card = json.loads(out.read_text())
    card["exit_code"] = result.exit_code
    return card


@pytest.mark.long
def test_the_engines_face_leaves_the_silent_primarys_caller_waiting_unless_its_route_hedges(
    tmp_path,
) -> None:
    """Under the default policy a silent primary's attempt is unknown and nothing else
    may start, so the patient caller is still waiting at the bound (two gateway timeouts
    and 0.3 s): `caller_left_waiting`, exit 1. A route that hedges answers from the
    fallback within it: pass."""
    waiting = _engine_face(tmp_path, {"attempt_timeout": 1}, "default")
    play = waiting["probes"][0]["plays"][0]
    failed = {p["name"]: p for p in play["properties"] if p["verdict"] == "fail"}
    assert "caller_left_waiting" in failed, play["properties"]
    assert waiting["exit_code"] == 1
    witness = failed["caller_left_waiting"]["witness"]
    assert witness[0]["kind"] == "client" and witness[0]["outcome"] == "timeout"
    hedged = _engine_face(
        tmp_path, {"attempt_timeout": 1, "hedge_after": 0.5, "max_live_attempts": 2}, "hedged"
    )
    play = hedged["probes"][0]["plays"][0]
    assert hedged["probes"][0]["verdict"] == "pass", play["properties"]
    assert play["requests"] == {"fallback": 1, "primary": 1}
    assert hedged["exit_code"] == 0


def test_a_naive_gateway_fails_the_silent_primary_and_the_stall_with_witnesses(tmp_path) -> None:
    """The naive gateway calls the silent primary three times before the fallback, and
    closes a stalled stream as if it had ended; `--summary-md -` prints the scorecard as
    Markdown, levels and all, for a doc to be generated from."""
    import json

    from fake_providers import FakeServer
    from harness.probe.fakes import provider_urls
    from tests.support.live import serve
    from tests.support.probing import Upstreams, naive_app

    out = tmp_path / "card.json"
    with FakeServer() as fakes:
        urls = {n: provider_urls(fakes.url, n)["openai"] for n in ("primary", "fallback")}
        with serve(naive_app(Upstreams(urls=urls))) as url:
            result = CliRunner().invoke(
                main,
                ["probe", "--gateway", url, "--fakes", fakes.url, "--time-scale", "0.5",
                 "--gateway-timeout", "1", "--json", str(out), "--summary-md", "-",
                 "--only", "no-response", "--only", "stream-stall"],
            )  # fmt: skip
    assert result.exit_code == 1, result.output
    card = json.loads(out.read_text())
    failed = {
        p["name"]: {j["name"]: j for j in p["plays"][0]["properties"] if j["verdict"] == "fail"}
        for p in card["probes"]
    }
    silent = failed["no-response"]["silent_attempts"]
    assert "got 3 calls (bound 2)" in silent["summary"]
    assert [w["provider"] for w in silent["witness"]] == ["primary"] * 3
    assert "no_truncated_success" in failed["stream-stall"], failed["stream-stall"]
    assert "| no-response | fail |" in result.stdout
    assert "Levels: pass = rescued" in result.stdout
