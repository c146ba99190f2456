"""Output contracts: load them, verify providers against them, gate failover on verdicts.

    contract file --loader--> Contract --verifier--> Verification --store--> Verdict
                                                        (checks: pure)           |
    engine/API: VerdictGate.may_fail_over(contract=, provider=) <-- decide (pure)+

Modules: ``source`` (file text to data, with lines), ``loader`` (files, errors naming
file and field), ``registry`` (contracts by name), ``rules`` and ``checks`` (pure
checks), ``verifier`` (online and offline), ``captures`` (capture files), ``verdicts``
(store and export), ``gate`` (the decision and the gate), ``chains`` (failover chains of
the configuration), ``cli``.
"""

from harness.contracts.captures import CaptureError, Captures, read_captures, write_captures
from harness.contracts.chains import Chain, Link, check_chains, load_chains, parse_chains
from harness.contracts.checks import CheckResult, Failure, PromptCount, Response, evaluate
from harness.contracts.gate import (
    DEFAULT_MAX_VERDICT_AGE,
    REASONS,
    GateCheck,
    VerdictGate,
    decide,
)
from harness.contracts.loader import contract_hash, load_contract, parse_contract
from harness.contracts.model import Contract, Sample, Settings, Variable
from harness.contracts.registry import (
    CONTRACTS_DIR_ENV,
    DEFAULT_CONTRACTS_DIR,
    ContractRegistry,
    UnknownContract,
    load_registry,
)
from harness.contracts.schema import (
    CAPTURE_SCHEMA,
    CONTRACT_SCHEMA,
    GATE_REPORT_SCHEMA,
    VERDICT_EXPORT_SCHEMA,
)
from harness.contracts.source import Problem
from harness.contracts.tokens import ApproxTokenizer, BaseTokenizer, get_tokenizer
from harness.contracts.verdicts import (
    export_verdicts,
    list_verdicts,
    record_verdict,
    verdict_to_dict,
)
from harness.contracts.verifier import (
    Verification,
    VerificationAborted,
    build_request,
    verify_offline,
    verify_online,
)

__all__ = [
    "CAPTURE_SCHEMA",
    "CONTRACTS_DIR_ENV",
    "CONTRACT_SCHEMA",
    "DEFAULT_CONTRACTS_DIR",
    "DEFAULT_MAX_VERDICT_AGE",
    "GATE_REPORT_SCHEMA",
    "REASONS",
    "VERDICT_EXPORT_SCHEMA",
    "ApproxTokenizer",
    "BaseTokenizer",
    "CaptureError",
    "Captures",
    "Chain",
    "CheckResult",
    "Contract",
    "ContractRegistry",
    "Failure",
    "GateCheck",
    "Link",
    "Problem",
    "PromptCount",
    "Response",
    "Sample",
    "Settings",
    "UnknownContract",
    "Variable",
    "VerdictGate",
    "Verification",
    "VerificationAborted",
    "build_request",
    "check_chains",
    "contract_hash",
    "decide",
    "evaluate",
    "export_verdicts",
    "get_tokenizer",
    "list_verdicts",
    "load_chains",
    "load_contract",
    "load_registry",
    "parse_chains",
    "parse_contract",
    "read_captures",
    "record_verdict",
    "verdict_to_dict",
    "verify_offline",
    "verify_online",
    "write_captures",
]
