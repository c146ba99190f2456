"""`harness simulate --html F` in headless Chromium: the failing seed comes before the
passing one, and the shrunk scenario's timeline is drawn on the first screen (skipped,
with the reason, where Debian's `chromium` is not installed; CI installs it)."""

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

VIEWPORT = (1200, 900)
CREATE_MARK = bytes.fromhex("1565c0")  # a create, and a running attempt: harness/scenarios/svg.py
MUTANT, FAILING_SEED = "retry_after_ignored", 1  # seed 0 holds (test_simulate.FINDING_SEED)

PROBE = """
<script>
(() => {
  const seen = {};
  for (const selector of SELECTORS) {
    const element = document.querySelector(selector);
    if (!element) { seen[selector] = null; continue; }
    const rect = element.getBoundingClientRect(), style = getComputedStyle(element);
    seen[selector] = {top: rect.top, height: rect.height, text: element.innerText,
                      shown: style.display !== "none" && style.visibility !== "hidden"};
  }
  const out = document.createElement("pre");
  out.id = "probe";
  out.textContent = JSON.stringify(seen);
  document.body.appendChild(out);
})();
</script>
"""


def chromium(directory: Path, *args: str) -> subprocess.CompletedProcess[str]:
    command = [
        str(CHROMIUM), "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
        "--no-first-run", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", f"--user-data-dir={directory / 'profile'}",
        f"--window-size={VIEWPORT[0]},{VIEWPORT[1]}", *args,
    ]  # fmt: skip
    return subprocess.run(command, capture_output=True, text=True, timeout=120, check=True)


def rendered(directory: Path, page: Path, selectors: list[str]) -> dict[str, dict | None]:
    """Each selector's first element as Chromium lays the page out (a copy carries the
    probe: the page itself holds no script)."""
    copy = page.with_name(f"probed-{page.name}")
    probe = PROBE.replace("SELECTORS", json.dumps(selectors))
    copy.write_text(page.read_text().replace("</body>", probe + "</body>"))
    dom = chromium(directory, "--dump-dom", "--virtual-time-budget=5000", copy.as_uri()).stdout
    found = re.search(r'<pre id="probe">(.*?)</pre>', dom, re.S)
    assert found, dom[-2000:]
    return json.loads(html.unescape(found.group(1)))


def first_screen_colours(directory: Path, page: Path) -> set[bytes]:
    shot = directory / f"{page.stem}.png"
    chromium(directory, f"--screenshot={shot}", page.as_uri())
    width, height, rows = png_pixels(shot.read_bytes())
    assert (width, height) == VIEWPORT
    return {row[i : i + 3] for row in rows for i in range(0, len(row), 3)}


@pytest.mark.skipif(
    CHROMIUM is None, reason="Debian's chromium is not installed (apt-get install chromium)"
)
def test_the_failing_seed_comes_first_with_its_shrunk_timeline_drawn(tmp_path: Path) -> None:
    page, shrunk = tmp_path / "sim.html", tmp_path / "found.scenario.yaml"
    args = [
        *("simulate", "--mutant", MUTANT, "--seed", "0", "--seeds", "2", "--jobs", "40"),
        *("--per-episode", "10", "--shrink-to", str(shrunk), "--shrink-budget", "2"),
        *("--db", f"sqlite:///{tmp_path / 'sim.sqlite3'}", "--html", str(page)),
    ]
    result = CliRunner().invoke(main, args, catch_exceptions=False)
    assert result.exit_code == 1, result.output
    assert f"failing seeds: [{FAILING_SEED}]" in result.output  # seed 0 held: it is on the page

    failing, passing = f"#seed-{FAILING_SEED}", "#seed-0"
    timeline = f"#shrunk-timeline-{FAILING_SEED} svg.timeline"
    seen = rendered(tmp_path, page, [failing, passing, timeline, f"{failing} .replay"])
    assert seen[failing] and seen[passing], seen
    assert seen[failing]["top"] < seen[passing]["top"], "the failing seed must come first"
    assert "FAILED" in seen[failing]["text"] and "passed" in seen[passing]["text"]
    drawn = seen[timeline]
    assert drawn and drawn["shown"] and drawn["height"] > 0, drawn
    assert 0 <= drawn["top"] < VIEWPORT[1], f"the timeline is below the first screen: {drawn}"
    assert f"harness scenarios run {shrunk}" in seen[f"{failing} .replay"]["text"]
    assert CREATE_MARK in first_screen_colours(tmp_path, page)  # its marks are on screen
