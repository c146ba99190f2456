"""Benchmark: captured responses per second checked by the offline contract verifier,
against a bare compiled `jsonschema` validator on the same response texts.

Both sides get the same texts and parse them with `json.loads`; the bare side then only
asks a compiled Draft 2020-12 validator `is_valid`, while the verifier runs every check
of the contract (finish reason, strict JSON, schema with formats, extra keys, each
business rule, expected values, stability across repeats) and builds the report. The
figure that matters is the ratio, because these machines are shared and absolute
numbers wander. Each side is timed in N rounds, alternating, in the same process; the
figure is the median round, printed with the spread of the rounds (lowest-highest).

    python bench/contracts_offline.py [--samples 400] [--rounds 5] [--faulty 0.1] [--json [PATH]]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import yaml
from jsonschema import Draft202012Validator

from harness.contracts.captures import Captures
from harness.contracts.checks import Response
from harness.contracts.loader import parse_contract
from harness.contracts.model import Contract
from harness.contracts.verifier import verify_offline

ROWS: list[dict] = []  # one per contract benched, for --json

ROOT = Path(__file__).resolve().parents[1]
CONTRACTS = ROOT / "contracts"


def scaled_contract(name: str, samples: int) -> tuple[Contract, dict[str, dict]]:
    """The bundled contract with its samples replicated to `samples` samples, and the
    good output of each (from the bundled example capture)."""
    data = yaml.safe_load((CONTRACTS / f"{name}.yaml").read_text())
    captured = json.loads((CONTRACTS / "captures" / f"{name}.example.json").read_text())
    good = {r["sample"]: json.loads(r["text"]) for r in captured["responses"]}
    base = data["samples"]
    data["samples"] = []
    outputs = {}
    for index in range(samples):
        sample = dict(base[index % len(base)])
        outputs[f"s{index}"] = good[sample["id"]]
        sample["id"] = f"s{index}"
        data["samples"].append(sample)
    return parse_contract(yaml.safe_dump(data, sort_keys=False), file=f"{name}.yaml"), outputs


def fault(output: dict, rng: random.Random) -> tuple[str, str]:
    """A faulty answer of one of the kinds the fakes produce: (text, finish_reason)."""
    kind = rng.choice(["extra_key", "prose", "wrong_type", "truncated"])
    if kind == "extra_key":
        return json.dumps({**output, "reasoning": "because"}), "stop"
    if kind == "prose":
        return "Sure! Here is the answer you asked for.", "stop"
    if kind == "wrong_type":
        key = next(iter(output))
        return json.dumps({**output, key: 12345}), "stop"
    return json.dumps(output)[:20], "length"


def captures_for(
    contract: Contract, outputs: dict[str, dict], faulty: float, seed: int
) -> Captures:
    rng = random.Random(seed)
    responses = []
    for sample in contract.samples:
        for repeat in range(contract.settings.repeats):
            if rng.random() < faulty:
                text, finish = fault(outputs[sample.id], rng)
            else:
                text, finish = json.dumps(outputs[sample.id], ensure_ascii=False), "stop"
            responses.append(
                Response(sample=sample.id, repeat=repeat, text=text, finish_reason=finish)
            )
    return Captures(
        contract=contract.name,
        contract_hash=contract.hash,
        provider="bench",
        kind="openai",
        model="bench-1",
        prompts=(),
        responses=tuple(responses),
    )


def seconds(work: Callable[[], object]) -> float:
    start = time.perf_counter()
    work()
    return time.perf_counter() - start


def bench(name: str, samples: int, rounds: int, faulty: float) -> float:
    """The verifier's rate over the bare validator's (its row kept in ROWS)."""
    contract, outputs = scaled_contract(name, samples)
    captures = captures_for(contract, outputs, faulty, seed=7)
    texts = [r.text for r in captures.responses]
    bare = Draft202012Validator(dict(contract.output_schema))

    def verifier() -> object:
        return verify_offline(contract, captures)

    def baseline() -> object:
        results = []
        for text in texts:
            try:
                results.append(bare.is_valid(json.loads(text)))
            except ValueError:
                results.append(False)
        return results

    verifier()  # warm caches (compiled validator, regexes) on both sides
    baseline()
    count = len(texts)
    verifier_rates, bare_rates = [], []
    for _ in range(rounds):  # alternating, so a machine that gets busier slows both alike
        verifier_rates.append(count / seconds(verifier))
        bare_rates.append(count / seconds(baseline))
    verifier_rate = statistics.median(verifier_rates)
    bare_rate = statistics.median(bare_rates)
    ratio = verifier_rate / bare_rate

    def spread(rates: list[float]) -> str:
        return f"{min(rates):,.0f}-{max(rates):,.0f}"

    print(
        f"{name:<20} {count:>6} responses ({faulty:.0%} faulty, {len(contract.rules)} rules):"
        f" verifier {verifier_rate:>9,.0f}/s ({spread(verifier_rates)})"
        f"   bare jsonschema {bare_rate:>9,.0f}/s ({spread(bare_rates)})"
        f"   ratio {ratio:.2f}"
    )
    ROWS.append(
        {
            "bench": "contracts_offline",
            "contract": name,
            "responses": count,
            "faulty": faulty,
            "rules": len(contract.rules),
            "verifier_per_s": round(verifier_rate),
            "baseline": "bare compiled jsonschema validator",
            "baseline_per_s": round(bare_rate),
            "ratio": round(ratio, 3),
            "rounds_verifier": [round(x) for x in verifier_rates],
            "rounds_baseline": [round(x) for x in bare_rates],
        }
    )
    return ratio


def main() -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import _common as c

    results = c.results_path(sys.argv, "contracts_offline")
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=400, help="samples per contract")
    parser.add_argument("--rounds", type=int, default=5, help="best of this many runs")
    parser.add_argument("--faulty", type=float, default=0.1, help="share of faulty answers")
    args, _ = parser.parse_known_args()  # dev.py passes every bench the same arguments
    print("offline contract verifier vs bare compiled jsonschema validator (same texts)")
    ratios = [
        bench(name, args.samples, args.rounds, args.faulty)
        for name in ("ticket-triage", "invoice-extraction", "changelog-summary")
    ]
    mean = (ratios[0] * ratios[1] * ratios[2]) ** (1 / 3)
    print(f"ratio verifier/bare (geometric mean): {mean:.2f}")
    ROWS.append({"bench": "contracts_offline", "geometric_mean_ratio": round(mean, 3)})
    c.save_results(results, "contracts_offline", ROWS)


if __name__ == "__main__":
    main()
