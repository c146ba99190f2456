"""API keys as values that never print: a repr, str or log line shows ``***``."""

from __future__ import annotations


class Secret:
    """Holds a credential; `reveal()` is the only way out, used when building a request."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def reveal(self) -> str:
        return self._value

    def redact(self, text: str) -> str:
        """`text` with every occurrence of the secret masked (for provider error echoes)."""
        return text.replace(self._value, "***") if self._value else text

    def __bool__(self) -> bool:
        return bool(self._value)

    def __repr__(self) -> str:
        return "Secret('***')"

    __str__ = __repr__

    def __reduce__(self) -> object:
        raise TypeError("a Secret is not serialisable")
