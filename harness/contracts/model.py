"""The loaded contract: frozen values, built only by the loader, never from unchecked data."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from jsonschema.protocols import Validator
from jsonschema.validators import validator_for

from harness.contracts.pointer import Pointer
from harness.contracts.rules import Rule
from harness.contracts.schemapath import top_level_keys
from harness.contracts.template import RenderedPrompt, render

DEFAULT_TEMPERATURE = 0.0
DEFAULT_REPEATS = 3
DEFAULT_MAX_OUTPUT_TOKENS = 1024
DEFAULT_TIMEOUT_SECONDS = 60.0


@dataclass(frozen=True, kw_only=True)
class Variable:
    """A placeholder of the prompt template that every sample must fill."""

    name: str
    description: str = ""
    type: str | None = None  # the JSON type sample inputs must have; None: any


@dataclass(frozen=True, kw_only=True)
class Sample:
    """One real input to verify with, and the values its output must hold."""

    id: str
    input: Mapping[str, Any]
    expected: tuple[tuple[Pointer, Any], ...] = ()  # (path, value) the output must hold
    description: str = ""


@dataclass(frozen=True, kw_only=True)
class Settings:
    """How a contract is verified: the prompt's token budget, the call parameters and how
    many times each sample is repeated to measure stability.
    """

    token_budget: int  # most input tokens the rendered prompt may take, per provider
    temperature: float = DEFAULT_TEMPERATURE
    repeats: int = DEFAULT_REPEATS  # calls per sample; >1 checks stability
    max_output_tokens: int = DEFAULT_MAX_OUTPUT_TOKENS
    timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS
    stability_ignore: tuple[Pointer, ...] = ()  # paths allowed to differ across repeats


@dataclass(frozen=True, kw_only=True, eq=False)
class Contract:
    """One output contract, as loaded from one file.

    ``hash`` is the SHA-256 of the file's text (line endings normalised): any change to
    the file, even a comment, gives a new hash and so invalidates every verdict.
    """

    name: str
    version: str
    description: str
    system: str
    user: str
    variables: tuple[Variable, ...]
    output_schema: Mapping[str, Any]
    allow_extra_keys: bool
    rules: tuple[Rule, ...]
    samples: tuple[Sample, ...]
    settings: Settings
    hash: str
    source: str | None = None  # the file it came from
    # The clause `failover: {content_filter: fail_over}`: a content filter's refusal may be
    # routed around (when the job's policy opts in too). Default: the refusal stands.
    fail_over_on_content_filter: bool = False

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Contract) and (self.name, self.hash) == (other.name, other.hash)

    def __hash__(self) -> int:
        return hash((self.name, self.hash))

    @property
    def short_hash(self) -> str:
        return self.hash[:12]

    def sample(self, sample_id: str) -> Sample:
        for sample in self.samples:
            if sample.id == sample_id:
                return sample
        raise KeyError(sample_id)

    def render(self, sample: Sample) -> RenderedPrompt:
        return RenderedPrompt(
            system=render(self.system, dict(sample.input)),
            user=render(self.user, dict(sample.input)),
        )

    @cached_property
    def validator(self) -> Validator:
        """The output schema, compiled once, with ``format`` asserted."""
        cls = validator_for(self.output_schema)
        return cls(self.output_schema, format_checker=cls.FORMAT_CHECKER)

    @cached_property
    def declared_keys(self) -> tuple[frozenset[str], tuple[str, ...]]:
        """Top-level property names and patterns the output schema declares."""
        return top_level_keys(dict(self.output_schema))

    @property
    def check_names(self) -> tuple[str, ...]:
        """Every check a verification of this contract reports, in report order."""
        names = ["token_budget", "finish_reason", "json", "schema", "no_extra_keys"]
        names.extend(rule.check_name for rule in self.rules)
        names.extend(["expected", "stability"])
        return tuple(names)
