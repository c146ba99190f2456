"""The house around the probe: small modules, no import circle between the simulator's
pool and its runs (type-checking imports included), and a probe layer that never imports
the engine's decision tables (import-linter checks that; this checks the circle too)."""

from __future__ import annotations

from pathlib import Path

import grimp

import harness.probe


def test_no_module_is_over_700_lines() -> None:
    """Every module of the product and of the fakes (the probe's were the first kept so)."""
    root = Path(harness.probe.__file__).parents[2]
    files = [*(root / "harness").rglob("*.py"), *(root / "fake_providers").rglob("*.py")]
    over = {
        str(p.relative_to(root)): n for p in files if (n := len(p.read_text().splitlines())) > 700
    }
    assert not over, over


def test_the_simulators_pool_and_run_import_each_other_no_longer() -> None:
    graph = grimp.build_graph("harness", exclude_type_checking_imports=False)
    assert graph.direct_import_exists(
        importer="harness.simulate.pool", imported="harness.simulate.run"
    )
    assert not graph.find_shortest_chain(
        importer="harness.simulate.run", imported="harness.simulate.pool"
    )


def test_the_probe_reaches_no_engine_adapter_or_decision_table() -> None:
    graph = grimp.build_graph("harness", "fake_providers", exclude_type_checking_imports=False)
    for forbidden in ("harness.engine", "harness.providers", "harness.core.failover"):
        chain = graph.find_shortest_chain(importer="harness.probe.judge", imported=forbidden)
        assert chain is None, chain


def test_the_registry_the_probe_schema_and_the_docs_name_the_same_properties() -> None:
    """`PROPERTIES` is the one place a property is named; the file format and the docs'
    table follow it, so a property cannot be added to one and forgotten in another."""
    import re

    from harness.probe.files import schema
    from harness.probe.judge import PROPERTIES

    check = schema("probe")["$defs"]["check"]["oneOf"]
    assert set(check[0]["enum"]) == set(PROPERTIES)
    assert set(check[1]["properties"]) == set(PROPERTIES)
    docs = Path("docs/probe.md").read_text()
    table = docs[docs.index("## The properties") : docs.index("## Reference targets")]
    documented = re.findall(r"^\| `([a-z_]+)` \|", table, re.M)
    assert set(documented) == set(PROPERTIES)
