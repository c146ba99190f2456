"""pytest fixtures for testing against the fake providers (the ``harness`` pytest11 plugin,
loaded wherever the project is installed).

``fake_providers``
    In-process fakes (`fake_providers.FakeProviders`) on virtual time, with their ledger:
    reach them with ``httpx.Client(transport=FakeTransport(fake_providers))`` (or pass
    that client to an SDK); hangs and latency cost no real time, and
    ``fake_providers.time.sleep(s)`` moves the clock (for ``window``/``flap`` faults).
``fake_provider_server``
    The fakes served over HTTP on a free loopback port (`fake_providers.FakeServer`,
    one per test run, reset for each test): ``.openai_base_url``,
    ``.anthropic_base_url``, ``.control_url``, ``.url`` and ``.fakes``.
``harness_clock``
    A `harness.VirtualClock` (moves only when told: ``.advance(seconds)``).
``harness_database``
    A migrated database: a throwaway SQLite file per test, or the one ``--scenario-db
    URL`` names (PostgreSQL too; runs there keep to owners of their own).
``harness_engine``
    The real engine on ``harness_database`` and ``harness_clock``, with the allow-all
    gate: ``create_job``, ``start_attempt``, ``complete_attempt``, ``get_job``, ...

At teardown both release hung requests and check, as pytest-httpx does, that every
scripted behaviour was requested: a script nobody consumed means the test never did what
it meant to, and the test errors at teardown naming the scripts. Opt out per test with
``@pytest.mark.fake_providers(assert_all_used=False)``, or for a whole suite with the ini
option ``fake_providers_assert_all_used = false``. The same marker takes
``time="real"`` for in-process fakes on the wall clock.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:  # the fakes and the engine load only when a test asks for them
    from fake_providers import FakeProviders, FakeServer
    from harness.core.clock import VirtualClock
    from harness.engine import Engine
    from harness.store.database import Database

pytest_plugins = ["harness.scenarios.pytest_items"]  # *.scenario.yaml files as tests

MARKER = "fake_providers"
INI_ASSERT_ALL_USED = "fake_providers_assert_all_used"


@dataclass(frozen=True, kw_only=True)
class FakeOptions:
    """What ``@pytest.mark.fake_providers(...)`` may set."""

    assert_all_used: bool = True
    time: str = "virtual"  # in-process fixture only: "virtual" | "real"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addini(
        INI_ASSERT_ALL_USED,
        "fail a test at teardown when a behaviour it scripted on the fake providers was "
        "never requested (default: true)",
        type="bool",
        default=True,
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{MARKER}(assert_all_used=True, time='virtual'): options for the fake_providers "
        "and fake_provider_server fixtures",
    )


def _options(request: pytest.FixtureRequest) -> FakeOptions:
    marker = request.node.get_closest_marker(MARKER)
    given: dict[str, Any] = dict(marker.kwargs) if marker else {}
    given.setdefault("assert_all_used", request.config.getini(INI_ASSERT_ALL_USED))
    try:
        options = FakeOptions(**given)
    except TypeError as exc:
        raise pytest.UsageError(f"@pytest.mark.{MARKER}: {exc}") from None
    if options.time not in ("virtual", "real"):
        raise pytest.UsageError(f"@pytest.mark.{MARKER}: time must be 'virtual' or 'real'")
    return options


def _check_used(fakes: FakeProviders, options: FakeOptions) -> None:
    if not options.assert_all_used:
        return
    pending = [script.to_json() for script in fakes.scripts.pending()]
    if pending:
        pytest.fail(
            "scripted fake-provider behaviours were never requested (opt out with "
            f"@pytest.mark.{MARKER}(assert_all_used=False)): {pending}",
            pytrace=False,
        )


@pytest.fixture
def fake_providers(request: pytest.FixtureRequest) -> Iterator[FakeProviders]:
    """In-process fake providers with their ledger, on virtual time unless the marker
    says ``time="real"``."""
    from fake_providers import FakeProviders, RealTime, VirtualTime

    options = _options(request)
    fakes = FakeProviders(time=VirtualTime() if options.time == "virtual" else RealTime())
    yield fakes
    fakes.release()
    _check_used(fakes, options)


@pytest.fixture(scope="session")
def fake_provider_server_shared() -> Iterator[FakeServer]:
    """The one fake-provider server of the test run; tests take `fake_provider_server`."""
    from fake_providers import FakeServer

    with FakeServer() as server:
        yield server


@pytest.fixture
def fake_provider_server(
    request: pytest.FixtureRequest, fake_provider_server_shared: FakeServer
) -> Iterator[FakeServer]:
    """The fake providers on a loopback port, reset for this test: scripts, ledger and
    hangs start empty."""
    options = _options(request)
    server = fake_provider_server_shared
    server.fakes.reset()
    yield server
    server.fakes.release()
    try:
        _check_used(server.fakes, options)
    finally:
        server.fakes.reset()


@pytest.fixture
def harness_clock() -> VirtualClock:
    """A virtual clock for the engine and the worker: time moves only when told."""
    from harness.core.clock import VirtualClock

    return VirtualClock()


@pytest.fixture
def harness_database(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Database]:
    """A migrated database: the one ``--scenario-db`` names, else a throwaway SQLite."""
    from harness.store.database import Database

    url = request.config.getoption("--scenario-db", default=None)
    if url is None:
        url = f"sqlite:///{tmp_path_factory.mktemp('harness-db') / 'harness.sqlite3'}"
    database = Database(url)
    database.upgrade()
    yield database
    database.dispose()


@pytest.fixture
def harness_engine(harness_database: Database, harness_clock: VirtualClock) -> Engine:
    """The real engine on `harness_database` and `harness_clock` (allow-all gate)."""
    from harness.core.gate import AllowAllGate
    from harness.engine import Engine

    return Engine(harness_database, gate=AllowAllGate(), clock=harness_clock)
