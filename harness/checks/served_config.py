"""The served story's configuration files: the provider section as a user writes it.

Before the story serves, it hands the readers a user meets (`harness.config.load_config`,
what `harness serve` and every command read; `harness.providers.load_providers`, the
library's) files a user gets wrong, and judges each answer by docs/providers.md
("Provider configuration"): every error is a `ProviderConfigError` (a `ConfigError`)
whose message starts with the file and the field, ``FILE: providers[1].kind: ...``; a
key pasted into the file (an `api_key` field, or a key where `api_key_env` wants a
variable's name) is refused and never echoed. A file that is right is read as it says:
the list and the mapping forms give the same providers, with the values written (the
defaults where none is). The contracts the service reads are judged too: a directory
given must exist, and `./contracts`, when present, is read whole. And a file that names
no providers serves the built-in fakes (docs/providers.md): in process, with failover
allowed without a contract, its stop waiting for no call (docs/operations.md); and a
provider asked for by name that the file does not
name is refused with an error naming the file and the providers it does.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ENTRY = "{name: p, kind: openai, model: m}"


@dataclass(frozen=True)
class Bad:
    """A provider section a user got wrong, and the field its error must name."""

    why: str
    text: str  # the file (`{key}`: the canary key, pasted by mistake)
    field: str
    words: str = ""  # the message says this too (docs/providers.md's own example)


BAD: tuple[Bad, ...] = (
    Bad("a top level that is not a mapping", "- providers\n", "(top level)"),
    Bad("no providers key", "tokens: {}\n", "providers"),
    Bad("providers neither a list nor a mapping", "providers: 5\n", "providers"),
    Bad("an entry that is not a mapping", "providers: [primary]\n", "providers[0]"),
    Bad("a mapping entry that is not a mapping", "providers: {p: 3}\n", "providers.p"),
    Bad(
        "a kind not documented",
        f"providers:\n  - {ENTRY}\n  - {{name: q, kind: gemini, model: m}}\n",
        "providers[1].kind",
        "'gemini' is not one of openai, anthropic, openai_compatible",
    ),
    Bad("no kind", "providers: [{name: p, model: m}]\n", "providers[0].kind"),
    Bad("no model", "providers: [{name: p, kind: openai}]\n", "providers[0].model"),
    Bad("an empty name", "providers: [{name: ' ', kind: openai, model: m}]\n", "providers[0].name"),
    Bad(
        "a name given twice",
        f"providers: [{ENTRY}, {{name: p, kind: anthropic, model: m}}]\n",
        "providers[1].name",
    ),
    Bad(
        "a field not documented",
        "providers: [{name: p, kind: openai, model: m, retries: 3}]\n",
        "providers[0].retries",
    ),
    Bad(
        "a key in the file",
        "providers: [{name: p, kind: openai, model: m, api_key: '{key}'}]\n",
        "providers[0].api_key",
    ),
    Bad(
        "a key where the variable's name goes",
        "providers: [{name: p, kind: openai, model: m, api_key_env: '{key}'}]\n",
        "providers[0].api_key_env",
    ),
    Bad(
        "openai_compatible with no base_url",
        "providers: [{name: p, kind: openai_compatible, model: m}]\n",
        "providers[0].base_url",
    ),
    Bad(
        "a base_url that is not http(s)",
        "providers: [{name: p, kind: openai, model: m, base_url: 'ftp://example.com/v1'}]\n",
        "providers[0].base_url",
    ),
    Bad(
        "a base_url with no host",
        "providers: [{name: p, kind: openai, model: m, base_url: 'http://:80/v1'}]\n",
        "providers[0].base_url",
    ),
    Bad(
        "a lookup_url that is no URL",
        "providers: [{name: p, kind: openai, model: m, lookup_url: nowhere}]\n",
        "providers[0].lookup_url",
    ),
    Bad(
        "a zero timeout",
        "providers: [{name: p, kind: openai, model: m, timeout: 0}]\n",
        "providers[0].timeout",
    ),
    Bad(
        "a negative connect_timeout",
        "providers: [{name: p, kind: openai, model: m, connect_timeout: -1}]\n",
        "providers[0].connect_timeout",
    ),
    Bad(
        "a timeout of true",
        "providers: [{name: p, kind: openai, model: m, timeout: true}]\n",
        "providers[0].timeout",
    ),
    Bad(
        "a timeout of .inf",
        "providers: [{name: p, kind: openai, model: m, timeout: .inf}]\n",
        "providers[0].timeout",
    ),
    Bad(
        "a timeout in words",
        "providers: [{name: p, kind: openai, model: m, timeout: fast}]\n",
        "providers[0].timeout",
    ),
    Bad(
        "stream as a word",
        "providers: [{name: p, kind: openai, model: m, stream: 'yes'}]\n",
        "providers[0].stream",
    ),
    Bad(
        "stored completions at an Anthropic-kind provider",
        "providers: [{name: p, kind: anthropic, model: m, store_completions: true}]\n",
        "providers[0].store_completions",
    ),
)

GOOD_LIST = """\
providers:
  - {name: primary, kind: openai, model: gpt-4o-mini, api_key_env: OPENAI_API_KEY,
     timeout: 30, connect_timeout: 2.5, store_completions: true, stream: false}
  - {name: fallback, kind: anthropic, model: claude-haiku-4-5}
  - {name: local, kind: openai_compatible, base_url: 'http://127.0.0.1:8765/openai/v1',
     model: anything, lookup_url: 'http://127.0.0.1:8765/control/lookup'}
"""
GOOD_MAPPING = """\
providers:
  primary: {kind: openai, model: gpt-4o-mini, api_key_env: OPENAI_API_KEY,
            timeout: 30, connect_timeout: 2.5, store_completions: true, stream: false}
  fallback: {kind: anthropic, model: claude-haiku-4-5}
  local: {kind: openai_compatible, base_url: 'http://127.0.0.1:8765/openai/v1',
          model: anything, lookup_url: 'http://127.0.0.1:8765/control/lookup'}
"""
GOOD: dict[str, dict[str, Any]] = {
    # what GOOD_LIST says, with docs/providers.md's defaults for what it leaves out
    "primary": {
        "kind": "openai",
        "base_url": "https://api.openai.com/v1",
        "model": "gpt-4o-mini",
        "api_key_env": "OPENAI_API_KEY",
        "timeout": 30.0,
        "connect_timeout": 2.5,
        "lookup_url": None,
        "stream": False,
        "store_completions": True,
    },
    "fallback": {
        "kind": "anthropic",
        "base_url": "https://api.anthropic.com",
        "model": "claude-haiku-4-5",
        "api_key_env": None,
        "timeout": 60.0,
        "connect_timeout": 5.0,
        "lookup_url": None,
        "stream": True,
        "store_completions": False,
    },
    "local": {
        "kind": "openai_compatible",
        "base_url": "http://127.0.0.1:8765/openai/v1",
        "model": "anything",
        "api_key_env": None,
        "timeout": 60.0,
        "connect_timeout": 5.0,
        "lookup_url": "http://127.0.0.1:8765/control/lookup",
        "stream": True,
        "store_completions": False,
    },
}


def judge_config_files(where: Path, key: str) -> list[str]:
    """Every failure of the readers on the story's files (none: they hold)."""
    from harness.config import load_config
    from harness.providers import load_providers

    readers: dict[str, Callable[[Path], Any]] = {
        "load_config": lambda path: load_config(path, environ={}),
        "load_providers": load_providers,
    }
    failures: list[str] = []
    for i, bad in enumerate(BAD):
        path = where / f"bad-{i}.yaml"
        path.write_text(bad.text.replace("{key}", key))
        for name, read in readers.items():
            if name == "load_config" and bad.field in ("(top level)", "providers"):
                continue  # the service's file has other sections: the providers' is optional
            failures += _refused(read, name, path, bad, key)
    missing = where / "missing.yaml"
    failures += _refused(load_providers, "load_providers", missing, Bad("no file", "", ""), key)
    for form, text in (("list", GOOD_LIST), ("mapping", GOOD_MAPPING)):
        path = where / f"good-{form}.yaml"
        path.write_text(text)
        for name, read in readers.items():
            failures += _read_as_written(read, name, path, form)
    return failures + _contracts_read(where)


def _contracts_read(where: Path) -> list[str]:
    """The service's contracts (docs/contracts.md): a directory given must exist (an
    error naming it, never no contracts); the default one, `./contracts`, may be absent
    (no contracts), and when present its files are the contracts (each file's `name`,
    read here from the files themselves; a directory the service cannot read is the
    user's to mend, not judged)."""
    from harness.errors import ContractLoadError
    from harness.runtime.service import load_contracts

    failures: list[str] = []
    missing = where / "no-such-contracts"
    try:
        found = load_contracts(missing)
    except ContractLoadError as exc:
        if str(missing) not in str(exc):
            failures.append(f"a contracts directory that does not exist: {exc} names not it")
    else:
        failures.append(f"a contracts directory that does not exist was read as {list(found)}")
    wanted = _contract_names(Path("contracts"))
    try:
        got = sorted(load_contracts())
    except ContractLoadError:
        return failures
    if wanted is not None and got != wanted:
        failures.append(f"./contracts holds the contracts {wanted}; the service read {got}")
    return failures


def _contract_names(directory: Path) -> list[str] | None:
    """The `name` of each contract file directly in `directory` (none: it is absent);
    None when a file holds no name this judge can read."""
    import yaml

    if not directory.is_dir():
        return []
    names = []
    for file in sorted(directory.iterdir()):
        if file.is_file() and file.suffix.lower() in (".yaml", ".yml", ".json"):
            if file.name.startswith("."):
                continue
            try:
                data = yaml.safe_load(file.read_text(encoding="utf-8"))
            except (OSError, ValueError, yaml.YAMLError):
                return None
            if not isinstance(data, dict) or not isinstance(data.get("name"), str):
                return None
            names.append(data["name"])
    return sorted(names)


def _refused(read: Callable[[Path], Any], reader: str, path: Path, bad: Bad, key: str) -> list[str]:
    from harness.errors import ConfigError, ProviderConfigError

    said = f"{reader} given {bad.why}"
    try:
        read(path)
    except ProviderConfigError as exc:
        message = str(exc)
    except ConfigError as exc:
        return [f"{said}: raised a ConfigError that is no ProviderConfigError ({exc})"[:400]]
    except Exception as exc:  # a broken reader may fail in any way
        return [f"{said}: raised {type(exc).__name__} ({exc}), not a ProviderConfigError"[:400]]
    else:
        return [f"{said}: accepted the file; expected an error naming {bad.field or 'it'}"]
    if key in message:
        return [f"{said}: the error echoes the key pasted into the file"]
    head = f"{path}: {bad.field}: " if bad.field else f"{path}"
    if not message.startswith(head) or bad.words not in message:
        want = f"{head}...{bad.words}" if bad.words else f"{head}..."
        return [f"{said}: the error says {message[:300]!r}; expected {want!r}"]
    return []


def _read_as_written(read: Callable[[Path], Any], reader: str, path: Path, form: str) -> list[str]:
    said = f"{reader} given the {form} form of a right file"
    try:
        found = read(path)
    except Exception as exc:  # a broken reader may fail in any way
        return [f"{said}: raised {type(exc).__name__} ({exc})"[:400]]
    configs = getattr(found, "providers", found)
    got = {
        name: {
            field: getattr(getattr(config, field), "value", getattr(config, field))
            for field in GOOD["primary"]
        }
        for name, config in configs.items()
    }
    if got != GOOD or any(config.name != name for name, config in configs.items()):
        return [f"{said}: read {got}; the file says {GOOD}"[:600]]
    return []


BUILTIN_BOUND = 10.0  # seconds a job on the built-in fakes may take (it takes milliseconds)


def judge_builtin_served(where: Path) -> list[str]:
    """A service built from a file that names no providers runs on the built-in fakes:
    a job over `primary, fallback` whose primary answers 503 is answered by the fallback
    within the bound (in process, no network; failover there needs no contract). Its
    stop waits for no call (docs/operations.md): with one hanging, a minute from its
    timeout, `close` returns within `CLOSE_BOUND`. And a provider asked for by a name the
    file does not give is refused naming the file and the providers there are (the
    built-in two, or the file's own)."""
    from harness.checks.served_calls import settled
    from harness.config import load_config
    from harness.runtime.service import build_service

    path = where / "no-providers.yaml"
    path.write_text("failover_without_contract: refuse\n")
    settings = load_config(path, environ={})
    listed = where / "listed-providers.yaml"
    listed.write_text(GOOD_LIST)
    failures = _unknown_named(settings, path, {"primary", "fallback"})
    failures += _unknown_named(load_config(listed, environ={}), listed, set(GOOD))
    service = build_service(settings, f"sqlite:///{where}/builtin.sqlite3")
    if service.fakes is None:
        service.close()
        return [*failures, "a file naming no providers: the service ran without the fakes"]
    service.fakes.script("service_unavailable", "hang", api="openai")
    try:
        service.worker.start_background()
        job = settled(
            service.engine, _create(service, "failover", BUILTIN_BOUND), bound=BUILTIN_BOUND
        )
        failures += _sent(service, _create(service, "hung-at-close", 60.0, chain=("primary",)))
    finally:
        started = time.monotonic()
        service.close()
        took = time.monotonic() - started
        service.fakes.releaser.release()  # the hung call ends now: wait for its thread
        service.scheduler.close(drain=BUILTIN_BOUND)
    if took > CLOSE_BOUND:
        failures.append(f"closing the service took {took:.1f} s under a hanging call")
    won = [a.provider for a in job.attempts if a.id == job.completed_by]
    if job.status.value != "succeeded" or won != ["fallback"]:
        states = ", ".join(f"{a.provider} {a.state.value}" for a in job.attempts) or "none"
        failures.append(
            f"a file naming no providers: a job whose built-in primary answered 503 ended "
            f"{job.status.value} (attempts: {states}); expected won by the built-in fallback"
        )
    return failures


CLOSE_BOUND = 10.0  # seconds: the worker's round in progress (up to 5 s), never a call


def _create(
    service: Any, key: str, timeout: float, chain: tuple[str, ...] = ("primary", "fallback")
) -> int:
    from harness.core.models import Intent, Policy

    policy = Policy(same_provider_retries=0, attempt_timeout=timeout)
    intent = Intent(operation="summarise", input={"text": key}, providers=chain, policy=policy)
    return int(service.engine.create_job("served", key, intent).job.id)


def _sent(service: Any, job_id: int) -> list[str]:
    """Nothing, once the job's call has been sent (its attempt `running`)."""
    from harness.checks.served_calls import POLL_EVERY

    until = time.monotonic() + BUILTIN_BOUND
    while not any(a.state.value == "running" for a in service.engine.get_job(job_id).attempts):
        if time.monotonic() > until:
            return [f"the built-in primary was not sent a call within {BUILTIN_BOUND:g} s"]
        time.sleep(POLL_EVERY)
    return []


def _unknown_named(settings: Any, path: Path, known: set[str]) -> list[str]:
    """A command asked for a provider the deployment has not (`--provider nope`) is
    refused with an error naming the file, the name asked and each provider it knows."""
    from harness.errors import ConfigError
    from harness.runtime.service import build_configured_provider

    try:
        build_configured_provider(settings, "nope")
    except ConfigError as exc:
        missing = [w for w in (str(path), "'nope'", *sorted(known)) if w not in str(exc)]
        if missing:
            return [f"provider 'nope' asked of {path}: {exc} (it does not name {missing})"]
        return []
    return [f"provider 'nope' asked of {path}: built, though the file names no such provider"]
