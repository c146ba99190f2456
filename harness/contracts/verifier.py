"""The verifier: run a contract's samples through a provider (or read captured outputs),
then hand everything to the pure checks.

Online, for each sample: render the prompt for the provider's kind, count its tokens
(the provider's counting endpoint, else the local tokenizer), and, if it fits the
budget, call the provider ``repeats`` times at the contract's temperature. A call that
does not execute (refused, rate limited, timed out...) aborts the run with
``VerificationAborted``: a provider that is down says nothing about the contract, so no
verdict is produced. Offline, the same responses come from a capture file.

Either way the result is a :class:`Verification`, and ``Verification.captures()`` turns
an online run into the capture file that verifies to the same checks offline.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from harness.contracts.captures import Captures, check_coverage
from harness.contracts.checks import CheckResult, PromptCount, Response, evaluate
from harness.contracts.model import Contract, Sample
from harness.contracts.template import PROVIDER_KINDS, RenderedPrompt
from harness.contracts.tokens import BaseTokenizer, get_tokenizer
from harness.errors import ContractError, HarnessError, VerificationAborted
from harness.providers.base import BaseProvider, CompletionRequest, Message, Outcome


@dataclass(frozen=True, kw_only=True)
class Verification:
    """Everything one verification found: the checks, and the evidence behind them.

    Online and offline runs of the same outputs give equal ``checks``; ``captures()``
    turns an online run into the file that reproduces it offline."""

    contract: Contract
    provider: str
    kind: str
    model: str | None
    prompts: tuple[PromptCount, ...]
    responses: tuple[Response, ...]
    checks: tuple[CheckResult, ...]
    offline: bool = False

    @property
    def passed(self) -> bool:
        return all(check.passed for check in self.checks)

    @property
    def failed_checks(self) -> tuple[str, ...]:
        return tuple(check.name for check in self.checks if not check.passed)

    @property
    def sample_count(self) -> int:
        return len(self.contract.samples)

    def checks_dict(self) -> dict[str, Any]:
        """The per-check results as stored in a verdict."""
        return {check.name: check.to_dict() for check in self.checks}

    def captures(self) -> Captures:
        return Captures(
            contract=self.contract.name,
            contract_hash=self.contract.hash,
            provider=self.provider,
            kind=self.kind,
            model=self.model,
            prompts=self.prompts,
            responses=self.responses,
        )


def sample_request(
    contract: Contract, prompt: RenderedPrompt, *, model: str | None = None
) -> CompletionRequest:
    """The request the verifier sends for one rendered sample: the engine's shape, the
    contract's settings."""
    return CompletionRequest(
        messages=(Message(role="user", content=prompt.user),),
        system=prompt.system or None,
        model=model,
        max_tokens=contract.settings.max_output_tokens,
        temperature=contract.settings.temperature,
        json_schema=request_schema(contract),
    )


build_request = sample_request
"""The old name of `sample_request` (it clashed with the worker's), kept while
tests/unit/test_contract_verifier.py still imports it."""


def request_schema(contract: Contract) -> dict[str, Any]:
    """The output schema as sent to the provider: strict about top-level keys unless the
    contract allows extras (structured-output modes require that)."""
    schema = dict(contract.output_schema)
    if not contract.allow_extra_keys and "additionalProperties" not in schema:
        schema["additionalProperties"] = False
    return schema


def _check_kind(kind: str) -> str:
    if kind not in PROVIDER_KINDS:
        raise ContractError(f"unknown provider kind {kind!r}; expected one of {PROVIDER_KINDS}")
    return kind


def count_prompt(
    contract: Contract,
    sample: Sample,
    *,
    kind: str,
    provider: BaseProvider | None,
    tokenizer: BaseTokenizer,
    model: str | None = None,
) -> PromptCount:
    """Tokens of one sample's rendered prompt: the provider's count if it has one."""
    prompt = contract.render(sample)
    if provider is not None:
        try:
            counted = provider.count_tokens(sample_request(contract, prompt, model=model))
        except HarnessError:
            raise
        except Exception as exc:  # an adapter bug must not pass for a verdict
            raise VerificationAborted(
                f"{provider.name}: counting tokens failed: {type(exc).__name__}: {exc}"
            ) from exc
        if counted is not None:
            return PromptCount(sample=sample.id, tokens=counted, counter="provider")
    return PromptCount(
        sample=sample.id, tokens=tokenizer.count(prompt, kind), counter=tokenizer.name
    )


def _describe(outcome: Outcome) -> str:
    parts = [outcome.kind.value, outcome.reason]
    if outcome.status_code is not None:
        parts.append(f"HTTP {outcome.status_code}")
    if outcome.error:
        parts.append(outcome.error)
    return ", ".join(parts)


def verify_online(
    contract: Contract,
    provider: BaseProvider,
    *,
    tokenizer: BaseTokenizer | None = None,
    model: str | None = None,
    timeout: float | None = None,
    on_response: Callable[[Response], None] | None = None,
) -> Verification:
    """Call ``provider`` for every sample x repeat and check the answers.

    Raises VerificationAborted when a call does not execute.
    """
    kind = _check_kind(provider.kind)
    tokenizer = tokenizer or get_tokenizer()
    timeout = timeout if timeout is not None else contract.settings.timeout_seconds
    prompts: list[PromptCount] = []
    responses: list[Response] = []
    for sample in contract.samples:
        count = count_prompt(
            contract, sample, kind=kind, provider=provider, tokenizer=tokenizer, model=model
        )
        prompts.append(count)
        if count.tokens > contract.settings.token_budget:
            continue  # never sent: the prompt does not fit
        request = sample_request(contract, contract.render(sample), model=model)
        for repeat in range(contract.settings.repeats):
            outcome = provider.complete(request, timeout=timeout)
            if not outcome.executed:
                raise VerificationAborted(
                    f"{provider.name}: sample {sample.id!r} repeat {repeat}: the call did not"
                    f" complete ({_describe(outcome)}); no verdict recorded",
                    provider=provider.name,
                    reason=outcome.reason,
                )
            response = Response(
                sample=sample.id,
                repeat=repeat,
                text=outcome.text,
                finish_reason=outcome.finish_reason,
                model=outcome.model,
                request_id=outcome.request_id,
            )
            responses.append(response)
            if on_response is not None:
                on_response(response)
    # The configured model first: it is what the gate compares a verdict against.
    found_model = model or getattr(provider, "model", None)
    found_model = found_model or next((r.model for r in responses if r.model), None)
    by_sample = {p.sample: p for p in prompts}
    return Verification(
        contract=contract,
        provider=provider.name,
        kind=kind,
        model=found_model,
        prompts=tuple(prompts),
        responses=tuple(responses),
        checks=evaluate(contract, responses, by_sample),
    )


def verify_offline(
    contract: Contract,
    captures: Captures,
    *,
    provider: str | None = None,
    kind: str | None = None,
    model: str | None = None,
    tokenizer: BaseTokenizer | None = None,
    file: str = "<captures>",
) -> Verification:
    """Check captured responses without calling a provider.

    Token counts come from the capture file where it recorded them (the provider's own
    count), else from the local tokenizer. The verdict names the model the capture came
    from; `model`, when given, must agree with it (it is used only when the capture
    does not say). Raises CaptureError when the file does not
    answer exactly this contract's samples and repeats.
    """
    provider = provider or captures.provider
    if not provider:
        raise ContractError(f"{file}: names no provider; say which provider produced it")
    if captures.provider is not None and captures.provider != provider:
        raise ContractError(
            f"{file}: captured from provider {captures.provider!r}, not {provider!r}"
        )
    kind = _check_kind(kind or captures.kind or "openai")
    tokenizer = tokenizer or get_tokenizer()
    recorded: Mapping[str, PromptCount] = {p.sample: p for p in captures.prompts}
    prompts = [
        recorded.get(sample.id)
        or count_prompt(contract, sample, kind=kind, provider=None, tokenizer=tokenizer)
        for sample in contract.samples
    ]
    by_sample = {p.sample: p for p in prompts}
    check_coverage(captures, contract, by_sample, file=file)
    order = {sample.id: index for index, sample in enumerate(contract.samples)}
    responses = sorted(captures.responses, key=lambda r: (order.get(r.sample, -1), r.repeat))
    # The verdict is for the model that produced these outputs, never for whatever the
    # provider is configured with today: the gate's model_changed check relies on it.
    captured = captures.model or next((r.model for r in responses if r.model), None)
    if model is not None and captured is not None and model != captured:
        raise ContractError(f"{file}: holds outputs of model {captured!r}, not {model!r}")
    found_model = captured or model
    return Verification(
        contract=contract,
        provider=provider,
        kind=kind,
        model=found_model,
        prompts=tuple(prompts),
        responses=tuple(responses),
        checks=evaluate(contract, responses, by_sample),
        offline=True,
    )
