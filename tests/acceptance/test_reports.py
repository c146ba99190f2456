"""HTML reports (the JUnit half: test_junit.py, on Jenkins' junit-10.xsd):
`--html F` renders in headless Chromium to a screenshot that is not blank and shows the
timelines' colours (skipped, with the reason, where Debian's `chromium` is not
installed; CI installs it)."""

from __future__ import annotations

import html
import json
import re
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.cli.main import main
from tests.support.chromium import CHROMIUM, png_pixels

WON, FAILED = bytes.fromhex("2e7d32"), bytes.fromhex("c62828")  # harness/scenarios/html.py


@pytest.fixture(autouse=True)
def _check_database(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("HARNESS_DATABASE_URL", f"sqlite:///{tmp_path / 'check.sqlite3'}")
    monkeypatch.chdir(tmp_path)


@pytest.mark.skipif(
    CHROMIUM is None, reason="Debian's chromium is not installed (apt-get install chromium)"
)
def test_the_html_report_renders_in_headless_chromium(tmp_path) -> None:
    result = CliRunner().invoke(main, ["check", "--html", "r.html"])
    assert result.exit_code == 0, result.output
    shot = tmp_path / "r.png"
    command = [
        str(CHROMIUM),
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={tmp_path / 'profile'}",
        f"--screenshot={shot}",
        "--window-size=1200,900",
        (tmp_path / "r.html").as_uri(),
    ]
    subprocess.run(command, capture_output=True, timeout=120, check=True)
    assert shot.is_file() and shot.stat().st_size > 1000
    width, height, rows = png_pixels(shot.read_bytes())
    assert (width, height) == (1200, 900)
    pixels = [row[i : i + 3] for row in rows for i in range(0, len(row), 3)]
    colours = set(pixels)
    assert len(colours) > 50, f"a nearly blank screenshot: {len(colours)} colours"
    assert WON in colours and FAILED in colours  # the timelines' bars were drawn


# -- what a person sees: content, not only pixels --------------------------------------

VIEWPORT = (1200, 900)
PROBE = """
<script>
(() => {
  const seen = {};
  for (const selector of SELECTORS) {
    const element = document.querySelector(selector);
    if (!element) { seen[selector] = null; continue; }
    const rect = element.getBoundingClientRect(), style = getComputedStyle(element);
    seen[selector] = {
      top: rect.top, height: rect.height, width: rect.width,
      shown: style.display !== "none" && style.visibility !== "hidden" && +style.opacity > 0,
      text: element.innerText,
    };
  }
  const out = document.createElement("pre");
  out.id = "probe";
  out.textContent = JSON.stringify(seen);
  document.body.appendChild(out);
})();
</script>
"""


def chromium(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    command = [
        str(CHROMIUM),
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={tmp_path / 'profile'}",
        f"--window-size={VIEWPORT[0]},{VIEWPORT[1]}",
        *args,
    ]
    return subprocess.run(command, capture_output=True, text=True, timeout=120, check=True)


def rendered(tmp_path: Path, page: Path, selectors: list[str]) -> dict[str, dict | None]:
    """Each selector's first element as Chromium lays the page out: where it is, whether
    it is shown, its text. The page itself holds no script: a copy gets the probe."""
    probe = PROBE.replace("SELECTORS", json.dumps(selectors))
    copy = page.with_name(f"probed-{page.name}")
    copy.write_text(page.read_text().replace("</body>", probe + "</body>"))
    dom = chromium(tmp_path, "--dump-dom", "--virtual-time-budget=5000", copy.as_uri()).stdout
    found = re.search(r'<pre id="probe">(.*?)</pre>', dom, re.S)
    assert found, dom[-2000:]
    return json.loads(html.unescape(found.group(1)))


def visible(element: dict | None, *, above_the_fold: bool = False) -> bool:
    if element is None or not element["shown"] or element["height"] <= 0:
        return False
    return not above_the_fold or 0 <= element["top"] < VIEWPORT[1]


def screenshot_colours(tmp_path: Path, page: Path) -> set[bytes]:
    shot = tmp_path / f"{page.stem}.png"
    chromium(tmp_path, f"--screenshot={shot}", page.as_uri())
    width, height, rows = png_pixels(shot.read_bytes())
    assert (width, height) == VIEWPORT
    return {row[i : i + 3] for row in rows for i in range(0, len(row), 3)}


FAILURES_BACKGROUND = bytes.fromhex("fff8e1")  # #failures in harness/scenarios/html.py


@pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed")
def test_the_check_page_shows_the_failures_index_and_the_mutants_table(tmp_path) -> None:
    """Two scenarios against every mutant: most mutants escape them, so the page has
    failures to index. At the top, in the first screen, the verdict and the failures
    index (each a link to its row); below, the table of which scenario caught each."""
    args = ["check", "--mutants", "--only", "double-click", "--only", "fencing"]
    result = CliRunner().invoke(main, [*args, "--html", "r.html"])
    assert result.exit_code == 1, result.output
    page = tmp_path / "r.html"
    seen = rendered(
        tmp_path,
        page,
        ["#summary", "#failures", "#failures li a", "#mutants", "#mutant-ignore_idempotency_key",
         "#mutant-retry_after_ignored", "#legend", "svg.timeline"],
    )  # fmt: skip
    assert visible(seen["#summary"], above_the_fold=True), seen["#summary"]
    assert "FAILED" in seen["#summary"]["text"]
    assert visible(seen["#failures"], above_the_fold=True), seen["#failures"]
    index = seen["#failures"]["text"]
    assert "mutant retry_after_ignored: no scenario caught it" in index, index
    assert "ignore_idempotency_key" not in index  # caught: not a failure
    link = seen["#failures li a"]
    assert visible(link, above_the_fold=True) and link["text"].startswith("mutant ")
    assert visible(seen["#mutants"]), seen["#mutants"]
    caught = seen["#mutant-ignore_idempotency_key"]
    assert visible(caught) and "caught" in caught["text"] and "double-click" in caught["text"]
    missed = seen["#mutant-retry_after_ignored"]
    assert visible(missed) and "MISSED" in missed["text"] and "no scenario" in missed["text"]
    legend = seen["#legend"]["text"]
    for word in ("provider_skipped", "breaker_opened", "discarded_late_result", "conflict"):
        assert word in legend
    assert visible(seen["svg.timeline"])
    assert FAILURES_BACKGROUND in screenshot_colours(tmp_path, page)  # drawn on screen 1


@pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed")
def test_the_simulate_page_shows_each_violation_with_its_witness(tmp_path) -> None:
    args = ["simulate", "--jobs", "20", "--mutant", "ignore_idempotency_key"]
    result = CliRunner().invoke(main, [*args, "--db", f"sqlite:///{tmp_path / 's.sqlite3'}",
                                       "--html", "s.html"])  # fmt: skip
    assert result.exit_code == 1, result.output
    page = tmp_path / "s.html"
    seen = rendered(tmp_path, page, ["#summary", "#failures", ".violation", ".witness"])
    assert visible(seen["#failures"], above_the_fold=True)
    assert "I1" in seen["#failures"]["text"]
    assert visible(seen[".violation"]) and "one key answered two jobs" in seen[".violation"]["text"]
    witness = seen[".witness"]
    assert visible(witness), witness
    assert re.search(r"witness t=[\d.]+ client:\S+ ok create answer=created", witness["text"])
    assert "None" not in page.read_text() and "{'" not in page.read_text()  # no reprs


def test_a_failed_face_story_fails_the_page_and_is_indexed_first() -> None:
    """Face stories are judged beside the scenarios: one that failed turns the page's
    verdict red, is listed among the failures with a link to its row, and its problem is
    shown; a passing one is counted in the summary only."""
    from harness.scenarios.html import html_report

    def story(name: str, *, passed: bool) -> dict:
        failures = [] if passed else ["two jobs for one Idempotency-Key"]
        return {"face": "openai.chat", "story": name, "passed": passed, "seconds": 0.05,
                "failures": failures, "violations": []}  # fmt: skip

    green = html_report([], title="t", faces=[story("sdk-retry", passed=True)])
    assert 'class="verdict passed"' in green and "1 passed, 0 failed" in green
    red = html_report(
        [], title="t", faces=[story("sdk-retry", passed=True), story("double-click", passed=False)]
    )
    assert 'class="verdict failed"' in red and "1 passed, 1 failed" in red
    index = red[red.index('<nav id="failures">') : red.index("</nav>")]
    assert "Failures (1)" in index and 'href="#face-openai-chat-double-click"' in index
    assert "two jobs for one Idempotency-Key" in index
    assert 'id="face-openai-chat-double-click"' in red
