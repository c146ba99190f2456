"""Black-box probes: judge a gateway this project did not write from what its providers
saw. The fakes stand behind the gateway as its providers, the driver calls the gateway as
a client would, and the judge reads the fakes' ledger and the client's answers.

    model.py      the checked, typed form of a probe file; verdicts
    files.py      YAML + the shipped JSON Schemas (probes, profiles); file:line and field
    profiles.py   how to call a gateway: openai-chat, openai-responses, anthropic-messages, http
    fakes.py      the fake providers behind it, over their control API
    ledger.py     the fakes' ledger parsed once into typed executions (a bad one refused)
    driver.py     one probe played in real time: requests, together, retry, abandon, waits
    evidence.py   a run's ledger by intent, the text each execution sent, witnesses
    judgement.py  one property's verdict and witness; the shape of a property
    caller.py     the caller's side: answered, left waiting, gave up, failover, back on primary
    promises.py   what a client sees promised: key binding, 202 and replay, SDK retries
    judge.py      the registry of named properties (the rest of them here), and `judge`
    scorecard.py  verdicts per probe and repeat: terminal table, JSON, JUnit, Markdown
    html.py       the scorecard as HTML with a timeline per probe
    run.py        fakes, gateway, every probe N times, outputs
"""

from harness.probe.driver import ClientRecord, Driver, ProbeRun
from harness.probe.files import load_probe, parse_probe, probe_files
from harness.probe.judge import PROPERTIES, Judgement, judge
from harness.probe.model import Probe, Verdict
from harness.probe.profiles import Profile, load_profile
from harness.probe.run import play_all
from harness.probe.scorecard import Play, Scorecard, score

__all__ = [
    "PROPERTIES",
    "ClientRecord",
    "Driver",
    "Judgement",
    "Play",
    "Probe",
    "ProbeRun",
    "Profile",
    "Scorecard",
    "Verdict",
    "judge",
    "load_probe",
    "load_profile",
    "parse_probe",
    "play_all",
    "probe_files",
    "score",
]
