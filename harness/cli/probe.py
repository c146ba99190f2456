"""`harness probe`: judge a gateway this project did not write, from what its providers saw.

Exit 0 when no probe fails, 1 when one does, 2 for a bad profile or probe file, an unknown
probe name, or a gateway (or fakes) that does not answer, always with one line.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import click

from harness.cli.exits import exit_on_error, exit_with
from harness.cli.options import count_option, file_option, seconds_option

SUMMARY_ENV = "GITHUB_STEP_SUMMARY"


@click.command()
@click.argument("probes", nargs=-1, type=click.Path(exists=True, path_type=Path))
@click.option("--gateway", required=True, metavar="URL", help="The gateway's base URL.")
@click.option(
    "--profile",
    default="openai-chat",
    show_default=True,
    metavar="NAME|FILE",
    help="How to call the gateway: openai-chat, openai-responses, anthropic-messages, "
    "or a profile file (an `http` endpoint of your own). Tokens come from the "
    "environment (HARNESS_PROBE_TOKEN, or the file's ${NAME}), never printed.",
)
@click.option(
    "--fakes",
    default=None,
    metavar="URL",
    help="A running `harness fake-providers serve`; default: start one on a free port.",
)
@click.option("--only", multiple=True, metavar="NAME", help="Only this probe (repeatable).")
@count_option("--repeat", default=1, low=1, high=100, help="Play each probe this many times.")
@seconds_option(
    "--quiet-window",
    above=True,
    metavar="S",
    help="Seconds a gateway may go on calling for a caller who gave up (as given; default "
    "the probe's or 2, times --time-scale); calls after it fail `quiet_after_abandon`.",
)
@click.option(
    "--time-scale",
    default=1.0,
    show_default=True,
    type=click.FloatRange(min=0.05, max=20),
    help="Multiply the fault timings in the probes (latencies, windows, a step's own "
    "timeout, a bound's fault seconds) by this; never Retry-After nor the gateway's own "
    "timeouts, so verdicts do not move with it.",
)
@seconds_option(
    "--gateway-timeout",
    above=True,
    metavar="S",
    help="Seconds the gateway waits for one provider call (default: the profile's, else "
    "10). Bounds on the caller's wait count in these, never scaled by --time-scale.",
)
@seconds_option(
    "--wait",
    default=30.0,
    metavar="S",
    help="Seconds to wait for the gateway to answer before giving up (exit 2).",
)
@file_option("--json", "json_path", help="Scorecard as JSON.")
@file_option("--junit", "junit_path", help="JUnit XML.")
@file_option("--html", "html_path", help="HTML with timelines.")
@click.option(
    "--summary-md",
    "summary_path",
    type=click.Path(path_type=Path),
    help=f"The scorecard as Markdown, for a CI page or a doc (`-`: to stdout, after the "
    f"table); also appended to ${SUMMARY_ENV} when that is set.",
)
def probe(
    probes: tuple[Path, ...],
    gateway: str,
    profile: str,
    fakes: str | None,
    only: tuple[str, ...],
    repeat: int,
    quiet_window: float | None,
    time_scale: float,
    gateway_timeout: float | None,
    wait: float,
    json_path: Path | None,
    junit_path: Path | None,
    html_path: Path | None,
    summary_path: Path | None,
) -> None:
    """Probe a gateway (LiteLLM, Portkey, your own) with the fakes as its providers.

    PROBES are probe files or directories (default: the bundled catalogue). Configure the
    gateway with the printed base URLs, one per fake provider; the probe waits until it
    answers, plays every probe as a client would, and judges it from the providers'
    ledger and the client's answers.
    """
    from rich.console import Console

    from harness.probe.fakes import fakes_at, provider_urls
    from harness.probe.files import probe_files
    from harness.probe.profiles import load_profile
    from harness.probe.run import (
        load_probes,
        play_all,
        providers_of,
        wait_for_gateway,
        write_outputs,
    )
    from harness.probe.scorecard import print_table

    console = Console(stderr=False, soft_wrap=True)
    with exit_on_error():
        chosen = load_profile(profile)
        if gateway_timeout is not None:
            chosen = dataclasses.replace(chosen, gateway_timeout=gateway_timeout)
        loaded = load_probes(probe_files(probes, bundled=not probes), only)
        with fakes_at(fakes) as (link, base):
            for name in providers_of(loaded):
                urls = provider_urls(base, name)
                click.echo(
                    f"fake provider {name}: {urls['openai']}  (anthropic: {urls['anthropic']})"
                )
            click.echo(f"waiting for the gateway at {gateway} ...", err=True)
            wait_for_gateway(gateway, wait)

            def progress(play: object) -> None:
                from harness.probe.scorecard import Play

                assert isinstance(play, Play)
                click.echo(
                    f"  {play.run.probe.name} #{play.run.repeat + 1}: {play.verdict.value}",
                    err=True,
                )

            card = play_all(
                loaded,
                gateway=gateway,
                profile=chosen,
                fakes=link,
                repeat=repeat,
                time_scale=time_scale,
                quiet_window=quiet_window,
                on_play=progress,
            )
        print_table(card, console)
        if summary_path == Path("-"):
            from harness.probe.scorecard import markdown

            click.echo(markdown(card), nl=False)
        summaries = [p for p in (summary_path,) if p is not None and p != Path("-")]
        if os.environ.get(SUMMARY_ENV):
            summaries.append(Path(os.environ[SUMMARY_ENV]))
        write_outputs(
            card,
            json_path=json_path,
            junit_path=junit_path,
            html_path=html_path,
            summary_paths=summaries,
        )
    exit_with(card.failed)
