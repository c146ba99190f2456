"""A probe run: the fakes up, the gateway answering, every probe played N times and
judged into one scorecard, and the scorecard written wherever it was asked for.
"""

from __future__ import annotations

import json
import secrets
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import httpx

from harness.errors import GatewayUnreachable, ProbeError
from harness.probe.driver import OBSERVE, Driver, ProbeRun
from harness.probe.fakes import FakesLink
from harness.probe.files import load_probe
from harness.probe.html import render
from harness.probe.model import Probe
from harness.probe.profiles import Profile
from harness.probe.scorecard import Play, Scorecard, junit, markdown, score

DEFAULT_WAIT = 30.0


def load_probes(files: Sequence[Path], only: Sequence[str] = ()) -> list[Probe]:
    """The probes of `files`, those named in `only` when given (an unknown name is an
    error listing the known ones); two probes may not share a name."""
    probes = [load_probe(f) for f in files]
    names: dict[str, str] = {}
    for probe in probes:
        if probe.name in names:
            raise ProbeError(
                f"two probes are named {probe.name!r}: {names[probe.name]}, {probe.file}"
            )
        names[probe.name] = probe.file
    if only:
        unknown = [n for n in only if n not in names]
        if unknown:
            raise ProbeError(f"no probe named {unknown[0]!r}; known: {', '.join(sorted(names))}")
        probes = [p for p in probes if p.name in only]
    if not probes:
        raise ProbeError("no probes to run")
    return probes


def providers_of(probes: Sequence[Probe]) -> list[str]:
    """Every fake provider the probes name, `primary` and `fallback` first."""
    found = {"primary": None, "fallback": None}
    for probe in probes:
        found.update(dict.fromkeys(probe.providers))
    return list(found)


def wait_for_gateway(url: str, seconds: float) -> None:
    """Until the gateway answers any HTTP request (GatewayUnreachable after `seconds`)."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            httpx.get(url, timeout=2.0)
            return
        except httpx.HTTPError:
            if time.monotonic() >= deadline:
                raise GatewayUnreachable(
                    f"the gateway at {url} did not answer within {seconds:g} s"
                ) from None
            time.sleep(0.2)


def play_all(
    probes: Sequence[Probe],
    *,
    gateway: str,
    profile: Profile,
    fakes: FakesLink,
    repeat: int = 1,
    time_scale: float = 1.0,
    quiet_window: float | None = None,
    on_play: Callable[[Play], None] | None = None,
) -> Scorecard:
    driver = Driver(
        gateway=gateway,
        profile=profile,
        fakes=fakes,
        time_scale=time_scale,
        quiet_window=quiet_window,
        salt=secrets.token_hex(4),
    )
    plays = []

    def judged(run: ProbeRun) -> None:
        play = Play.of(run)
        plays.append(play)
        if on_play is not None:
            on_play(play)

    # A run is judged once the next has started: calls for its callers that land late
    # are added to it first (`Driver.collect_late`).
    pending: ProbeRun | None = None
    for probe in probes:
        for n in range(repeat):
            run = driver.play(probe, n)
            if pending is not None:
                judged(pending)
            pending = run
    if pending is not None:
        threading.Event().wait(OBSERVE)
        driver.collect_late()
        judged(pending)
    return score(gateway, profile.name, time_scale, plays)


def write_outputs(
    card: Scorecard,
    *,
    json_path: Path | None = None,
    junit_path: Path | None = None,
    html_path: Path | None = None,
    summary_paths: Sequence[Path] = (),
) -> None:
    if json_path is not None:
        json_path.write_text(json.dumps(card.to_json(), indent=2) + "\n", encoding="utf-8")
    if junit_path is not None:
        junit_path.write_text(junit(card), encoding="utf-8")
    if html_path is not None:
        html_path.write_text(render(card), encoding="utf-8")
    for path in summary_paths:
        with path.open("a", encoding="utf-8") as out:
            out.write(markdown(card))
