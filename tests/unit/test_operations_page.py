"""Every metric the Grafana dashboard queries, and every label it selects on, is one the
scrape serves; every metric served and every action logged is listed on docs/operations.md."""

from __future__ import annotations

import json
import re
from pathlib import Path

from harness.observe.metrics import METRICS

ROOT = Path(__file__).resolve().parents[2]
DASHBOARD = ROOT / "contrib" / "grafana" / "failover-harness.json"
SUFFIXES = {"counter": ("_total",), "gauge": ("",), "histogram": ("_bucket", "_sum", "_count")}
SERVED = {
    name + suffix: set(labels) | ({"le"} if suffix == "_bucket" else set())
    for name, kind, _, labels in METRICS
    for suffix in SUFFIXES[kind]
}


def exprs() -> list[str]:
    panels = json.loads(DASHBOARD.read_text())["panels"]
    return [t["expr"] for p in panels for t in p["targets"]]


def test_the_dashboard_queries_only_served_metrics_and_labels() -> None:
    named = 0
    for expr in exprs():
        for metric in re.findall(r"\bharness_\w+", expr):
            assert metric in SERVED, f"{metric} in {expr!r} is not served"
            named += 1
        for selector in re.findall(r"harness_\w+\{([^}]*)\}", expr):
            for label in re.findall(r"(\w+)\s*[=!~]", selector):
                metric = re.search(r"(harness_\w+)\{" + re.escape(selector), expr)
                assert metric and label in SERVED[metric[1]], f"{label} in {expr!r}"
        for grouping in re.findall(r"by \(([^)]*)\)", expr):
            served = set().union(*(SERVED[m] for m in re.findall(r"\bharness_\w+", expr)))
            for label in (x.strip() for x in grouping.split(",")):
                assert label in served, f"by {label} in {expr!r}"
    assert named >= len(exprs())


def test_the_test_above_can_fail() -> None:
    assert "harness_attempts_unknown_total" not in SERVED  # a gauge has no _total
    assert "harness_attempts_total" in SERVED


def test_every_served_metric_is_documented() -> None:
    page = (ROOT / "docs" / "operations.md").read_text()
    for name, kind, _, labels in METRICS:
        shown = name + SUFFIXES[kind][0] if kind == "counter" else name
        rows = [line for line in page.splitlines() if line.startswith(f"| `{shown}` |")]
        assert len(rows) == 1, name
        assert f"| {kind} |" in rows[0], name
        for label in labels:
            assert f"`{label}`" in rows[0], (name, label)


def test_every_action_of_a_history_is_documented() -> None:
    from harness.core.states import EventKind

    page = (ROOT / "docs" / "operations.md").read_text()
    for kind in EventKind:
        assert f"`{kind.value}`" in page, kind
