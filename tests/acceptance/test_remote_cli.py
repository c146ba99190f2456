"""`harness scenarios run --target URL --fakes URL`: every bad flag, missing token list and
unreachable server exits 2 with one clear line before any scenario plays, and no token
is ever printed. (The runs themselves: tests/acceptance/test_remote_target.py.)"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from click.testing import CliRunner
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from harness.cli.main import main
from harness.formats.loopback import bound_socket, url_of
from harness.scenarios.suite import BUNDLED_DIR
from tests.support.live import serve

SECRET = "tok-4b1d-never-printed"
TOKENS = {"HARNESS_TARGET_TOKENS": f"alice={SECRET}"}
FILE = str(BUNDLED_DIR / "key-binds-intent.scenario.yaml")


def run(*flags: str, env: dict[str, str] | None = None) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["scenarios", "run", FILE, *flags], env=env or TOKENS)
    assert isinstance(result.exception, SystemExit | None), result.output
    return result.exit_code, result.output


def refused_before_anything_ran(code: int, output: str, message: str) -> None:
    assert code == 2, output
    assert f"error: {message}" in output, output
    assert "PASS" not in output and "FAIL" not in output and SECRET not in output


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--target", "http://127.0.0.1:9"], "--target needs --fakes: the fake-provider server"),
        (["--fakes", "http://127.0.0.1:9"], "--fakes is for runs against a live service"),
        (["--time-scale", "0.5"], "--time-scale is for runs against a live service"),
        (
            ["--target", "http://a", "--fakes", "http://b", "--mutant", "last_writer_wins"],
            "--mutant plays in-process; to play against a broken live service, start it with",
        ),
        (["--target", "localhost:1", "--fakes", "http://b"], "--target: 'localhost:1' is not"),
    ],
)
def test_a_flag_that_makes_no_sense_exits_2(flags: list[str], message: str) -> None:
    refused_before_anything_ran(*run(*flags), message)


@pytest.mark.parametrize("scale", ["0", "-1", "abc", "1000"])
def test_a_bad_time_scale_exits_2(scale: str) -> None:
    code, output = run("--target", "http://a", "--fakes", "http://b", "--time-scale", scale)
    assert code == 2 and "Invalid value for '--time-scale'" in output, output


def test_without_tokens_the_run_says_where_to_put_them() -> None:
    code, output = run("--target", "http://a", "--fakes", "http://b", env={"X": "1"})
    refused_before_anything_ran(
        code, output, "--target needs the target's bearer tokens: set HARNESS_TARGET_TOKENS="
    )


def test_a_malformed_token_list_is_refused_without_echoing_it() -> None:
    env = {"MY_TOKENS": f"{SECRET},bob"}
    code, output = run(
        "--target", "http://a", "--fakes", "http://b", "--tokens-env", "MY_TOKENS", env=env
    )
    refused_before_anything_ran(code, output, "MY_TOKENS: entry 1 is not OWNER=TOKEN")


def test_an_unreachable_target_exits_2() -> None:
    with bound_socket() as nothing_listens:
        dead = url_of(nothing_listens)
        code, output = run("--target", dead, "--fakes", dead)
    refused_before_anything_ran(code, output, f"--target {dead}/healthz: ConnectError")


# -- against a stand-in server: everything answers but what the test breaks ---------------


def stand_in(*, token_ok: bool = True, providers: tuple[str, ...] = ("primary", "fallback")):
    async def ok(request: Request) -> JSONResponse:
        return JSONResponse({"status": "ok"})

    async def listed(request: Request) -> JSONResponse:
        if request.headers.get("authorization") != f"Bearer {SECRET}" or not token_ok:
            return JSONResponse({"detail": "unknown token"}, status_code=401)
        health = {"state": "closed", "availability": "available", "failures": 0}
        return JSONResponse({"providers": [{"name": p, **health} for p in providers]})

    return Starlette(
        routes=[
            Route("/healthz", ok),
            Route("/control/health", ok),
            Route("/v1/providers", listed),
        ]
    )


@pytest.fixture
def stand_in_url(request: pytest.FixtureRequest) -> Iterator[str]:
    with serve(stand_in(**getattr(request, "param", {}))) as url:
        yield url


def test_unreachable_fakes_exit_2(stand_in_url: str) -> None:
    with bound_socket() as nothing_listens:
        dead = url_of(nothing_listens)
        code, output = run("--target", stand_in_url, "--fakes", dead)
    refused_before_anything_ran(code, output, f"--fakes {dead}/control/health: ConnectError")


def test_something_else_at_the_target_exits_2(stand_in_url: str) -> None:
    code, output = run("--target", f"{stand_in_url}/nothing", "--fakes", stand_in_url)
    refused_before_anything_ran(
        code, output, f"--target: GET {stand_in_url}/nothing/healthz answered HTTP 404; is it"
    )


@pytest.mark.parametrize("stand_in_url", [{"token_ok": False}], indirect=True)
def test_a_refused_token_exits_2_naming_its_entry_not_its_text(stand_in_url: str) -> None:
    code, output = run("--target", stand_in_url, "--fakes", stand_in_url)
    refused_before_anything_ran(
        code, output, "HARNESS_TARGET_TOKENS: the target refuses the token of entry 1 (401)"
    )


@pytest.mark.parametrize("stand_in_url", [{"providers": ("openai",)}], indirect=True)
def test_a_target_without_the_scenarios_providers_exits_2(stand_in_url: str) -> None:
    code, output = run("--target", stand_in_url, "--fakes", stand_in_url)
    refused_before_anything_ran(
        code, output, "--target serves providers ['openai']; scenarios need primary, fallback"
    )


# -- `harness serve --mutant` / `harness worker --mutant`: a broken live service ------------


@pytest.mark.parametrize("command", ["serve", "worker"])
def test_an_unknown_mutant_exits_2_listing_the_known_ones(command: str) -> None:
    result = CliRunner().invoke(main, [command, "--mutant", "no_such_bug"])
    assert result.exit_code == 2, result.output
    assert "unknown mutant 'no_such_bug'; known: ignore_idempotency_key," in result.output
    assert "last_writer_wins" in result.output


@pytest.mark.parametrize("command", ["serve", "worker"])
def test_the_help_says_a_mutant_is_for_testing_the_harness_itself(command: str) -> None:
    result = CliRunner().invoke(main, [command, "--help"])
    text = " ".join(result.output.split())  # as wrapped for the terminal
    assert "--mutant NAME For testing the harness itself: run a deliberately broken" in text


def test_a_mutant_warns_loudly_and_is_undone_when_the_command_ends(tmp_path) -> None:
    from harness.store import queries

    real = queries.complete_job
    missing = str(tmp_path / "missing.yaml")
    result = CliRunner().invoke(
        main, ["serve", "--mutant", "last_writer_wins", "--config", missing]
    )
    assert result.exit_code == 2, result.output  # the configuration cannot be read
    assert "WARNING: running the deliberately broken engine 'last_writer_wins'" in result.output
    assert queries.complete_job is real


def test_a_mutant_is_never_taken_from_the_environment() -> None:
    result = CliRunner().invoke(main, ["worker", "--help"], env={"HARNESS_WORKER_MUTANT": "x"})
    assert result.exit_code == 0 and "HARNESS_WORKER_MUTANT" not in result.output
