"""`harness fake-providers`: run the fake OpenAI and Anthropic APIs as a real server.

Exit codes: 0 stopped by a signal, 1 could not listen, 2 usage error (click).
"""

from __future__ import annotations

import signal

import click
from uvicorn.config import LOGGING_CONFIG

from fake_providers import FakeProviders, FakeServer, InvalidInput
from harness.cli.fake_scripts import script
from harness.cli.options import host_option, port_option

DEFAULT_PORT = 8765


@click.group("fake-providers")
def fake_providers() -> None:
    """Fake OpenAI- and Anthropic-compatible providers with scripted faults."""


@fake_providers.command()
@host_option
@port_option(DEFAULT_PORT)
@click.option(
    "--access-log/--no-access-log",
    default=True,
    show_default=True,
    help="Log one line per request (method, path, status) to standard error.",
)
@click.option(
    "--providers",
    "names",
    default="",
    metavar="NAME,...",
    help="Also serve these named fake providers under /p/NAME/openai/v1 and /p/NAME/anthropic.",
)
def serve(host: str, port: int, access_log: bool, names: str) -> None:
    """Serve both fake APIs on one port until interrupted.

    \b
    OpenAI base_url:    http://HOST:PORT/openai/v1
    Anthropic base_url: http://HOST:PORT/anthropic
    Control API:        http://HOST:PORT/control  (scripts, ledger, lookup)
    Pick a fault per request with the model name fake/<behaviour>, e.g. fake/hang.
    """
    try:
        listed = [n.strip() for n in names.split(",") if n.strip()]
        fakes = FakeProviders(providers=listed or None)  # none listed: any name is served
    except InvalidInput as exc:
        raise click.BadParameter(exc.message, param_hint="--providers") from None
    try:
        server = FakeServer(
            fakes, host=host, port=port, access_log=access_log, log_config=LOGGING_CONFIG
        )
    except OSError as exc:
        raise click.ClickException(
            f"cannot listen on {host}:{port}: {exc.strerror or exc}"
        ) from None
    click.echo(f"fake providers listening on {server.url}")
    click.echo(f"  OpenAI base_url:    {server.openai_base_url}")
    click.echo(f"  Anthropic base_url: {server.anthropic_base_url}")
    click.echo(f"  control API:        {server.control_url}")
    for name in fakes.providers or ():
        click.echo(f"  {name}: {server.base_url_for(name, 'openai')}")
        click.echo(f"  {name}: {server.base_url_for(name, 'anthropic')}")
    # uvicorn shuts down gracefully, then re-raises the signal it caught; make that an
    # ordinary exit 0 rather than death by SIGTERM or a KeyboardInterrupt traceback.
    signal.signal(signal.SIGTERM, _exit_quietly)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


def _exit_quietly(signum: int, frame: object) -> None:
    raise SystemExit(0)


fake_providers.add_command(script)
