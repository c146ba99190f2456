"""Errors the fake providers raise for bad input from the test or the control API.

    FakeProviderError            root of this package's errors
    └── InvalidInput             a script, behaviour or control request is malformed;
                                 names the offending field

These are never raised for a *provider* request: those get the real API's error body.
"""

from __future__ import annotations


class FakeProviderError(Exception):
    """Fake provider error."""


class InvalidInput(FakeProviderError):
    """Invalid input for the fake providers."""

    def __init__(self, field: str, message: str) -> None:
        self.field = field
        self.message = message
        super().__init__(f"{field}: {message}")

    def to_json(self) -> dict[str, object]:
        return {"error": {"type": "invalid_input", "field": self.field, "message": self.message}}
