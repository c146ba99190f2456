"""Output contracts: load them, verify providers against them, gate failover on verdicts.

    contract file --loader--> Contract --verifier--> Verification --store--> Verdict
                                                        (checks: pure)           |
    engine/API: VerdictGate.may_fail_over(contract=, provider=) <-- decide (pure)+

Modules: ``source`` (file text to data, with lines), ``loader`` (files, errors naming
file and field), ``registry`` (contracts by name), ``rules`` and ``checks`` (pure
checks), ``verifier`` (online and offline), ``captures`` (capture files), ``verdicts``
(store and export), ``gate`` (the decision and the gate), ``chains`` (failover chains of
the configuration), ``pointer`` and ``schemapath`` (JSON pointers into outputs and their
schema), ``template`` and ``tokens`` (prompts and their size), ``schema`` (the JSON
Schemas of our file formats), ``testing`` (an in-memory provider for tests). The
commands live in ``harness.cli.contracts``.
"""

from __future__ import annotations

import importlib
import typing

# Loaded on first use (PEP 562): importing one module of the package, as the commands
# do, need not load every other one (and the engine and store they import).
_FROM_MODULE = {
    "harness.contracts.captures": (
        "Captures",
        "parse_captures",
        "read_captures",
        "write_captures",
    ),
    "harness.contracts.chains": (
        "Chain",
        "Link",
        "check_chains",
        "load_chains",
        "parse_chains",
    ),
    "harness.contracts.checks": (
        "CheckFailure",
        "CheckResult",
        "PromptCount",
        "Response",
        "evaluate",
        "extra_keys",
        "first_difference",
        "parse_json",
    ),
    "harness.contracts.gate": (
        "DEFAULT_MAX_VERDICT_AGE",
        "GateCheck",
        "REASONS",
        "VerdictGate",
        "decide",
    ),
    "harness.contracts.loader": (
        "CONTRACT_SUFFIXES",
        "contract_hash",
        "load_contract",
        "parse_contract",
    ),
    "harness.contracts.model": (
        "Contract",
        "Sample",
        "Settings",
        "Variable",
    ),
    "harness.contracts.pointer": (
        "MISSING",
        "Pointer",
        "PointerSyntaxError",
        "format_pointer",
        "json_equal",
        "parse_pointer",
    ),
    "harness.contracts.registry": (
        "CONTRACTS_DIR_ENV",
        "ContractRegistry",
        "DEFAULT_CONTRACTS_DIR",
        "load_registry",
    ),
    "harness.contracts.rules": (
        "CompareRule",
        "Condition",
        "PathRule",
        "Rule",
        "SumRule",
    ),
    "harness.contracts.schema": (
        "CAPTURE_SCHEMA",
        "CONTRACT_SCHEMA",
        "GATE_REPORT_FORMAT",
        "GATE_REPORT_SCHEMA",
        "SCHEMAS",
        "VERDICT_EXPORT_SCHEMA",
    ),
    "harness.contracts.schemapath": (
        "PathNotDeclared",
        "declared_types",
        "top_level_keys",
    ),
    "harness.contracts.source": ("FileProblem",),
    "harness.contracts.template": (
        "PROVIDER_KINDS",
        "RenderedPrompt",
        "TemplateSyntaxError",
    ),
    "harness.contracts.testing": ("MemoryProvider",),
    "harness.contracts.tokens": (
        "ApproxTokenizer",
        "BaseTokenizer",
        "DEFAULT_TOKENIZER",
        "TOKENIZERS",
        "approx_text_tokens",
        "get_tokenizer",
    ),
    "harness.contracts.verdicts": (
        "export_verdicts",
        "list_verdicts",
        "record_verdict",
        "verdict_to_dict",
    ),
    "harness.contracts.verifier": (
        "Verification",
        "sample_request",
        "verify_offline",
        "verify_online",
    ),
    "harness.errors": (
        "CaptureError",
        "UnknownContract",
        "VerificationAborted",
    ),
}
_MODULE_OF = {name: module for module, names in _FROM_MODULE.items() for name in names}
__all__ = sorted(_MODULE_OF, key=lambda n: (not n.isupper(), not n[:1].isupper(), n))


def __getattr__(name: str) -> typing.Any:
    if name not in _MODULE_OF:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(_MODULE_OF[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
