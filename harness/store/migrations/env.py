from __future__ import annotations

from alembic import context

from harness.store.tables import metadata

database = context.config.attributes["database"]

with database.engine.begin() as connection:
    context.configure(connection=connection, target_metadata=metadata, render_as_batch=True)
    context.run_migrations()
