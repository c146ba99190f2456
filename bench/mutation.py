"""The kill rate of `harness check` alone (not the test suite) against an external
mutation tool's mutants of harness/core, harness/engine and harness/store/queries (or the
rooms `--targets` names: harness/runtime, harness/providers, harness/api/faces ...),
reported per room.

The mutants are cosmic-ray's (`pip install cosmic-ray`): every operator of its core set
at every position it applies to in those modules. Playing each one costs a whole
`harness check`, so they are drawn in a seeded random order until `--sample N` have been
played and judged in each room (all: `--sample 0`), each in a copy of the source tree (the working
tree is never touched), by `python -m harness check` with that copy first on the path:
the bundled suite and check's short swarm (its default 3 seeds), the swarm's seeds fixed
(`--swarm-seed`; a user's check rotates them by date) so a draw replays. A mutant is
killed when check exits non-zero or times out; each kill says which part failed (the
suite's scenarios, the swarm, or both), so draws with `--swarm 0` (the suite alone) compare.
Counted apart, never played: a mutant that does not parse or whose module no longer
imports (the tool's "incompetent" mutants), and one that changes only an annotation
(never evaluated in these modules: equivalent by construction). Survivors are printed
with their diff, to be argued equivalent (or not); docs/benchmarks.md keeps the figures.

Run it from a clone, never from a tree being edited: every mutant copies the tree the
script sits in, and a file met mid-edit counts as a kill.

    git clone . /tmp/mb && cd /tmp/mb && python3 dev.py setup && .venv/bin/pip install cosmic-ray
    .venv/bin/python bench/mutation.py --sample 60 --seed 31 [--swarm 3] [--json [PATH]]
    .venv/bin/python bench/mutation.py --sample 10 \
        --targets harness/runtime,harness/providers,harness/api/faces

`--json` alone writes bench/results/mutation.json (the counts and every mutant played).
"""

from __future__ import annotations

import argparse
import ast
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
SWARM_SEED = 20261205  # the swarm's first seed in every draw (check's own rotates by date)


def modules(targets: tuple[str, ...] = TARGETS) -> list[Path]:
    found: list[Path] = []
    for target in targets:
        path = ROOT / target
        found += sorted(path.rglob("*.py")) if path.is_dir() else [path]
    return [p for p in found if p.name != "__init__.py"]


def mutations(target: str) -> list[tuple[str, str, int]]:
    """(module, operator, occurrence) for every position each core operator applies to."""
    import cosmic_ray.plugins as plugins
    from cosmic_ray.ast import ast_nodes, get_ast_from_path

    found = []
    for path in modules((target,)):
        tree = get_ast_from_path(path)
        for name in plugins.operator_names():
            operator_class = plugins.get_operator(name)
            if operator_class.arguments():
                continue
            operator = operator_class()
            count = sum(len(list(operator.mutation_positions(n))) for n in ast_nodes(tree))
            found += [(str(path.relative_to(ROOT)), name, k) for k in range(count)]
    return found


def _without_annotations(source: str) -> str | None:
    """The module's syntax tree with every annotation blanked (None: it does not parse).
    Under `from __future__ import annotations` (every target module) an annotation is
    never evaluated, so a mutant that differs only there is equivalent by construction:
    counted apart, never played."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    for node in ast.walk(tree):
        if isinstance(node, ast.arg):
            node.annotation = None
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            node.returns = None
        elif isinstance(node, ast.AnnAssign):
            node.annotation = ast.Constant(None)
    return ast.dump(tree)


def play(
    module: str,
    operator_name: str | None,
    occurrence: int,
    swarm: list[str],
    timeout: float = TIMEOUT,
) -> dict[str, object]:
    """One mutant played (`operator_name` None: the unmutated tree, the baseline)."""
    import cosmic_ray.plugins as plugins
    from cosmic_ray.mutating import mutate_code

    source = (ROOT / module).read_text(encoding="utf-8")
    record: dict[str, object] = {"module": module, "operator": operator_name, "at": occurrence}
    if operator_name is None:
        mutated = source
    else:
        try:
            mutated = mutate_code(source, plugins.get_operator(operator_name)(), occurrence)
        except Exception as exc:  # cosmic-ray could not make it (seen: ExceptionReplacer
            # on a dotted name raised AttributeError): no mutant, so none to judge
            return {**record, "result": "incompetent", "why": f"{type(exc).__name__}: {exc}"}
        if mutated is None or mutated == source:
            return {**record, "result": "no-op"}
        shape = _without_annotations(mutated)
        if shape is None:  # it does not even parse (`*` in a signature made `+` ...)
            return {**record, "result": "incompetent"}
        if shape == _without_annotations(source):
            return {**record, "result": "equivalent"}
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
                [sys.executable, "-m", "harness", "check", *swarm, "--db", url],
                cwd=copy,
                env=env,
                capture_output=True,
                text=True,
                timeout=timeout,
            )
            killed, by = done.returncode != 0, _failed_parts(done.stdout)
        except subprocess.TimeoutExpired:
            killed, by = True, "timeout"
        seconds = round(time.perf_counter() - started, 1)
    result = "killed" if killed else "survived"
    return {**record, "result": result, "seconds": seconds, **({"by": by} if killed else {})}


def _failed_parts(output: str) -> str:
    """Which part of check's output failed: its scenarios, its swarm, both, or neither
    (an exit without a FAIL line: a crash or a refused run)."""
    suite = any(line.startswith("FAIL") for line in output.splitlines())
    swarm = " FAILED (" in output and "swarm seed" in output
    return {(True, True): "both", (True, False): "suite", (False, True): "swarm"}.get(
        (suite, swarm), "exit"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sample", type=int, default=20, help="mutants to play a room (0: all)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--swarm", type=int, default=3, help="check's swarm seeds (0: none)")
    parser.add_argument("--swarm-seed", type=int, default=SWARM_SEED)
    parser.add_argument(
        "--timeout",
        type=float,
        default=TIMEOUT,
        help="seconds one check may take before its mutant counts as killed (a hang)",
    )
    parser.add_argument(
        "--targets",
        type=lambda text: tuple(t.strip().rstrip("/") for t in text.split(",") if t.strip()),
        default=TARGETS,
        help="rooms (folders or modules) to mutate, comma-separated; reported one by one",
    )
    parser.add_argument(
        "--json", type=Path, nargs="?", const=ROOT / "bench" / "results" / "mutation.json"
    )
    args = parser.parse_args()
    for target in args.targets:
        if not (ROOT / target).exists():
            parser.error(f"--targets: no {target} in {ROOT}")
    swarm = ["--swarm", str(args.swarm), "--seed", str(args.swarm_seed)]
    baseline = play(str(modules(args.targets)[0].relative_to(ROOT)), None, 0, swarm)
    if baseline["result"] != "survived":
        sys.exit(f"harness check fails on the unmutated copy: {baseline}")
    print(f"baseline: harness check holds on the copy in {baseline['seconds']} s", flush=True)
    rooms = {target: _draw(target, args, swarm) for target in args.targets}
    print("\nroom                        generated  killed  survived  apart  kill rate")
    for target, (generated, played) in rooms.items():
        counts, rate = _counts(played)
        apart = counts["equivalent"] + counts["incompetent"] + counts["no-op"]
        print(
            f"{target:<28}{generated:>9}{counts['killed']:>8}{counts['survived']:>10}"
            f"{apart:>7}{rate:>10.1f}%"
        )
    played = [p for _, room in rooms.values() for p in room]
    counts, rate = _counts(played)
    by = {b: sum(1 for p in played if p.get("by") == b) for b in ("suite", "swarm", "both")}
    generated = sum(g for g, _ in rooms.values())
    print(f"generated {generated}, drawn {len(played)}: {counts}; kill rate {rate:.1f}%")
    parts = f"the suite alone {by['suite']}, the swarm alone {by['swarm']}, both {by['both']}"
    print(f"killed by {parts}")
    if args.json is not None:
        summary = {"generated": generated, "counts": counts, "kill_rate": rate, "by": by}
        summary["rooms"] = {t: _counts(room)[0] for t, (_, room) in rooms.items()}
        summary["swarm"] = {"seeds": args.swarm, "first": args.swarm_seed}
        args.json.write_text(json.dumps({**summary, "mutants": played}, indent=1) + "\n")


def _draw(target: str, args: argparse.Namespace, swarm: list[str]) -> tuple[int, list[dict]]:
    """Play `args.sample` judged mutants of one room, in the seeded order."""
    every = mutations(target)
    order = list(every)
    random.Random(args.seed).shuffle(order)
    wanted = len(order) if args.sample == 0 else args.sample
    print(f"{target}: {len(every)} mutants generated; playing {wanted}", flush=True)
    played: list[dict] = []
    for module, operator, at in order:
        if sum(1 for p in played if p["result"] in ("killed", "survived")) >= wanted:
            break
        record = play(module, operator, at, swarm, args.timeout)
        played.append(record)
        by = f" (by {record['by']})" if "by" in record else ""
        print(f"{record['result']:<12} {module} {operator} #{at}{by}", flush=True)
        if record["result"] == "survived":
            print(record["diff"], flush=True)
    return len(every), played


def _counts(played: list[dict]) -> tuple[dict[str, int], float]:
    names = ("killed", "survived", "equivalent", "incompetent", "no-op")
    counts = {r: sum(1 for p in played if p["result"] == r) for r in names}
    judged = counts["killed"] + counts["survived"]
    return counts, (100.0 * counts["killed"] / judged if judged else 0.0)


if __name__ == "__main__":
    main()
