"""``harness contracts``: list, validate, verify, gate, export verdicts, print schemas.

Exit codes (part of the contract):

- ``verify``: 0 the provider keeps the contract, 1 contract violations, 2 usage,
  contract-file, provider or database errors (no verdict is recorded then).
- ``gate``: 0 every failover asked about is allowed, 1 one is refused (a deployment
  gate), 2 usage, configuration or database errors.
- ``validate``: 0 every contract file is valid, 1 a file has problems (each printed
  as FILE:LINE: FIELD: message).
- ``list``, ``verdicts``, ``schema``: 0, or 2 on errors.

Environment (read only here): HARNESS_CONTRACTS_DIR (--contracts), HARNESS_DATABASE_URL
(--db), HARNESS_CONFIG (--config), HARNESS_ACTOR (--by), HARNESS_VERDICT_MAX_AGE
(--max-age).
"""

from __future__ import annotations

import getpass
import json
import re
import sys
import traceback
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any, NoReturn

import click

from harness.checks.junit import Case, Suite, write_junit
from harness.contracts.captures import read_captures, write_captures
from harness.contracts.chains import (
    Chain,
    Link,
    allows_contractless_failover,
    check_chains,
    load_config,
    parse_chains,
)
from harness.contracts.checks import CheckResult
from harness.contracts.gate import DEFAULT_MAX_VERDICT_AGE, VerdictGate
from harness.contracts.loader import CONTRACT_SUFFIXES, load_contract
from harness.contracts.model import Contract
from harness.contracts.registry import (
    CONTRACTS_DIR_ENV,
    DEFAULT_CONTRACTS_DIR,
    ContractRegistry,
    load_registry,
)
from harness.contracts.schema import SCHEMAS
from harness.contracts.template import PROVIDER_KINDS
from harness.contracts.tokens import DEFAULT_TOKENIZER, TOKENIZERS, get_tokenizer
from harness.contracts.verdicts import export_verdicts, list_verdicts, record_verdict
from harness.contracts.verifier import Verification, verify_offline, verify_online
from harness.core.clock import SystemClock
from harness.core.models import Verdict
from harness.errors import ConfigError, HarnessError
from harness.providers.base import BaseProvider
from harness.store.database import DEFAULT_DATABASE_URL, Database

SHOWN_FAILURES = 5  # per check, in text output; --json and --junit carry all kept


def fail(message: str, code: int = 2) -> NoReturn:
    click.echo(f"error: {message}", err=True)
    sys.exit(code)


contracts_option = click.option(
    "--contracts",
    "contracts_dir",
    envvar=CONTRACTS_DIR_ENV,
    default=DEFAULT_CONTRACTS_DIR,
    show_default=True,
    show_envvar=True,
    type=click.Path(file_okay=False),
    help="Directory of contract files.",
)
db_option = click.option(
    "--db",
    "database_url",
    envvar="HARNESS_DATABASE_URL",
    default=DEFAULT_DATABASE_URL,
    show_default=True,
    show_envvar=True,
    help="Database URL: sqlite:///FILE or postgresql://USER@HOST:PORT/DB.",
)
config_option = click.option(
    "--config",
    "config_path",
    envvar="HARNESS_CONFIG",
    default=None,
    show_envvar=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="Configuration (YAML): providers, defaults, chains. None: the built-in fakes.",
)
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


# --- shared helpers ------------------------------------------------------------------


def _registry(contracts_dir: str) -> ContractRegistry:
    try:
        return load_registry(contracts_dir)
    except HarnessError as exc:
        fail(exc.message)


def _contract(name_or_file: str, contracts_dir: str) -> Contract:
    """A contract by registry name, or straight from a file path."""
    path = Path(name_or_file)
    if path.suffix.lower() in CONTRACT_SUFFIXES and path.is_file():
        try:
            return load_contract(path)
        except HarnessError as exc:
            fail(exc.message)
    registry = _registry(contracts_dir)
    try:
        return registry[name_or_file]
    except HarnessError as exc:
        fail(exc.message)


def _database(url: str) -> Database:
    try:
        return Database(url)
    except HarnessError as exc:
        fail(exc.message)


def _config(config_path: Path | None) -> dict[str, Any]:
    if config_path is None:
        return {}
    try:
        return load_config(config_path)
    except HarnessError as exc:
        fail(exc.message)


def provider_configs(config_path: Path | None) -> tuple[dict[str, Any], bool]:
    """The configured providers by name, and whether they are the built-in fakes (used,
    as by the service, when the configuration declares no providers)."""
    from harness.providers.build import BUILTIN_FAKES
    from harness.providers.config import load_providers

    if config_path is not None:
        configured = load_providers(config_path, required=False)
        if configured:
            return dict(configured), False
    return dict(BUILTIN_FAKES), True


def provider_models(config_path: Path | None) -> dict[str, str]:
    """Provider name -> the model it is configured with (what verdicts are checked for)."""
    configs, _ = provider_configs(config_path)
    return {name: config.model for name, config in configs.items()}


ProviderFactory = Callable[[Path | None, str], BaseProvider]


def build_configured_provider(config_path: Path | None, name: str) -> BaseProvider:
    """The adapter for provider ``name`` of the configuration (or a built-in fake)."""
    from harness.providers.build import build_provider, builtin_fake_providers

    configs, builtin = provider_configs(config_path)
    if name not in configs:
        known = ", ".join(sorted(configs)) or "none"
        where = config_path or "the built-in fakes"
        raise ConfigError(f"{where}: no provider named {name!r} (known: {known})")
    if builtin:
        click.echo(f"note: no providers configured; verifying the built-in fake {name!r}", err=True)
        return builtin_fake_providers()[name]
    return build_provider(configs[name])


# Tests replace this to verify against in-process providers through the real CLI.
provider_factory: ProviderFactory = build_configured_provider


def _status_word(check: CheckResult) -> str:
    return {"pass": "PASS", "fail": "FAIL", "skip": "SKIP"}[check.status]


def _print_verification(verification: Verification, verdict: Verdict | None) -> None:
    contract = verification.contract
    mode = "offline" if verification.offline else "online"
    click.echo(
        f"{contract.name} v{contract.version} ({contract.short_hash}) on {verification.provider}"
        f" ({verification.model or 'model unknown'}), {mode}: {verification.sample_count}"
        f" samples x {contract.settings.repeats} repeats, {len(verification.responses)} responses"
    )
    width = max(len(c.name) for c in verification.checks)
    for check in verification.checks:
        click.echo(f"  {_status_word(check)}  {check.name:<{width}}  {check.detail}")
        for failure in check.failures[:SHOWN_FAILURES]:
            where = failure.sample or ""
            if failure.repeat is not None:
                where += f" #{failure.repeat}"
            click.echo(f"          {where}: {failure.message}")
        if check.failed > SHOWN_FAILURES:
            click.echo(f"          ... and {check.failed - SHOWN_FAILURES} more (see --json)")
    outcome = (
        "PASSED" if verification.passed else f"FAILED ({', '.join(verification.failed_checks)})"
    )
    recorded = f"verdict #{verdict.id} recorded" if verdict is not None else "verdict not recorded"
    click.echo(f"{outcome}; {recorded}")


def _verification_suite(verification: Verification) -> Suite:
    classname = f"contracts.{verification.contract.name}.{verification.provider}"
    cases = []
    for check in verification.checks:
        details = "\n".join(
            f"{f.sample or ''}{'' if f.repeat is None else f' #{f.repeat}'}: {f.message}"
            for f in check.failures
        )
        cases.append(
            Case(
                name=check.name,
                classname=classname,
                failure=check.detail if check.status == "fail" else None,
                failure_type="contract_violation",
                details=details,
                skipped=check.detail if check.status == "skip" else None,
            )
        )
    return Suite(
        name=f"contracts verify {verification.contract.name} --provider {verification.provider}",
        cases=cases,
    )


# --- commands ------------------------------------------------------------------------


@contracts.command("list")
@contracts_option
@json_option
def list_command(contracts_dir: str, as_json: bool) -> None:
    """List the contracts of the contracts directory."""
    registry = _registry(contracts_dir)
    rows = [
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
def validate(files: tuple[str, ...], contracts_dir: str) -> None:
    """Check contract files (default: the contracts directory); exit 1 on any problem."""
    try:
        if files:
            loaded = ContractRegistry([load_contract(f) for f in files])
        else:
            loaded = load_registry(contracts_dir)
    except HarnessError as exc:
        click.echo(exc.message, err=True)
        sys.exit(1)
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
def verify(
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
    contracts_dir: str,
    database_url: str,
    config_path: str,
    junit_path: str | None,
    as_json: bool,
) -> None:
    """Verify CONTRACT (a name, or a contract file) against a provider; record the verdict.

    Exit 0 pass, 1 contract violations, 2 usage, provider or database errors.
    """
    found = _contract(contract, contracts_dir)
    local_tokenizer = get_tokenizer(tokenizer)
    try:
        if offline_path is not None:
            configs, _ = provider_configs(config_path)
            configured = configs.get(provider_name)
            captures = read_captures(offline_path)
            captured = captures.model or next(
                (r.model for r in captures.responses if r.model), None
            )
            configured_model = configured.model if configured is not None else None
            if model is None and captured and configured_model and captured != configured_model:
                click.echo(
                    f"note: {offline_path} holds outputs of {captured!r}; {provider_name} is "
                    f"configured with {configured_model!r}, so the gate will answer "
                    "model_changed until that model is verified",
                    err=True,
                )
            verification = verify_offline(
                found,
                captures,
                provider=provider_name,
                kind=kind
                or captures.kind
                or (configured.kind.value if configured is not None else None),
                model=model or (None if captured else configured_model),
                tokenizer=local_tokenizer,
                file=offline_path,
            )
        else:
            provider = provider_factory(config_path, provider_name)
            verification = verify_online(
                found, provider, tokenizer=local_tokenizer, model=model, timeout=timeout
            )
        if capture_path is not None:
            write_captures(capture_path, verification.captures())
    except HarnessError as exc:
        fail(exc.message)
    except OSError as exc:  # --capture into a missing directory, a full disk...
        fail(f"{exc.filename or ''}: {exc.strerror or exc}")
    except Exception as exc:  # a bug must not read as "contract violated" (exit 1)
        traceback.print_exc()
        fail(f"internal error: {type(exc).__name__}: {exc}")
    verdict = None
    not_recorded = None
    if record:
        try:  # the report is shown even when the database refuses the verdict
            verdict = record_verdict(
                _database(database_url),
                verification,
                created_by=created_by or _os_user(),
                now=SystemClock().now(),
            )
        except HarnessError as exc:
            not_recorded = exc.message
    if junit_path is not None:
        write_junit(junit_path, [_verification_suite(verification)])
    if as_json:
        from harness.contracts.verdicts import verdict_to_dict

        document = export_verdicts([])
        if verdict is not None:
            document["verdicts"].append(verdict_to_dict(verdict))
        else:
            document["verdicts"].append(_unrecorded(verification, created_by or _os_user()))
        click.echo(json.dumps(document, indent=2))
    else:
        _print_verification(verification, verdict)
    if not_recorded is not None:
        fail(f"the verdict was not recorded: {not_recorded}")
    sys.exit(0 if verification.passed else 1)


def _unrecorded(verification: Verification, created_by: str) -> dict[str, Any]:
    return {
        "id": None,
        "provider": verification.provider,
        "model": verification.model,
        "contract_name": verification.contract.name,
        "contract_hash": verification.contract.hash,
        "passed": verification.passed,
        "checks": verification.checks_dict(),
        "sample_count": verification.sample_count,
        "created_at": SystemClock().now().isoformat(),
        "created_by": created_by,
    }


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


def _link_line(links: list[Link]) -> str:
    chain = links[0].chain
    allowed = all(link.allowed for link in links)
    parts = []
    for link in links:
        decision = link.check.decision
        parts.append(f"-> {link.provider}: {decision.reason} ({decision.detail})")
    status = "ALLOWED" if allowed else "REFUSED"
    name = chain.contract or "(no contract)"
    return f"{status}  {name}  {links[0].primary} {'; '.join(parts)}"


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
@json_option
def gate(
    contract_name: str | None,
    provider: str | None,
    all_chains: bool,
    max_age: timedelta,
    contracts_dir: str,
    database_url: str,
    config_path: str,
    junit_path: str | None,
    as_json: bool,
) -> None:
    """May a job fail over? Exit 0 allowed, 1 refused, 2 errors (a deployment gate).

    Either --contract NAME --to PROVIDER, or --all for every chain of the configuration
    (a chain's first provider is its primary; each later one needs a passing, fresh
    verdict for the chain's contract).
    """
    if all_chains == bool(contract_name or provider):
        raise click.UsageError("give either --contract NAME --to PROVIDER, or --all")
    if not all_chains and not (contract_name and provider):
        raise click.UsageError("--contract and --to go together")
    config = _config(config_path)
    registry = _registry(contracts_dir)
    try:
        configs, builtin = provider_configs(config_path)
        allow_without_contract = allows_contractless_failover(config) or builtin
        if all_chains:
            chains = parse_chains(config, file=str(config_path or "(no configuration)"))
        else:
            assert provider is not None
            chains = [
                Chain(contract=contract_name, providers=("(primary)", provider), source="cli")
            ]
    except HarnessError as exc:
        fail(exc.message)
    if not any(len(c.providers) > 1 for c in chains):
        fail(f"{config_path}: declares no failover chain (defaults.providers or chains)")
    verdict_gate = VerdictGate(
        _database(database_url),
        registry,
        SystemClock(),
        max_age=max_age,
        provider_models={name: c.model for name, c in configs.items()},
        allow_without_contract=allow_without_contract,
    )
    try:
        links = check_chains(verdict_gate, chains)
    except HarnessError as exc:
        fail(exc.message)
    except Exception as exc:  # a bug must not read as "refused" (exit 1)
        traceback.print_exc()
        fail(f"internal error: {type(exc).__name__}: {exc}")
    refused = [link for link in links if not link.allowed]
    if junit_path is not None:
        cases = [
            Case(
                name=f"{link.chain.contract or '(no contract)'}: {link.primary} -> {link.provider}",
                classname=f"contracts.gate.{link.chain.source}",
                failure=None
                if link.allowed
                else f"{link.check.decision.reason}: {link.check.decision.detail}",
                failure_type=link.check.decision.reason,
            )
            for link in links
        ]
        write_junit(junit_path, [Suite(name="contracts gate", cases=cases)])
    if as_json:
        from harness.contracts.schema import GATE_REPORT_FORMAT

        document = {
            "format": GATE_REPORT_FORMAT,
            "allowed": not refused,
            "links": [link.to_dict() for link in links],
        }
        if not all_chains:
            document["links"][0]["primary"] = None
        click.echo(json.dumps(document, indent=2))
    elif all_chains:
        by_chain: dict[int, list[Link]] = {}
        for link in links:
            by_chain.setdefault(id(link.chain), []).append(link)
        for chain_links in by_chain.values():
            click.echo(_link_line(chain_links))
    else:
        decision = links[0].check.decision
        word = "ALLOWED" if decision.allowed else "REFUSED"
        click.echo(f"{word}  {contract_name} -> {provider}: {decision.reason} ({decision.detail})")
    sys.exit(1 if refused else 0)


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
    try:
        found = list_verdicts(
            _database(database_url), contract_name=contract_name, provider=provider
        )
    except HarnessError as exc:
        fail(exc.message)
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
