"""The `harness` command line: one module per command group, options declared once."""

from harness.cli.main import main

__all__ = ["main"]
