"""Storage: tables, statements and transactions. All SQL of the harness lives here."""

from harness.store.database import DEFAULT_DATABASE_URL, Database

__all__ = ["DEFAULT_DATABASE_URL", "Database"]
