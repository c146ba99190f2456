"""What an execution costs: a per-model price table, so the ledger's "billed" is money.

Prices are US dollars per million tokens, input and output apart, as the providers list
them. `DEFAULT_PRICES` covers the fakes' configured models (list prices of the real
models of the same names when this table was written); any other model name (``fake/…``,
a name a test made up) costs `FALLBACK_PRICE`. Give `FakeProviders(prices=...)` a table of
your own (`PriceTable.parse` reads one from JSON or YAML data): its entries are added to the
defaults or replace them, and its ``default`` entry replaces the fallback.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from fake_providers.errors import InvalidInput


@dataclass(frozen=True)
class Price:
    """Dollars per million input and output tokens for one model."""

    input_per_mtok: float
    output_per_mtok: float = 0.0

    def cost(self, input_tokens: int, output_tokens: int) -> float:
        return (input_tokens * self.input_per_mtok + output_tokens * self.output_per_mtok) / 1e6


DEFAULT_PRICES: Mapping[str, Price] = {
    "gpt-4o-mini": Price(0.15, 0.60),
    "gpt-4o": Price(2.50, 10.00),
    "gpt-4.1-mini": Price(0.40, 1.60),
    "text-embedding-3-small": Price(0.02),
    "text-embedding-3-large": Price(0.13),
    "claude-haiku-4-5": Price(1.00, 5.00),
    "claude-sonnet-4-5": Price(3.00, 15.00),
}
FALLBACK_PRICE = Price(1.00, 2.00)
"""What a model missing from the table costs (``default`` in a table overrides it)."""


class PriceTable:
    """Model name -> `Price`, with a fallback for every other name."""

    def __init__(
        self, prices: Mapping[str, Price] | None = None, *, fallback: Price = FALLBACK_PRICE
    ) -> None:
        self._prices = {**DEFAULT_PRICES, **(prices or {})}
        self.fallback = self._prices.pop("default", fallback)

    def price(self, model: str | None) -> Price:
        return self._prices.get(model or "", self.fallback)

    def cost(self, model: str | None, input_tokens: int, output_tokens: int) -> float:
        return self.price(model).cost(input_tokens, output_tokens)

    @classmethod
    def parse(cls, data: object) -> PriceTable:
        """A table from ``{model: {"input": $/Mtok, "output": $/Mtok}}`` (``default`` names
        the fallback); errors name the field."""
        if not isinstance(data, Mapping):
            raise InvalidInput("prices", "must be a mapping of model name to prices")
        prices = {}
        for model, spec in data.items():
            where = f"prices.{model}"
            if not isinstance(spec, Mapping) or not set(spec) <= {"input", "output"}:
                raise InvalidInput(where, "must be {input: $/Mtok, output: $/Mtok}")
            values = [spec.get("input", 0.0), spec.get("output", 0.0)]
            for key, value in zip(("input", "output"), values, strict=True):
                if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
                    raise InvalidInput(f"{where}.{key}", "must be a number >= 0")
            prices[str(model)] = Price(float(values[0]), float(values[1]))
        return cls(prices)

    def to_json(self) -> dict[str, dict[str, float]]:
        table = {**self._prices, "default": self.fallback}
        return {
            m: {"input": p.input_per_mtok, "output": p.output_per_mtok} for m, p in table.items()
        }
