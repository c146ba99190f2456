"""Alembic migrations, run programmatically (no alembic.ini needed)."""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

import sqlalchemy as sa
from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory

from harness.store.boundary import translate_errors

HERE = Path(__file__).parent


class Database(Protocol):
    """What a migration needs of a database: its SQLAlchemy engine."""

    engine: sa.Engine


def alembic_config(db: Database) -> Config:
    config = Config()
    config.set_main_option("script_location", str(HERE))
    config.attributes["database"] = db
    return config


def upgrade(db: Database, revision: str = "head") -> None:
    with translate_errors():
        command.upgrade(alembic_config(db), revision)


def current(db: Database) -> str | None:
    with translate_errors(), db.engine.connect() as conn:
        return MigrationContext.configure(conn).get_current_revision()


def head() -> str | None:
    return ScriptDirectory.from_config(alembic_config_for_scripts()).get_current_head()


def alembic_config_for_scripts() -> Config:
    config = Config()
    config.set_main_option("script_location", str(HERE))
    return config
