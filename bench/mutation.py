"""The kill rate of `harness check` alone (not the test suite) against an external
mutation tool's mutants of harness/core, harness/engine and harness/store/queries.

The mutants are cosmic-ray's (`pip install cosmic-ray`): every operator of its core set
at every position it applies to in those modules. Playing each one costs a whole
`harness check`, so a seeded random sample of `--sample N` is played (all: `--sample 0`),
each in a copy of the source tree (the working tree is never touched), by
`python -m harness check --swarm 0` with that copy first on the path. A mutant is killed
when check exits non-zero or times out; one whose module no longer imports is counted
apart (the tool's "incompetent" mutants). Survivors are printed with their diff, to be
argued equivalent (or not) in BENCHMARKS.md.

    .venv/bin/python bench/mutation.py --sample 20 --seed 1 [--json out.json]
"""

from __future__ import annotations

import argparse
import difflib
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGETS = ("harness/core", "harness/engine", "harness/store/queries")
TIMEOUT = 600.0  # seconds one check may take before the mutant counts as killed (a hang)


def modules() -> list[Path]:
    found: list[Path] = []
    for target in TARGETS:
        path = ROOT / target
        found += sorted(path.rglob("*.py")) if path.is_dir() else [path]
    return [p for p in found if p.name != "__init__.py"]


def mutations() -> list[tuple[str, str, int]]:
    """(module, operator, occurrence) for every position each core operator applies to."""
    import cosmic_ray.plugins as plugins
    from cosmic_ray.ast import ast_nodes, get_ast_from_path

    found = []
    for path in modules():
        tree = get_ast_from_path(path)
        for name in plugins.operator_names():
            operator_class = plugins.get_operator(name)
            if operator_class.arguments():
                continue
            operator = operator_class()
            count = sum(len(list(operator.mutation_positions(n))) for n in ast_nodes(tree))
            found += [(str(path.relative_to(ROOT)), name, k) for k in range(count)]
    return found


def play(module: str, operator_name: str | None, occurrence: int) -> dict[str, object]:
    """One mutant played (`operator_name` None: the unmutated tree, the baseline)."""
    import cosmic_ray.plugins as plugins
    from cosmic_ray.mutating import mutate_code

    source = (ROOT / module).read_text(encoding="utf-8")
    record: dict[str, object] = {"module": module, "operator": operator_name, "at": occurrence}
    if operator_name is None:
        mutated = source
    else:
        mutated = mutate_code(source, plugins.get_operator(operator_name)(), occurrence)
        if mutated is None or mutated == source:
            return {**record, "result": "no-op"}
    record["diff"] = "".join(
        difflib.unified_diff(source.splitlines(True), mutated.splitlines(True), module, module, n=1)
    )
    with tempfile.TemporaryDirectory(prefix="mutant-") as tmp:
        copy = Path(tmp) / "src"
        shutil.copytree(ROOT / "harness", copy / "harness")
        shutil.copytree(ROOT / "fake_providers", copy / "fake_providers")
        shutil.copytree(ROOT / "scenarios", copy / "scenarios")
        shutil.copytree(ROOT / "contracts", copy / "contracts")
        (copy / module).write_text(mutated, encoding="utf-8")
        env = {**os.environ, "PYTHONPATH": str(copy)}
        url = f"sqlite:///{tmp}/check.db"
        imports = subprocess.run(
            [sys.executable, "-c", "import " + module.removesuffix(".py").replace("/", ".")],
            cwd=copy,
            env=env,
            capture_output=True,
        )
        if imports.returncode != 0:
            return {**record, "result": "incompetent"}
        started = time.perf_counter()
        try:
            done = subprocess.run(
                [sys.executable, "-m", "harness", "check", "--swarm", "0", "--db", url],
                cwd=copy,
                env=env,
                capture_output=True,
                timeout=TIMEOUT,
            )
            killed = done.returncode != 0
        except subprocess.TimeoutExpired:
            killed = True
        seconds = round(time.perf_counter() - started, 1)
    return {**record, "result": "killed" if killed else "survived", "seconds": seconds}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sample", type=int, default=20, help="mutants to play (0: all)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    baseline = play(TARGETS[-1], None, 0)
    if baseline["result"] != "survived":
        sys.exit(f"harness check fails on the unmutated copy: {baseline}")
    print(f"baseline: harness check holds on the copy in {baseline['seconds']} s", flush=True)
    every = mutations()
    chosen = every if args.sample == 0 else random.Random(args.seed).sample(every, args.sample)
    print(f"{len(every)} mutants generated; playing {len(chosen)}", flush=True)
    played = []
    for module, operator, at in chosen:
        record = play(module, operator, at)
        played.append(record)
        print(f"{record['result']:<12} {module} {operator} #{at}", flush=True)
        if record["result"] == "survived":
            print(record["diff"], flush=True)
    counts = {r: sum(1 for p in played if p["result"] == r) for r in ("killed", "survived")}
    counts |= {r: sum(1 for p in played if p["result"] == r) for r in ("incompetent", "no-op")}
    judged = counts["killed"] + counts["survived"]
    rate = 100.0 * counts["killed"] / judged if judged else 0.0
    print(f"generated {len(every)}, played {len(chosen)}: {counts}; kill rate {rate:.1f}%")
    if args.json is not None:
        summary = {"generated": len(every), "counts": counts, "kill_rate": rate}
        args.json.write_text(json.dumps({**summary, "mutants": played}, indent=1) + "\n")


if __name__ == "__main__":
    main()
