"""docs/benchmarks.md stays a page: small, one section per bench script, and every
figure file under bench/results/ cited by the command that wrote it."""

from __future__ import annotations

import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LIMIT = 12 * 1024


def page_problems(page: str, scripts: list[str], results: dict[str, dict]) -> list[str]:
    """What is wrong with a benchmark page, given the bench scripts and the results files."""
    problems = []
    if len(page.encode()) > LIMIT:
        problems.append(f"the page is {len(page.encode())} bytes, over {LIMIT}")
    for script in scripts:
        if f"(`{script}`)" not in page:
            problems.append(f"no section names bench/{script}")
    for name, document in results.items():
        missing = {"bench", "command", "date", "machine", "rows"} - document.keys()
        if missing:
            problems.append(f"{name} lacks {sorted(missing)}")
        elif document["command"] not in page:
            problems.append(f"{name}: the page does not give its command {document['command']}")
    return problems


def repository() -> tuple[str, list[str], dict[str, dict]]:
    page = (ROOT / "docs" / "benchmarks.md").read_text(encoding="utf-8")
    scripts = sorted(p.name for p in (ROOT / "bench").glob("*.py") if not p.name.startswith("_"))
    results = {
        p.name: json.loads(p.read_text(encoding="utf-8"))
        for p in sorted((ROOT / "bench" / "results").glob("*.json"))
    }
    return page, scripts, results


def test_the_benchmark_page_is_complete_and_small() -> None:
    page, scripts, results = repository()
    assert scripts and results
    assert page_problems(page, scripts, results) == []


def test_the_judge_finds_a_page_that_grew_or_lost_a_script() -> None:
    page, scripts, results = repository()
    grown = page + "x" * LIMIT
    assert any("over" in p for p in page_problems(grown, scripts, results))
    cut = page.replace(f"(`{scripts[0]}`)", "")
    assert page_problems(cut, scripts, results) == [f"no section names bench/{scripts[0]}"]
    name, document = next(iter(results.items()))
    moved = {name: {**document, "command": "bench/elsewhere.py --json"}}
    assert page_problems(page, scripts, moved) == [
        f"{name}: the page does not give its command bench/elsewhere.py --json"
    ]
