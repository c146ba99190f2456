"""The one shell of every HTML report (check, scenarios, simulate, probe): a complete,
self-contained page (no external resources) around a body the report writes."""

from __future__ import annotations

from html import escape


def page(title: str, css: str, body: str) -> str:
    """A page titled `title` (escaped here), styled by `css`, holding `body` as given."""
    return (
        "<!doctype html><html lang='en'><head><meta charset='utf-8'>"
        f"<title>{escape(title)}</title><style>{css}</style></head><body>"
        f"{body}</body></html>\n"
    )
