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

from harness.contracts.captures import (
    Captures,
    parse_captures,
    read_captures,
    write_captures,
)
from harness.contracts.chains import Chain, Link, check_chains, load_chains, parse_chains
from harness.contracts.checks import (
    CheckFailure,
    CheckResult,
    PromptCount,
    Response,
    evaluate,
    extra_keys,
    first_difference,
    parse_json,
)
from harness.contracts.gate import DEFAULT_MAX_VERDICT_AGE, REASONS, GateCheck, VerdictGate, decide
from harness.contracts.loader import CONTRACT_SUFFIXES, contract_hash, load_contract, parse_contract
from harness.contracts.model import Contract, Sample, Settings, Variable
from harness.contracts.pointer import (
    MISSING,
    Pointer,
    PointerSyntaxError,
    format_pointer,
    json_equal,
    parse_pointer,
)
from harness.contracts.registry import (
    CONTRACTS_DIR_ENV,
    DEFAULT_CONTRACTS_DIR,
    ContractRegistry,
    load_registry,
)
from harness.contracts.rules import CompareRule, Condition, PathRule, Rule, SumRule
from harness.contracts.schema import (
    CAPTURE_SCHEMA,
    CONTRACT_SCHEMA,
    GATE_REPORT_FORMAT,
    GATE_REPORT_SCHEMA,
    SCHEMAS,
    VERDICT_EXPORT_SCHEMA,
)
from harness.contracts.schemapath import PathNotDeclared, declared_types, top_level_keys
from harness.contracts.source import FileProblem
from harness.contracts.template import PROVIDER_KINDS, RenderedPrompt, TemplateSyntaxError
from harness.contracts.testing import MemoryProvider
from harness.contracts.tokens import (
    DEFAULT_TOKENIZER,
    TOKENIZERS,
    ApproxTokenizer,
    BaseTokenizer,
    approx_text_tokens,
    get_tokenizer,
)
from harness.contracts.verdicts import (
    export_verdicts,
    list_verdicts,
    record_verdict,
    verdict_to_dict,
)
from harness.contracts.verifier import (
    Verification,
    sample_request,
    verify_offline,
    verify_online,
)
from harness.errors import CaptureError, UnknownContract, VerificationAborted

__all__ = [
    "CAPTURE_SCHEMA",
    "CONTRACTS_DIR_ENV",
    "CONTRACT_SCHEMA",
    "CONTRACT_SUFFIXES",
    "DEFAULT_CONTRACTS_DIR",
    "DEFAULT_MAX_VERDICT_AGE",
    "DEFAULT_TOKENIZER",
    "GATE_REPORT_FORMAT",
    "GATE_REPORT_SCHEMA",
    "MISSING",
    "PROVIDER_KINDS",
    "REASONS",
    "SCHEMAS",
    "TOKENIZERS",
    "VERDICT_EXPORT_SCHEMA",
    "ApproxTokenizer",
    "BaseTokenizer",
    "CaptureError",
    "Captures",
    "Chain",
    "CheckFailure",
    "CheckResult",
    "CompareRule",
    "Condition",
    "Contract",
    "ContractRegistry",
    "FileProblem",
    "GateCheck",
    "Link",
    "MemoryProvider",
    "PathNotDeclared",
    "PathRule",
    "Pointer",
    "PointerSyntaxError",
    "PromptCount",
    "RenderedPrompt",
    "Response",
    "Rule",
    "Sample",
    "Settings",
    "SumRule",
    "TemplateSyntaxError",
    "UnknownContract",
    "Variable",
    "VerdictGate",
    "Verification",
    "VerificationAborted",
    "approx_text_tokens",
    "check_chains",
    "contract_hash",
    "decide",
    "declared_types",
    "evaluate",
    "export_verdicts",
    "extra_keys",
    "first_difference",
    "format_pointer",
    "get_tokenizer",
    "json_equal",
    "list_verdicts",
    "load_chains",
    "load_contract",
    "load_registry",
    "parse_captures",
    "parse_chains",
    "parse_contract",
    "parse_json",
    "parse_pointer",
    "read_captures",
    "record_verdict",
    "sample_request",
    "top_level_keys",
    "verdict_to_dict",
    "verify_offline",
    "verify_online",
    "write_captures",
]
