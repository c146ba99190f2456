"""Placeholder: the providers helper owns this file."""

import click


@click.group("fake-providers")
def fake_providers() -> None:
    """Fake OpenAI- and Anthropic-compatible providers."""
