"""Shrinking: a failing episode reduced to the smallest scenario that still fails the
same way (the same invariant broken), for a person to read and replay.

Greedy passes, repeated until none makes progress or the budget of replays runs out:
drop runs of steps (halves, quarters, ... down to single steps, the latest first), then
whole jobs (every step naming them), then provider script entries, then policy and
worker settings, then simplify what is left (no repeated clicks, default inputs, fewer
workers). Each candidate is played on the scenario runner; a candidate the format refuses counts as
"does not fail".
"""

from __future__ import annotations

import copy
import os
import re
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

Scenario = dict[str, Any]
Fails = Callable[[Scenario], bool]

DEFAULT_BUDGET = 600


@dataclass
class Shrunk:
    scenario: Scenario
    replays: int
    seconds: float
    steps_before: int
    steps_after: int


def shrink(scenario: Scenario, fails: Fails, *, budget: int = DEFAULT_BUDGET) -> Shrunk:
    """The smallest variant of `scenario` found for which `fails` still holds: each pass
    (biggest cuts first) is repeated while it makes progress, and the passes again while
    any of them did, within `budget` replays."""
    started = time.perf_counter()
    best = copy.deepcopy(scenario)
    replays = 0
    changed = True
    while changed and replays < budget:
        changed = False
        for cuts in PASSES:
            progress = True
            while progress and replays < budget:
                progress = False
                for candidate in cuts(best):
                    if replays >= budget:
                        break
                    replays += 1
                    if fails(candidate):
                        best, progress, changed = candidate, True, True
                        break  # this pass again, from the smaller scenario
    return Shrunk(
        best, replays, time.perf_counter() - started, len(scenario["steps"]), len(best["steps"])
    )


def _job_of(step: dict[str, Any]) -> str | None:
    for action, args in step.items():
        if action not in ("at", "note", "expect") and isinstance(args, dict):
            return args.get("job")
    return None


def _with_steps(scenario: Scenario, steps: list[dict[str, Any]]) -> Scenario:
    smaller = copy.deepcopy(scenario)
    smaller["steps"] = steps
    return smaller


def _chunks(count: int) -> Iterator[range]:
    """Ranges of `count` items to cut, latest first: halves, then quarters, ... then one
    at a time; never all of them."""
    seen: set[range] = set()
    chunk = count // 2
    while chunk >= 1:
        for start in reversed(range(0, count, chunk)):
            cut = range(start, min(start + chunk, count))
            if len(cut) < count and cut not in seen:
                seen.add(cut)
                yield cut
        chunk //= 2


def _without_jobs(scenario: Scenario) -> Iterator[Scenario]:
    jobs = list(dict.fromkeys(j for s in scenario["steps"] if (j := _job_of(s))))
    for cut in _chunks(len(jobs)):
        gone = {jobs[i] for i in cut}
        yield _with_steps(scenario, [s for s in scenario["steps"] if _job_of(s) not in gone])


def _without_steps(scenario: Scenario) -> Iterator[Scenario]:
    """Runs of steps, the latest first (what follows a failure rarely matters to it)."""
    steps = scenario["steps"]
    for cut in _chunks(len(steps)):
        yield _with_steps(scenario, steps[: cut.start] + steps[cut.stop :])


def _shorter_scripts(scenario: Scenario) -> Iterator[Scenario]:
    for name, provider in scenario.get("providers", {}).items():
        script = provider.get("script", [])
        cuts = [script[: len(script) // 2]] if len(script) > 1 else []
        cuts += [script[:i] + script[i + 1 :] for i in reversed(range(len(script)))]
        cuts += [
            [*script[:i], "success", *script[i + 1 :]]
            for i in range(len(script))
            if script[i] != "success"
        ]
        if provider.get("then") == "success":  # the default
            cuts.insert(0, script)
        for cut in cuts:
            smaller = copy.deepcopy(scenario)
            smaller["providers"][name]["script"] = cut
            if smaller["providers"][name].get("then") == "success":
                del smaller["providers"][name]["then"]
            if not cut and "then" not in smaller["providers"][name]:
                del smaller["providers"][name]
                if not smaller["providers"]:
                    del smaller["providers"]
            yield smaller


def _plainer_settings(scenario: Scenario) -> Iterator[Scenario]:
    if "gate" in scenario or "contract" in scenario:
        smaller = copy.deepcopy(scenario)
        smaller.pop("gate", None)
        smaller.pop("contract", None)
        yield smaller
    for section in ("policy", "worker"):
        for key in list(scenario.get(section, {})):
            smaller = copy.deepcopy(scenario)
            del smaller[section][key]
            if not smaller[section]:
                del smaller[section]
            yield smaller
    yield from _fewer_workers(scenario)


def _fewer_workers(scenario: Scenario) -> Iterator[Scenario]:
    """A worker no step names is dropped; with none named, the default worker alone."""
    used = {
        args["worker"]
        for step in scenario["steps"]
        for args in step.values()
        if isinstance(args, dict) and "worker" in args
    }
    if "workers" in scenario and not used:
        smaller = copy.deepcopy(scenario)
        del smaller["workers"]
        yield smaller
    workers = scenario.get("workers", [])
    for worker in workers if len(workers) > 1 else []:
        if worker not in used:
            smaller = copy.deepcopy(scenario)
            smaller["workers"] = [w for w in workers if w != worker]
            yield smaller


def _plainer_steps(scenario: Scenario) -> Iterator[Scenario]:
    first = next((s["at"] for s in scenario["steps"] if "at" in s), 0.0)
    if first > 0:  # everything earlier: the story starts at 0
        smaller = copy.deepcopy(scenario)
        for step in smaller["steps"]:
            if "at" in step:
                step["at"] = round(step["at"] - first, 2)
        yield smaller
    for i, step in enumerate(scenario["steps"]):
        for args in (v for v in step.values() if isinstance(v, dict)):
            for key in ("count", "together", "input", "policy", "reason", "start", "key", "owner"):
                if key in args:
                    smaller = copy.deepcopy(scenario)
                    target = next(v for v in smaller["steps"][i].values() if isinstance(v, dict))
                    del target[key]
                    if key == "count":
                        target.pop("together", None)
                    yield smaller
        if "at" in step and step["at"] != int(step["at"]):
            smaller = copy.deepcopy(scenario)
            smaller["steps"][i]["at"] = float(int(step["at"]))
            yield smaller


def write_scenario(
    scenario: Scenario, target: Path, *, seed: int, signature: str, mutant: str | None
) -> None:
    """Save a shrunk scenario as a file `harness scenarios run` replays: named for the
    file, its contract path relative to it, and a summary that says where it came from."""
    from harness.scenarios.loader import SCENARIO_SUFFIX, dump_scenario

    data = copy.deepcopy(scenario)
    stem = target.name.removesuffix(SCENARIO_SUFFIX).removesuffix(".yaml").lower()
    data["name"] = re.sub(r"[^a-z0-9_-]+", "-", stem).strip("-_")[:80] or "shrunk"
    against = f"mutant {mutant}" if mutant else "the engine"
    data["summary"] = (
        f"Shrunk by harness simulate from seed {seed} against {against}: breaks {signature}."
    )
    if "contract" in data:
        data["contract"]["file"] = os.path.relpath(
            data["contract"]["file"], target.resolve().parent
        )
    order: tuple[str, ...] = (
        "format",
        "name",
        "summary",
        "providers",
        "policy",
        "gate",
        "contract",
    )
    order += ("worker", "workers", "steps", "expect")
    ordered = {k: data[k] for k in order if k in data}
    ordered.update((k, v) for k, v in data.items() if k not in ordered)
    target.write_text(dump_scenario(ordered), encoding="utf-8")


PASSES: tuple[Callable[[Scenario], Iterator[Scenario]], ...] = (
    _without_steps,
    _without_jobs,
    _shorter_scripts,
    _plainer_settings,
    _plainer_steps,
)
"""The reductions, biggest cuts first. Steps go before jobs: cutting what follows the
failure keeps the order in which jobs meet the providers' scripts, where a cut job shifts
every later job's entry, so the first cuts mostly fail (measured on the 28 built-in
mutants: at 12 replays two episodes did not shrink at all with jobs first, none with
steps first; at 40, 135 vs 137 steps in all)."""
