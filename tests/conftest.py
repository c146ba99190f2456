"""The suite's fixtures, one set for every kind of test (tests/support/; tests/README.md).

unit/         pure core, contract rules, outcome tables: no database, no network (enforced)
integration/  store, engine, worker, API and adapters on SQLite and PostgreSQL
acceptance/   the CLI, in process and as a subprocess
fakes/        the fake providers' own tests, and the official SDKs against them
"""

pytest_plugins = [
    "tests.support.databases",
    "tests.support.contracts",
    "tests.support.fakes",
    "tests.support.load",
]
