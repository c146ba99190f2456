"""The suite's fixtures, one set for every kind of test (tests/support/).

unit/         pure core, contract rules, fake plans: no database, no network
integration/  store, engine, worker, API and adapters on SQLite and PostgreSQL
acceptance/   the CLI, in process and as a subprocess
fakes/        the fake providers' own tests, and the official SDKs against them
"""

pytest_plugins = ["tests.support.databases", "tests.support.contracts", "tests.support.fakes"]
