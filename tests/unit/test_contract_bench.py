"""The offline benchmark runs (tiny sizes), so it cannot rot unnoticed."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench" / "contracts_offline.py"


def test_benchmark_prints_a_ratio(capsys: pytest.CaptureFixture[str]) -> None:
    spec = importlib.util.spec_from_file_location("contracts_offline_bench", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    ratio = module.bench("invoice-extraction", samples=6, rounds=1, faulty=0.5)
    assert ratio > 0
    assert "ratio" in capsys.readouterr().out
