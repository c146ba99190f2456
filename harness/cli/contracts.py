"""``harness contracts``: list, validate, verify, gate, export verdicts, print schemas.

Exit codes (part of the contract):

- ``verify``: 0 the provider keeps the contract, 1 contract violations, 2 usage,
  contract-file, provider or database errors (no verdict is recorded then).
- ``gate``: 0 every failover asked about is allowed, 1 one is refused (a deployment
  gate), 2 usage, configuration or database errors.
- ``validate``: 0 every contract file is valid, 1 a file has problems (each printed
  as FILE:LINE: FIELD: message).
- ``list``, ``verdicts``, ``schema``: 0, or 2 on errors.

Environment (read only here): the shared options' (``harness.cli.options``),
HARNESS_ACTOR (--by), HARNESS_VERDICT_MAX_AGE (--max-age). The work is done by
``harness.contracts.verification`` (verify), ``harness.contracts.chains`` (gate reports)
and ``harness.runtime.service`` (the providers, the gate, the contracts). Every command
reads the contracts directory `harness.contracts.registry.choose_contracts_dir` chooses,
and migrates its database first (`harness.cli.wiring.migrated_database`).
"""

from __future__ import annotations

import getpass
import json
import re
import sys
import time
from collections.abc import Mapping
from datetime import timedelta
from pathlib import Path
from typing import Any

import click

from harness.checks.junit import gate_suite, verification_suite
from harness.cli.exits import EXIT_FAILED, exit_on_error, exit_with, fail
from harness.cli.options import (
    config_option,
    contracts_option,
    db_option,
    prepare_reports,
    summary_md_option,
)
from harness.cli.wiring import Wiring, migrated_database, pass_wiring
from harness.config import ServiceConfig
from harness.contracts.captures import read_captures, write_captures
from harness.contracts.chains import (
    Chain,
    answer_line,
    chain_lines,
    contract_chains,
    gate_document,
)
from harness.contracts.gate import DEFAULT_MAX_VERDICT_AGE
from harness.contracts.loader import load_contract
from harness.contracts.model import Contract
from harness.contracts.registry import ContractRegistry, choose_contracts_dir
from harness.contracts.schema import SCHEMAS
from harness.contracts.template import PROVIDER_KINDS
from harness.contracts.tokens import DEFAULT_TOKENIZER, TOKENIZERS, BaseTokenizer, get_tokenizer
from harness.contracts.verdicts import export_verdicts, list_verdicts, record_verdict
from harness.contracts.verification import (
    find_contract,
    offline_target,
    verification_document,
    verification_lines,
)
from harness.contracts.verifier import Verification, verify_offline, verify_online
from harness.core.clock import SystemClock
from harness.errors import HarnessError
from harness.formats.junit import write_junit
from harness.providers.base import BaseProvider
from harness.runtime.service import choose_providers, failover_links, load_contracts

junit_option = click.option(
    "--junit",
    "junit_path",
    type=click.Path(dir_okay=False, writable=True),
    help="Also write the result as JUnit XML to this file.",
)
json_option = click.option("--json", "as_json", is_flag=True, help="Print JSON instead of text.")


@click.group("contracts")
def contracts() -> None:
    """Output contracts, provider verification and the failover gate."""


# --- commands ------------------------------------------------------------------------


@contracts.command("list")
@contracts_option
@json_option
def list_command(contracts_dir: Path, as_json: bool) -> None:
    """List the contracts of the contracts directory."""
    with exit_on_error():
        registry = _registry(contracts_dir)
    rows: list[dict[str, Any]] = [
        {
            "name": c.name,
            "version": c.version,
            "hash": c.hash,
            "samples": len(c.samples),
            "rules": len(c.rules),
            "repeats": c.settings.repeats,
            "token_budget": c.settings.token_budget,
            "file": c.source,
        }
        for c in registry.values()
    ]
    if as_json:
        click.echo(json.dumps({"contracts": rows}, indent=2))
        return
    if not rows:
        click.echo(f"no contracts in {contracts_dir}")
        return
    width = max(len(r["name"]) for r in rows)
    for r in rows:
        click.echo(
            f"{r['name']:<{width}}  v{r['version']:<4} {r['hash'][:12]}  {r['samples']} samples"
            f"  {r['rules']} rules  x{r['repeats']}  budget {r['token_budget']}  {r['file']}"
        )


@contracts.command()
@click.argument("files", nargs=-1, type=click.Path(dir_okay=False))
@contracts_option
def validate(files: tuple[str, ...], contracts_dir: Path) -> None:
    """Check contract files (default: the contracts directory); exit 1 on any problem."""
    try:  # validating is this command's job: even the default directory must exist
        if files:
            loaded = ContractRegistry([load_contract(f) for f in files])
        else:
            loaded = _registry(contracts_dir)
    except HarnessError as exc:
        click.echo(exc.message, err=True)
        sys.exit(EXIT_FAILED)
    for contract in loaded.values():
        click.echo(
            f"ok  {contract.name} v{contract.version} ({contract.short_hash})  {contract.source}"
        )


@contracts.command()
@click.argument("contract")
@click.option("--provider", "provider_name", required=True, help="The provider to verify.")
@click.option(
    "--offline",
    "offline_path",
    type=click.Path(exists=True, dir_okay=False),
    help="Check captured responses from this file instead of calling the provider.",
)
@click.option(
    "--capture",
    "capture_path",
    type=click.Path(dir_okay=False, writable=True),
    help="Write the responses to this capture file (verifiable later with --offline).",
)
@click.option("--model", help="The model verified (default: the provider's configured model).")
@click.option(
    "--kind",
    type=click.Choice(PROVIDER_KINDS),
    help="Offline: the provider kind whose prompt format to count (default: from the capture"
    " file, the configuration, else openai).",
)
@click.option(
    "--tokenizer",
    default=DEFAULT_TOKENIZER,
    show_default=True,
    type=click.Choice(sorted(TOKENIZERS)),
    help="Local tokenizer for providers without a token-counting endpoint.",
)
@click.option("--timeout", type=float, help="Seconds per call (default: the contract's).")
@click.option("--record/--no-record", default=True, show_default=True, help="Store the verdict.")
@click.option(
    "--by",
    "created_by",
    envvar="HARNESS_ACTOR",
    show_envvar=True,
    help="Who verified (default: the OS user).",
)
@contracts_option
@db_option
@config_option
@junit_option
@json_option
@pass_wiring
def verify(
    wiring: Wiring,
    contract: str,
    provider_name: str,
    offline_path: str | None,
    capture_path: str | None,
    model: str | None,
    kind: str | None,
    tokenizer: str,
    timeout: float | None,
    record: bool,
    created_by: str | None,
    contracts_dir: Path,
    database_url: str,
    config_path: Path | None,
    junit_path: str | None,
    as_json: bool,
) -> None:
    """Verify CONTRACT (a name, or a contract file) against a provider; record the verdict.

    Exit 0 pass, 1 contract violations, 2 usage, provider or database errors.
    """
    started = time.perf_counter()
    with exit_on_error():
        prepare_reports(junit_path, capture_path)
        # migrated like every command, before any call is made
        database = migrated_database(database_url) if record else None
        found = find_contract(contract, lambda: _registry(contracts_dir))
        settings = wiring.settings(config_path)
        local = get_tokenizer(tokenizer)
        if offline_path is not None:
            verification = _verify_offline(
                settings,
                found,
                provider_name,
                offline_path,
                model=model,
                kind=kind,
                tokenizer=local,
            )
        else:
            provider = _provider(wiring, settings, provider_name)
            verification = verify_online(
                found, provider, tokenizer=local, model=model, timeout=timeout
            )
        if capture_path is not None:
            write_captures(capture_path, verification.captures())
    created_by = created_by or _os_user()
    now = SystemClock().now()
    verdict, not_recorded = None, None
    if database is not None:
        try:  # the report is shown even when the database refuses the verdict
            verdict = record_verdict(database, verification, created_by=created_by, now=now)
        except HarnessError as exc:
            not_recorded = exc.message
    with exit_on_error():
        if junit_path is not None:
            seconds = time.perf_counter() - started
            write_junit(junit_path, [verification_suite(verification, seconds=seconds)])
    if as_json:
        document = verification_document(verification, verdict, created_by=created_by, now=now)
        click.echo(json.dumps(document, indent=2))
    else:
        click.echo("\n".join(verification_lines(verification, verdict)))
    if not_recorded is not None:
        fail(f"the verdict was not recorded: {not_recorded}")
    exit_with(not verification.passed)


def _registry(contracts_dir: Path) -> ContractRegistry:
    """The contracts every ``contracts`` command reads (`choose_contracts_dir`: the bundled
    ones when the default ``./contracts`` is absent, said once on stderr)."""
    chosen = choose_contracts_dir(contracts_dir)
    if chosen.note is not None:
        click.echo(chosen.note, err=True)
    return load_contracts(chosen.path)


def _verify_offline(
    settings: ServiceConfig,
    contract: Contract,
    provider_name: str,
    offline_path: str,
    *,
    model: str | None,
    kind: str | None,
    tokenizer: BaseTokenizer,
) -> Verification:
    captures = read_captures(offline_path)
    configured = choose_providers(settings).configs.get(provider_name)
    target = offline_target(captures, model=model, kind=kind, configured=configured)
    note = target.mismatch_note(file=offline_path, provider=provider_name)
    if note is not None:
        click.echo(note, err=True)
    return verify_offline(
        contract,
        captures,
        provider=provider_name,
        kind=target.kind,
        model=target.model,
        tokenizer=tokenizer,
        file=offline_path,
    )


def _provider(wiring: Wiring, settings: ServiceConfig, name: str) -> BaseProvider:
    choice = choose_providers(settings)
    if choice.builtin and name in choice.configs:
        click.echo(f"note: no providers configured; verifying the built-in fake {name!r}", err=True)
    return wiring.provider(settings, name)


def _os_user() -> str:
    try:
        return getpass.getuser()
    except Exception:  # no user name in some containers
        return "unknown"


_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw]?)\s*$")
_UNITS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def parse_duration(text: str) -> timedelta:
    """``"30d"``, ``"12h"``, ``"90m"``, ``"45s"`` or seconds -> timedelta (positive)."""
    match = _DURATION.match(text)
    if not match or float(match.group(1)) <= 0:
        raise ValueError(f"{text!r} is not a positive duration such as 30d, 12h, 90m or 45s")
    return timedelta(seconds=float(match.group(1)) * _UNITS[match.group(2)])


def _duration(ctx: click.Context, param: click.Parameter, value: str) -> timedelta:
    try:
        return parse_duration(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None


@contracts.command()
@click.option("--contract", "contract_name", help="The job's contract.")
@click.option("--to", "provider", help="The fallback provider.")
@click.option("--all", "all_chains", is_flag=True, help="Every failover chain in --config.")
@click.option(
    "--max-age",
    default=f"{DEFAULT_MAX_VERDICT_AGE.days}d",
    show_default=True,
    envvar="HARNESS_VERDICT_MAX_AGE",
    show_envvar=True,
    callback=_duration,
    help="Oldest verdict still trusted (e.g. 30d, 12h).",
)
@contracts_option
@db_option
@config_option
@junit_option
@summary_md_option
@json_option
@pass_wiring
def gate(
    wiring: Wiring,
    contract_name: str | None,
    provider: str | None,
    all_chains: bool,
    max_age: timedelta,
    contracts_dir: Path,
    database_url: str,
    config_path: Path | None,
    junit_path: str | None,
    summary_md_path: Path | None,
    as_json: bool,
) -> None:
    """May a job fail over? Exit 0 allowed, 1 refused, 2 errors (a deployment gate).

    Either --contract NAME --to PROVIDER, or --all for every chain of the configuration
    (a chain's first provider is its primary; each later one needs a passing, fresh
    verdict for the chain's contract). --all answers as `harness check --config` does;
    without --config it asks about the built-in fakes' chain once per contract of the
    contracts directory, so a missing or failed verdict refuses.
    """
    if all_chains == bool(contract_name or provider):
        raise click.UsageError("give either --contract NAME --to PROVIDER, or --all")
    if not all_chains and not (contract_name and provider):
        raise click.UsageError("--contract and --to go together")
    with exit_on_error():
        prepare_reports(junit_path, summary_md_path)
        settings = wiring.settings(config_path)
        registry = _registry(contracts_dir)
        if all_chains:
            chains = _deployment_chains(settings, registry, configured=config_path is not None)
        else:
            chains = (
                Chain(contract=contract_name, providers=("(primary)", str(provider)), source="cli"),
            )
        if not any(len(c.providers) > 1 for c in chains):
            fail(f"{config_path}: declares no failover chain (defaults.providers or chains)")
        database = migrated_database(database_url)
        asked = time.perf_counter()
        links = failover_links(settings, database, registry, chains=chains, max_age=max_age)
        seconds = time.perf_counter() - asked
        file = str(config_path) if config_path else None
        if junit_path is not None:
            write_junit(junit_path, [gate_suite(links, seconds=seconds, file=file)])
        for line in _publish_gate(links, summary_md_path, wiring.environ, file=file):
            click.echo(line)  # GitHub annotations, on GitHub Actions only
    if as_json:
        click.echo(json.dumps(gate_document(links, named_primary=all_chains), indent=2))
    else:
        click.echo("\n".join(chain_lines(links) if all_chains else [answer_line(links[0])]))
    exit_with(not all(link.allowed for link in links))


def _deployment_chains(
    settings: ServiceConfig, registry: ContractRegistry, *, configured: bool
) -> tuple[Chain, ...]:
    """The chains ``gate --all`` judges: a configuration's own; without one, the built-in
    deployment's chain for a job without a contract and once per contract it could be
    asked for (so a missing or failed verdict refuses, and the gate can fail)."""
    if configured:
        return settings.failover_chains
    return (*settings.failover_chains, *contract_chains(registry, settings.default_providers))


def _publish_gate(
    links: list[Any], path: Path | None, environ: Mapping[str, str], *, file: str | None
) -> list[str]:
    from harness.checks.report import gate_entries
    from harness.checks.summary_md import STEP_SUMMARY_ENV, Annotation, gate_markdown, publish

    refused = [
        Annotation(
            f"failover {link.primary} -> {link.provider} refused",
            f"{link.check.decision.reason}: {link.check.decision.detail}",
            file=file,
        )
        for link in links
        if not link.allowed
    ]
    if path is None and not environ.get(STEP_SUMMARY_ENV) and not refused:
        return []
    markdown = gate_markdown(gate_entries(links), title="harness contracts gate")
    return publish(markdown, refused, path=path, environ=environ)


@contracts.command()
@click.option("--contract", "contract_name", help="Only verdicts for this contract.")
@click.option("--provider", help="Only verdicts for this provider.")
@click.option(
    "--output",
    "-o",
    "output",
    type=click.Path(dir_okay=False, writable=True),
    help="Write to this file instead of standard output.",
)
@db_option
def verdicts(
    contract_name: str | None, provider: str | None, output: str | None, database_url: str
) -> None:
    """Export stored verdicts as JSON (schema: `harness contracts schema verdicts`)."""
    with exit_on_error():
        found = list_verdicts(
            migrated_database(database_url), contract_name=contract_name, provider=provider
        )
    text = json.dumps(export_verdicts(found), indent=2) + "\n"
    if output is None:
        click.echo(text, nl=False)
    else:
        Path(output).write_text(text, encoding="utf-8")
        click.echo(f"{len(found)} verdicts written to {output}", err=True)


@contracts.command()
@click.argument("kind", type=click.Choice(sorted(SCHEMAS)), default="contract")
def schema(kind: str) -> None:
    """Print the JSON Schema of a contract file, capture file, verdict export or gate report."""
    click.echo(json.dumps(SCHEMAS[kind], indent=2))
