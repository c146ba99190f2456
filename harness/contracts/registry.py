"""The contract registry: every contract of a directory, by name.

The API and the gate find a job's contract here by name. Loading is all-or-nothing: one
malformed file, or two files claiming one name, fails the whole directory with every
problem listed, so a deployment never runs with half its contracts.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from harness.bundled import bundled_dir
from harness.contracts.loader import CONTRACT_SUFFIXES, load_contract
from harness.contracts.model import Contract
from harness.contracts.source import FileProblem, load_error
from harness.errors import ContractLoadError, UnknownContract

DEFAULT_CONTRACTS_DIR = "contracts"
CONTRACTS_DIR_ENV = "HARNESS_CONTRACTS_DIR"


class ContractRegistry(Mapping[str, Contract]):
    """Contracts by name; immutable once built."""

    def __init__(self, contracts: Iterable[Contract] = (), *, directory: str | None = None):
        self.directory = directory
        by_name: dict[str, Contract] = {}
        problems: list[FileProblem] = []
        for contract in contracts:
            if contract.name in by_name:
                first = by_name[contract.name].source or "another contract"
                problems.append(
                    FileProblem(
                        contract.source or "<contract>",
                        "name",
                        f"{contract.name!r} is already the name of {first}",
                    )
                )
                continue
            by_name[contract.name] = contract
        if problems:
            raise load_error(problems)
        self._contracts = dict(sorted(by_name.items()))

    @classmethod
    def from_directory(cls, directory: str | os.PathLike[str]) -> ContractRegistry:
        """Load every ``*.yaml``, ``*.yml`` and ``*.json`` file directly in ``directory``.

        Subdirectories (e.g. captured responses, schemas) are not read.
        """
        path = Path(directory)
        if not path.is_dir():
            raise load_error([FileProblem(str(path), "", "is not a directory of contract files")])
        contracts: list[Contract] = []
        problems: list[FileProblem] = []
        for file in sorted(path.iterdir()):
            if not file.is_file() or file.suffix.lower() not in CONTRACT_SUFFIXES:
                continue
            if file.name.startswith("."):
                continue
            try:
                contracts.append(load_contract(file))
            except ContractLoadError as exc:
                problems.extend(
                    getattr(exc, "problems", None) or [FileProblem(str(file), "", str(exc))]
                )
        if problems:
            raise load_error(problems)
        return cls(contracts, directory=str(path))

    def __getitem__(self, name: str) -> Contract:
        try:
            return self._contracts[name]
        except KeyError:
            known = ", ".join(self._contracts) or "none"
            where = f" in {self.directory}" if self.directory else ""
            raise UnknownContract(
                f"no contract named {name!r}{where} (known: {known})", contract=name
            ) from None

    def __iter__(self) -> Iterator[str]:
        return iter(self._contracts)

    def __len__(self) -> int:
        return len(self._contracts)

    def __repr__(self) -> str:
        return f"ContractRegistry({list(self._contracts)!r}, directory={self.directory!r})"


def load_registry(directory: str | os.PathLike[str] = DEFAULT_CONTRACTS_DIR) -> ContractRegistry:
    """The registry of ``directory`` (default ``./contracts``).

    The environment is read at the edge: the CLI maps ``HARNESS_CONTRACTS_DIR`` (the
    value of ``CONTRACTS_DIR_ENV``) to ``--contracts``; other drivers do the same.
    """
    return ContractRegistry.from_directory(directory)


@dataclass(frozen=True, kw_only=True)
class ContractsDirectory:
    """The contracts directory a command reads: ``path``, and whether it is the bundled
    example contracts standing in for an absent ``./contracts`` (``bundled``)."""

    path: Path
    bundled: bool

    @property
    def note(self) -> str | None:
        """What to tell the user once when the bundled contracts stand in, else None."""
        if not self.bundled:
            return None
        return f"note: no ./{DEFAULT_CONTRACTS_DIR}: the bundled contracts ({self.path})"


def choose_contracts_dir(directory: str | os.PathLike[str]) -> ContractsDirectory:
    """Which contracts directory? The one answer for every ``harness contracts`` command:
    ``directory`` itself, except that the default one (``./contracts``), when absent (a
    folder other than a clone, a pip-installed project), is the bundled example contracts.
    Any other directory is taken as given (loading it says when it does not exist)."""
    path = Path(directory)
    if path == Path(DEFAULT_CONTRACTS_DIR) and not path.is_dir():
        return ContractsDirectory(path=bundled_dir("contracts"), bundled=True)
    return ContractsDirectory(path=path, bundled=False)
