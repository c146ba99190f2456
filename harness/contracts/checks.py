"""The checks of a verification: pure functions from a contract and responses to results.

Nothing here calls a provider, reads a file or the clock: the online verifier and the
offline one both hand their responses to :func:`evaluate`, which is why the same outputs
always give the same verdict, however they were obtained.

Checks, in report order (a check's name is what a failure is reported under):

``token_budget``  each sample's rendered prompt fits ``settings.token_budget`` as the
                  provider counts it (its counting endpoint, else a local tokenizer)
``finish_reason`` every response ended with ``stop`` (not ``length``: truncated)
``json``          every response is strict JSON (no NaN/Infinity, no prose, no fences)
``schema``        the parsed output matches the output schema (top-level extra keys
                  are left to the next check, so each failure is reported once)
``no_extra_keys`` no top-level key the output schema does not declare
``rule:<id>``     each business rule
``expected``      values a sample says the output must hold
``stability``     every repeat of a sample gave the same output (except ignored paths)

A check *fails* when any response (or sample) fails it, is *skipped* when nothing could
be evaluated (e.g. no response parsed, or ``repeats: 1``), and otherwise *passes*. A
verification passes when no check fails.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from harness.contracts.model import Contract, Sample
from harness.contracts.pointer import MISSING, format_pointer, get, json_equal, remove
from harness.contracts.rules import show

MAX_FAILURES_KEPT = 25
MAX_MESSAGES_PER_ITEM = 3
FINISH_OK = "stop"

Status = Literal["pass", "fail", "skip"]


@dataclass(frozen=True, kw_only=True)
class Response:
    """One output of one call: what the checks look at, and all a capture file keeps."""

    sample: str
    repeat: int
    text: str | None
    finish_reason: str | None
    model: str | None = None
    request_id: str | None = None


@dataclass(frozen=True, kw_only=True)
class PromptCount:
    """How many input tokens a sample's rendered prompt takes, and who counted."""

    sample: str
    tokens: int
    counter: str  # "provider" (its counting endpoint) or a local tokenizer's name


@dataclass(frozen=True, kw_only=True)
class CheckFailure:
    """One way one response (or sample) failed one check, as a report shows it.

    ``repeat`` is None when the check judges a sample as a whole (token budget,
    stability); ``message`` joins at most MAX_MESSAGES_PER_ITEM messages and says how
    many more there were."""

    sample: str | None
    repeat: int | None
    message: str

    def to_dict(self) -> dict[str, Any]:
        return {"sample": self.sample, "repeat": self.repeat, "message": self.message}


@dataclass(frozen=True, kw_only=True)
class CheckResult:
    """The outcome of one check over a whole verification, as verdicts store it.

    ``to_dict``/``from_dict`` round-trip the stored form; ``failures`` keeps the first
    MAX_FAILURES_KEPT, while ``failed`` counts them all. Only ``fail`` fails a verdict:
    a skipped check (nothing to evaluate) does not."""

    name: str
    status: Status
    evaluated: int  # responses (or samples) the check looked at
    failed: int  # how many of those failed
    detail: str
    failures: tuple[CheckFailure, ...] = ()  # the first MAX_FAILURES_KEPT

    @property
    def passed(self) -> bool:
        return self.status != "fail"

    def to_dict(self) -> dict[str, Any]:
        return {
            "passed": self.passed,
            "status": self.status,
            "evaluated": self.evaluated,
            "failed": self.failed,
            "detail": self.detail,
            "failures": [f.to_dict() for f in self.failures],
        }

    @classmethod
    def from_dict(cls, name: str, data: Mapping[str, Any]) -> CheckResult:
        return cls(
            name=name,
            status=data.get("status") or ("pass" if data.get("passed") else "fail"),
            evaluated=int(data.get("evaluated", 0)),
            failed=int(data.get("failed", 0)),
            detail=str(data.get("detail", "")),
            failures=tuple(
                CheckFailure(sample=f.get("sample"), repeat=f.get("repeat"), message=f["message"])
                for f in data.get("failures") or ()
            ),
        )


@dataclass
class _Tally:
    """Accumulates one check's outcome while responses are walked."""

    name: str
    unit: str = "responses"
    evaluated: int = 0
    failed: int = 0
    failures: list[CheckFailure] = field(default_factory=list)
    skip_reason: str = ""

    def ok(self) -> None:
        self.evaluated += 1

    def fail(self, sample: str | None, repeat: int | None, messages: Sequence[str]) -> None:
        self.evaluated += 1
        self.failed += 1
        if len(self.failures) < MAX_FAILURES_KEPT:
            shown = list(messages[:MAX_MESSAGES_PER_ITEM])
            if len(messages) > MAX_MESSAGES_PER_ITEM:
                shown.append(f"and {len(messages) - MAX_MESSAGES_PER_ITEM} more")
            self.failures.append(
                CheckFailure(sample=sample, repeat=repeat, message="; ".join(shown))
            )

    def result(self) -> CheckResult:
        if self.failed:
            status: Status = "fail"
            detail = f"{self.failed} of {self.evaluated} {self.unit} failed"
        elif self.evaluated == 0:
            status = "skip"
            detail = self.skip_reason or f"no {self.unit} to check"
        else:
            status = "pass"
            detail = f"{self.evaluated} {self.unit} passed"
        return CheckResult(
            name=self.name,
            status=status,
            evaluated=self.evaluated,
            failed=self.failed,
            detail=detail,
            failures=tuple(self.failures),
        )


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def parse_json(text: str | None) -> tuple[Any, str | None]:
    """``(value, None)`` for strict JSON, ``(MISSING, why)`` otherwise."""
    if text is None:
        return MISSING, "the response has no text"
    try:
        return json.loads(text, parse_constant=_reject_constant), None
    except json.JSONDecodeError as exc:
        return (
            MISSING,
            f"not JSON ({exc.msg} at line {exc.lineno} column {exc.colno}): {show(text)}",
        )
    except (ValueError, RecursionError) as exc:
        return MISSING, f"not JSON ({exc}): {show(text)}"


def _root_extra(error: Any) -> bool:
    return error.validator in ("additionalProperties", "unevaluatedProperties") and not list(
        error.absolute_path
    )


def schema_messages(contract: Contract, value: Any) -> list[str]:
    """Schema violations, except extra top-level keys when the `no_extra_keys` check
    reports those itself (it names each key); a schema error is never dropped unheard."""
    validator = contract.validator
    if validator.is_valid(value):
        return []
    out = []
    for error in validator.iter_errors(value):
        if not contract.allow_extra_keys and _root_extra(error):
            continue
        where = format_pointer(list(error.absolute_path)) or "/"
        out.append(f"{where}: {error.message}")
    return sorted(out)


def extra_keys(contract: Contract, value: Any) -> list[str]:
    """Top-level keys of ``value`` the output schema does not declare."""
    if not isinstance(value, dict):
        return []
    names, patterns = contract.declared_keys
    return [
        key for key in value if key not in names and not any(re.search(p, key) for p in patterns)
    ]


def first_difference(a: Any, b: Any, path: tuple[str | int, ...] = ()) -> tuple[str, Any, Any]:
    """Where two unequal JSON values first differ: ``(pointer, a's value, b's value)``."""
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(a.keys() | b.keys()):
            left, right = a.get(key, MISSING), b.get(key, MISSING)
            if left is MISSING or right is MISSING or not json_equal(left, right):
                if left is MISSING or right is MISSING:
                    return format_pointer([*path, key]), left, right
                return first_difference(left, right, (*path, key))
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for index, (left, right) in enumerate(zip(a, b, strict=True)):
            if not json_equal(left, right):
                return first_difference(left, right, (*path, index))
    return format_pointer(list(path)) or "/", a, b


def _shown(value: Any) -> str:
    return "(absent)" if value is MISSING else show(value)


def evaluate(
    contract: Contract,
    responses: Sequence[Response],
    prompts: Mapping[str, PromptCount],
) -> tuple[CheckResult, ...]:
    """Every check of ``contract`` over ``responses``, in report order.

    ``prompts`` has one count per sample. A sample over its token budget may have no
    responses (the verifier does not send a prompt that does not fit).
    """
    budget = _token_budget(contract, prompts)
    walk = _ResponseChecks(contract)
    for response in _in_contract_order(contract, responses):
        walk.check(response)
    return (budget.result(), *walk.results(), _stability(contract, walk.forms).result())


def _token_budget(contract: Contract, prompts: Mapping[str, PromptCount]) -> _Tally:
    budget = _Tally("token_budget", unit="samples")
    budget.skip_reason = "no prompt was counted"
    limit = contract.settings.token_budget
    for sample in contract.samples:
        count = prompts.get(sample.id)
        if count is None:
            continue
        if count.tokens > limit:
            budget.fail(
                sample.id,
                None,
                [
                    f"the prompt takes {count.tokens} tokens ({count.counter}),"
                    f" over the budget of {limit}"
                ],
            )
        else:
            budget.ok()
    return budget


def _in_contract_order(contract: Contract, responses: Sequence[Response]) -> list[Response]:
    """Report order follows the contract, whatever order the responses came in."""
    order = {sample.id: index for index, sample in enumerate(contract.samples)}
    unknown = [r.sample for r in responses if r.sample not in order]
    if unknown:
        raise ValueError(f"response for unknown sample {unknown[0]!r}")
    return sorted(responses, key=lambda r: (order[r.sample], r.repeat))


# A response's form for the stability check: ("json", value minus ignored paths) when it
# parsed, else ("text", its raw text), so two unparseable repeats still compare.
_Form = tuple[str, Any]


class _ResponseChecks:
    """The per-response checks, tallied while the responses are walked in report order."""

    def __init__(self, contract: Contract) -> None:
        self.contract = contract
        self.samples: dict[str, Sample] = {s.id: s for s in contract.samples}
        self.finish = _Tally("finish_reason")
        self.json = _Tally("json")
        self.schema = _Tally("schema")
        self.extras = _Tally("no_extra_keys")
        if contract.allow_extra_keys:
            self.extras.skip_reason = "the contract allows extra top-level keys"
        self.rules = [_Tally(rule.check_name) for rule in contract.rules]
        self.expected = _Tally("expected")
        self.expected.skip_reason = "no sample states expected values"
        self.forms: dict[str, list[tuple[int, _Form]]] = {}

    def results(self) -> tuple[CheckResult, ...]:
        return (
            self.finish.result(),
            self.json.result(),
            self.schema.result(),
            self.extras.result(),
            *(tally.result() for tally in self.rules),
            self.expected.result(),
        )

    def check(self, response: Response) -> None:
        where = (response.sample, response.repeat)
        self._finish_reason(response, where)
        value, why = parse_json(response.text)
        if why is not None:
            # Nothing below can judge unparsed text; only stability still compares it.
            self.json.fail(*where, [why])
            self._keep_form(response, ("text", response.text))
            return
        self.json.ok()
        _tally(self.schema, where, schema_messages(self.contract, value))
        if not self.contract.allow_extra_keys and isinstance(value, dict):
            found = extra_keys(self.contract, value)
            _tally(self.extras, where, [f"unexpected top-level key {key!r}" for key in found])
        sample = self.samples[response.sample]
        for rule, tally in zip(self.contract.rules, self.rules, strict=True):
            _tally(tally, where, rule.violations(value, sample.input))
        if sample.expected:
            _tally(self.expected, where, _unexpected_values(sample, value))
        form = value
        for pointer in self.contract.settings.stability_ignore:
            form = remove(form, pointer)
        self._keep_form(response, ("json", form))

    def _finish_reason(self, response: Response, where: tuple[str, int]) -> None:
        reason = response.finish_reason
        if reason == FINISH_OK:
            self.finish.ok()
        elif reason == "length":
            self.finish.fail(
                *where,
                [
                    "truncated: finish_reason is 'length'"
                    f" (max_output_tokens {self.contract.settings.max_output_tokens})"
                ],
            )
        elif reason is None:
            self.finish.fail(*where, ["the provider reported no finish reason"])
        else:
            self.finish.fail(*where, [f"finish_reason is {reason!r}, not 'stop'"])

    def _keep_form(self, response: Response, form: _Form) -> None:
        self.forms.setdefault(response.sample, []).append((response.repeat, form))


def _tally(tally: _Tally, where: tuple[str, int], messages: Sequence[str]) -> None:
    if messages:
        tally.fail(*where, messages)
    else:
        tally.ok()


def _unexpected_values(sample: Sample, value: Any) -> list[str]:
    wrong = []
    for pointer, want in sample.expected:
        got = get(value, pointer)
        if got is MISSING or not json_equal(got, want):
            wrong.append(f"{pointer.text} is {_shown(got)}, expected {show(want)}")
    return wrong


def _stability(
    contract: Contract, forms_by_sample: Mapping[str, list[tuple[int, _Form]]]
) -> _Tally:
    stability = _Tally("stability", unit="samples")
    if contract.settings.repeats < 2:
        stability.skip_reason = "repeats is 1: stability is not measured"
    else:
        stability.skip_reason = "no sample has two responses"
    for sample_id, forms in forms_by_sample.items():
        if len(forms) < 2:
            continue
        messages = _instability(sorted(forms, key=lambda item: item[0]))
        if messages:
            stability.fail(sample_id, None, messages)
        else:
            stability.ok()
    return stability


def _instability(forms: Sequence[tuple[int, _Form]]) -> list[str]:
    """How each later repeat differs from the first; empty when all agree."""
    base_repeat, base = forms[0]
    messages = []
    for repeat, form in forms[1:]:
        if _same_form(form, base):
            continue
        if form[0] == base[0] == "json":
            at, left, right = first_difference(base[1], form[1])
            messages.append(
                f"repeat {repeat} differs from repeat {base_repeat} at {at}:"
                f" {_shown(right)} vs {_shown(left)}"
            )
        else:
            messages.append(f"repeat {repeat} differs from repeat {base_repeat}")
    return messages


def _same_form(form: _Form, base: _Form) -> bool:
    if form[0] != base[0]:
        return False
    return json_equal(form[1], base[1]) if form[0] == "json" else form[1] == base[1]
