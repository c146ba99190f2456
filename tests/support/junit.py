"""JUnit files judged by their owner's schema: Jenkins' own `junit-10.xsd` (vendored from
jenkinsci/xunit-plugin in tests/data), read back by junitparser with the same counts."""

from __future__ import annotations

from functools import cache
from pathlib import Path

import xmlschema
from junitparser import JUnitXml

XSD = Path(__file__).resolve().parent.parent / "data" / "junit-10.xsd"


@cache
def jenkins_schema() -> xmlschema.XMLSchema:
    return xmlschema.XMLSchema(XSD)


def valid_cases(path: Path) -> list[dict]:
    """Validate ``path`` with the Jenkins schema and junitparser; its testcases, each
    with its `suite`."""
    jenkins = jenkins_schema()
    jenkins.validate(path)
    document = jenkins.to_dict(path)
    parsed = JUnitXml.fromfile(str(path))
    suites = document["testsuite"]
    cases = [case for suite in suites for case in suite.get("testcase", [])]
    assert sum(1 for suite in parsed for _ in suite) == len(cases) == int(document["@tests"])
    assert sum(int(s["@failures"]) for s in suites) == int(document["@failures"])
    names = [(c["@classname"], c["@name"]) for c in cases]
    assert len(names) == len(set(names)), "testcase names repeat"
    return [dict(case, suite=suite) for suite in suites for case in suite.get("testcase", [])]


def worked(case: dict) -> bool:
    return "skipped" not in case
