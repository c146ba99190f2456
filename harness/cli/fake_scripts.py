"""`harness fake-providers script`: post scripts to a running fake-provider server from
arguments or a YAML/JSON file, or turn a capture file (`harness contracts verify
--capture`) into a script the fakes replay, without writing raw HTTP.

A script file holds one script (the control API's body: ``behaviours``, ``then``,
``api``, ``model``, ``attempt_id``, ``provider``), a list of them, or ``{scripts: [...]}``.
Every script is checked as the server checks it before any is posted, so a bad file
changes nothing.

Exit codes: 0 posted (or written) · 2 bad input, or the server could not be reached or
refused a script (its field and message are printed).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click
import httpx
import yaml

from fake_providers import InvalidInput
from fake_providers.scripts import ScriptBook
from harness.cli.exits import fail
from harness.cli.options import file_option
from harness.errors import HarnessError
from harness.formats import yaml_text

DEFAULT_FAKES = "http://127.0.0.1:8765"
_KINDS = {"openai": "openai", "openai_compatible": "openai", "anthropic": "anthropic"}


def behaviour_argument(text: str) -> Any:
    """A behaviour from the command line: ``NAME``, ``NAME:KEY=VALUE,KEY=VALUE`` (values
    read as YAML scalars: ``2`` is a number) or a JSON object."""
    if text.lstrip().startswith("{"):
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            raise click.BadParameter(f"{text!r} is not a JSON object: {exc.msg}") from None
    name, _, params = text.partition(":")
    if not params:
        return name
    behaviour: dict[str, Any] = {"behaviour": name}
    for pair in params.split(","):
        key, equals, value = pair.partition("=")
        if not equals or not key.strip():
            raise click.BadParameter(f"{pair!r} in {text!r} is not KEY=VALUE")
        behaviour[key.strip()] = yaml_text.load(value)
    return behaviour


def scripts_from_file(path: Path) -> list[dict[str, Any]]:
    """The scripts a YAML or JSON file holds (one, a list, or ``{scripts: [...]}``)."""
    try:
        data = yaml_text.load(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise click.BadParameter(f"{path}: {exc.strerror}", param_hint="--file") from None
    except yaml.YAMLError as exc:
        raise click.BadParameter(f"{path}: not YAML or JSON: {exc}", param_hint="--file") from None
    if isinstance(data, dict) and "scripts" in data:
        data = data["scripts"]
    scripts = data if isinstance(data, list) else [data]
    if not all(isinstance(s, dict) for s in scripts):
        raise click.BadParameter(f"{path}: a script is a mapping", param_hint="--file")
    return scripts


def script_from_capture(path: Path, *, api: str | None = None) -> dict[str, Any]:
    """The script that makes a fake answer what the capture recorded: one `success` with
    the recorded text per response, in the file's order (api from its `kind`)."""
    from harness.contracts.captures import read_captures

    captures = read_captures(path)
    script: dict[str, Any] = {
        "behaviours": [{"behaviour": "success", "content": r.text} for r in captures.responses]
    }
    chosen = api or _KINDS.get(captures.kind or "")
    if chosen:
        script["api"] = chosen
    return script


def checked(scripts: list[dict[str, Any]]) -> None:
    """Every script as the server would check it (errors name the script and field)."""
    book = ScriptBook()
    for i, script in enumerate(scripts):
        try:
            book.add_json(script)
        except InvalidInput as exc:
            where = f"script {i + 1}: " if len(scripts) > 1 else ""
            raise click.BadParameter(f"{where}{exc.field}: {exc.message}") from None


def post(fakes: str, scripts: list[dict[str, Any]], *, reset: bool) -> list[dict[str, Any]]:
    control = f"{fakes.rstrip('/')}/control"
    posted = []
    try:
        with httpx.Client(timeout=10.0) as client:
            if reset:
                client.post(f"{control}/reset").raise_for_status()
            for script in scripts:
                reply = client.post(f"{control}/scripts", json=script)
                if reply.status_code == 400:
                    error = reply.json().get("error", {})
                    fail(
                        f"the fakes refused a script: {error.get('field')}: {error.get('message')}"
                    )
                reply.raise_for_status()
                posted.append(reply.json()["script"])
    except httpx.HTTPError as exc:
        fail(f"cannot reach the fake providers at {fakes}: {exc}")
    return posted


@click.command("script")
@click.argument("behaviours", nargs=-1, type=behaviour_argument, metavar="[BEHAVIOUR]...")
@click.option(
    "--fakes",
    "fakes_url",
    default=DEFAULT_FAKES,
    show_default=True,
    help="Base URL of the running `harness fake-providers serve`.",
)
@file_option(
    "--file", "files", multiple=True, help="A YAML/JSON file of scripts to post (repeatable)."
)
@file_option(
    "--from-capture",
    "captures",
    multiple=True,
    help="A capture file to replay: one success with each recorded text.",
)
@click.option(
    "--api",
    type=click.Choice(["openai", "anthropic"]),
    help="Only requests to this API take the script.",
)
@click.option("--provider", help="Only requests to this named fake provider take it.")
@click.option("--model", help="Only requests for this model take it.")
@click.option("--attempt-id", help="Only requests carrying this attempt id take it.")
@click.option(
    "--then",
    "then",
    type=behaviour_argument,
    help="What to answer once the script is used up (default: success).",
)
@click.option("--reset", is_flag=True, help="Reset the fakes (scripts, ledger, hangs) first.")
@file_option("--out", "out", help="Write the scripts here (YAML) instead of posting them.")
def script(
    behaviours: tuple[Any, ...],
    fakes_url: str,
    files: tuple[Path, ...],
    captures: tuple[Path, ...],
    api: str | None,
    provider: str | None,
    model: str | None,
    attempt_id: str | None,
    then: Any,
    reset: bool,
    out: Path | None,
) -> None:
    """Post scripts to running fakes: BEHAVIOURS in order (NAME, NAME:KEY=VALUE,... or a
    JSON object), the scripts of --file, or a --from-capture replay; or write them
    with --out. The match options apply to the BEHAVIOURS and --from-capture scripts.

    \b
    harness fake-providers script rate_limit:retry_after=2 success --api openai
    harness fake-providers script --file faults.yaml --reset
    harness fake-providers script --from-capture captures.json --out replay.yaml

    Exit codes: 0 posted (or written) · 2 bad input (nothing posted), or the fakes could
    not be reached or refused a script.
    """  # fmt: skip
    match = {"api": api, "provider": provider, "model": model, "attempt_id": attempt_id}
    match = {k: v for k, v in match.items() if v is not None}
    scripts = [s for path in files for s in scripts_from_file(path)]
    for path in captures:
        try:
            scripts.append({**script_from_capture(path, api=api), **match})
        except HarnessError as exc:  # CaptureError names the file and field
            raise click.BadParameter(exc.message, param_hint="--from-capture") from None
    if behaviours or then is not None:
        own: dict[str, Any] = {"behaviours": list(behaviours), **match}
        if then is not None:
            own["then"] = then
        scripts.append(own)
    if not scripts:
        raise click.UsageError("nothing to script: give BEHAVIOURS, --file or --from-capture")
    checked(scripts)
    if out is not None:
        out.write_text(yaml.safe_dump({"scripts": scripts}, sort_keys=False), encoding="utf-8")
        click.echo(f"wrote {len(scripts)} script(s) to {out}")
        return
    for posted in post(fakes_url, scripts, reset=reset):
        keys = ("api", "provider", "model", "attempt_id")
        where = ", ".join(f"{k} {posted[k]}" for k in keys if posted.get(k))
        click.echo(
            f"script {posted['id']}: {len(posted['behaviours'])} behaviour(s)"
            + (f" for {where}" if where else "")
        )
