"""Reading probe files (and gateway profile files): YAML, checked against the shipped JSON
Schema, then against the rules a schema cannot state (behaviours the fakes accept, a
retry of an intent sent before, time running forwards). Every error names the file, the
line and the field, as the scenario loader's do: the two formats share that code.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from fake_providers import Behaviour, InvalidInput
from harness.bundled import bundled_dir
from harness.errors import ProbeFileError
from harness.formats import yaml_text
from harness.probe.model import (
    PROBE_SUFFIX,
    STEPS,
    Bound,
    Check,
    Expect,
    KeyMode,
    Probe,
    ProviderScript,
    Request,
    Step,
)
from harness.scenarios.places import YamlLines, explain, field_name

Where = tuple[Any, ...]
Fail = Callable[[Where, str], ProbeFileError]


@cache
def schema(name: str) -> dict[str, Any]:
    """A JSON Schema shipped with the probe package (`probe` or `profile`)."""
    text = resources.files("harness.probe").joinpath(f"{name}.schema.json").read_text()
    return json.loads(text)


@cache
def _validator(name: str) -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(schema(name))


def read_yaml(path: str | Path, schema_name: str) -> tuple[Any, Fail]:
    """A YAML file's data, checked against the named schema, and a `fail(where,
    message)` that builds an error naming file:line and field for later rules."""
    file = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ProbeFileError(
            exc.strerror or str(exc), file=file, line=None, field="(file)"
        ) from None
    return parse_yaml(text, file, schema_name)


def parse_yaml(text: str, file: str, schema_name: str) -> tuple[Any, Fail]:
    try:
        data, node = yaml_text.parse(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        problem = getattr(exc, "problem", None) or str(exc)
        raise ProbeFileError(f"not YAML: {problem}", file=file, line=line, field="(yaml)") from None
    lines = YamlLines(node)

    def fail(where: Where, message: str) -> ProbeFileError:
        return ProbeFileError(message, file=file, line=lines.line(where), field=field_name(where))

    if not isinstance(data, dict):
        raise fail((), "the file is a mapping")
    errors = sorted(
        _validator(schema_name).iter_errors(data),
        key=lambda e: (lines.line(e.absolute_path) or 0, list(e.absolute_path)),
    )
    if errors:
        found = explain(errors[0], set()) or [(tuple(errors[0].absolute_path), errors[0].message)]
        raise fail(*found[0])
    return data, fail


def load_probe(path: str | Path) -> Probe:
    """Read and check one probe file (ProbeFileError names file:line and field)."""
    data, fail = read_yaml(path, "probe")
    return _build(data, str(path), fail)


def parse_probe(text: str, *, file: str = "<string>") -> Probe:
    data, fail = parse_yaml(text, file, "probe")
    return _build(data, file, fail)


def _build(data: dict[str, Any], file: str, fail: Fail) -> Probe:
    providers = {}
    for name, spec in (data.get("providers") or {"primary": {}, "fallback": {}}).items():
        spec = spec or {}
        for i, raw in enumerate(spec.get("script", ())):
            _behaviour(raw, ("providers", name, "script", i), fail)
        if spec.get("then") is not None:
            _behaviour(spec["then"], ("providers", name, "then"), fail)
        providers[name] = ProviderScript(
            script=tuple(spec.get("script", ())), then=spec.get("then")
        )
    steps = tuple(_steps(data["steps"], fail))
    checks = tuple(_checks(data.get("judge", ()), providers, fail))
    return Probe(
        name=data["name"],
        summary=data["summary"],
        file=file,
        family=data.get("family", "faults"),
        providers=providers,
        steps=steps,
        checks=checks,
        unobservable=tuple(data.get("unobservable", ())),
        seed=data.get("seed", 0),
        quiet_window=data.get("quiet_window"),
        answer_within=Bound(**data.get("answer_within", {})),
        expect=Expect(data.get("expect", Expect.ANSWER)),
    )


def _behaviour(raw: Any, where: Where, fail: Fail) -> None:
    try:
        Behaviour.parse(raw)
    except InvalidInput as exc:
        raise fail(where, str(exc)) from None


def _steps(raw_steps: list[dict[str, Any]], fail: Fail) -> Iterator[Step]:
    intents: set[str] = set()
    last_at = 0.0
    for i, raw in enumerate(raw_steps):
        where: Where = ("steps", i)
        actions = [k for k in raw if k in STEPS]
        if len(actions) != 1:
            raise fail(where, f"a step has exactly one action ({', '.join(STEPS)})")
        action = actions[0]
        at = raw.get("at")
        if at is not None:
            if at < last_at:
                raise fail((*where, "at"), f"time runs forwards: {at:g} is before {last_at:g}")
            last_at = at
        request = _request(action, raw[action] or {}, i, intents, (*where, action), fail)
        if request is not None:
            intents.add(request.intent)
        seconds = float(raw[action]) if action == "advance" else 0.0
        yield Step(index=i, line=None, action=action, request=request, seconds=seconds, at=at)


def _request(
    action: str, args: Any, index: int, intents: set[str], where: Where, fail: Fail
) -> Request | None:
    if action == "advance":
        return None
    if action == "retry":
        if args["intent"] not in intents:
            raise fail((*where, "intent"), f"intent {args['intent']!r} is not requested before")
        return Request(
            intent=args["intent"],
            stream=args.get("stream", False),
            timeout=args.get("timeout"),
            change_body=args.get("change_body", False),
            sdk_retry=args.get("sdk_retry"),
        )
    intent = args.get("intent", f"i{index}")
    if intent in intents:
        raise fail((*where, "intent"), f"intent {intent!r} is already sent; use `retry`")
    if action == "together":
        return Request(
            intent=intent,
            stream=args.get("stream", False),
            timeout=args.get("timeout"),
            key=KeyMode(args.get("key", KeyMode.SHARED)),
            count=args["count"],
        )
    abandon = args.get("abandon")
    if abandon is not None and "timeout" in args:
        raise fail((*where, "timeout"), "an abandoned request has no timeout; give one of them")
    return Request(
        intent=intent,
        stream=args.get("stream", False),
        timeout=abandon if abandon is not None else args.get("timeout"),
        key=KeyMode.SHARED if args.get("key", True) else KeyMode.NONE,
        abandon=abandon,
        prefer_wait=args.get("prefer_wait"),
    )


def _checks(raw: Iterable[Any], providers: dict[str, Any], fail: Fail) -> Iterator[Check]:
    for i, item in enumerate(raw):
        if isinstance(item, str):
            yield Check(name=item)
            continue
        name, params = next(iter(item.items()))
        provider = params.get("provider")
        if provider is not None and provider not in providers:
            raise fail(("judge", i, name, "provider"), f"no provider {provider!r} in `providers`")
        yield Check(name=name, params=dict(params))


def probe_files(paths: Iterable[str | Path] = (), *, bundled: bool = True) -> list[Path]:
    """The bundled catalogue and every probe file under `paths` (files or
    directories), in a stable order, each once."""
    found: dict[Path, None] = {}
    sources = [bundled_dir("probes")] if bundled else []  # the bundled catalogue
    for source in [*sources, *map(Path, paths)]:
        if source.is_dir():
            found.update(dict.fromkeys(sorted(source.rglob(f"*{PROBE_SUFFIX}"))))
        else:
            found[source] = None
    return list(found)
