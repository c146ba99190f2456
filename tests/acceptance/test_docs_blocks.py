"""Docs that run: every console and Python block of README.md and docs/*.md is run here,
or marked in the page as illustrative, with its reason, on the line before it
(`<!-- illustrative: WHY -->`). Every `harness` command line of every console block,
illustrative or not, must still parse (its command and options exist); the blocks run
here must work as the page shows them: the exit code, and the output where the page
prints one (`...` stands for any text)."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.cli.main import main

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(
    r"(?:^<!-- illustrative: (?P<why>[^\n]+?) -->\n)?"
    r"^```(?P<lang>console|python)\n(?P<body>.*?)^```",
    re.M | re.S,
)


@dataclass(frozen=True)
class Block:
    page: str
    line: int
    lang: str
    body: str
    why: str | None

    @property
    def first(self) -> str:
        return self.body.splitlines()[0]

    def __str__(self) -> str:
        return f"{self.page}:{self.line}"


def _blocks() -> list[Block]:
    found = []
    for path in PAGES:
        text = path.read_text(encoding="utf-8")
        for m in FENCE.finditer(text):
            line = text[: m.start("lang")].count("\n") + 1
            name = str(path.relative_to(ROOT))
            found.append(Block(name, line, m["lang"], m["body"], m["why"]))
    return found


BLOCKS = _blocks()


def _block(page: str, first: str) -> Block:
    (found,) = [b for b in BLOCKS if b.page == page and b.first.startswith(first)]
    return found


PROVIDER_EXAMPLES = (
    "from openai import OpenAI",
    "from fake_providers import FakeServer",
    "import httpx",
    "from fake_providers import FakeProviders, FakeServer",
    "fakes.script(Behaviour(",
    'fakes.script("server_error"',
)
"""docs/providers.md's blocks, run one after another in one namespace, in the page's order."""

RUN = {
    ("README.md", "from harness import AllowAllGate"),  # test_the_engine_example_runs
    ("README.md", "from harness import Intent"),  # test_the_plugin_example_is_a_passing_test
    ("docs/contracts.md", "harness contracts list"),  # test_the_contract_commands_run
    ("docs/contracts.md", "$ mkdir e && cd e"),  # test_validate_in_an_empty_folder_...
    ("docs/contracts.md", "$ harness contracts verify"),  # test_a_failed_verdict_fails_...
    *(("docs/providers.md", first) for first in PROVIDER_EXAMPLES),
}
"""Each block run here, as (page, the start of its first line)."""


def _run_here(block: Block) -> bool:
    return any(page == block.page and block.first.startswith(first) for page, first in RUN)


def test_every_block_is_run_or_marked_illustrative_with_a_reason() -> None:
    unaccounted = [str(b) for b in BLOCKS if b.why is None and not _run_here(b)]
    assert not unaccounted, f"run these blocks here, or mark them illustrative: {unaccounted}"
    both = [str(b) for b in BLOCKS if b.why is not None and _run_here(b)]
    assert not both, both
    for page, first in RUN:  # every entry names one block that is there
        _block(page, first)
    assert sum(1 for b in BLOCKS if b.why is None) == len(RUN)


def _commands(block: Block) -> list[list[str]]:
    """The `harness` command lines of a console block: after a `$ ` prompt when the block
    has prompts (the rest is output), continuations joined, comments, `&` and
    environment assignments dropped, `;`/`&&`/`|` split; a synopsis (`[--option]`) is not
    a command."""
    lines = block.body.replace("\\\n", " ").splitlines()
    if any(line.startswith("$ ") for line in lines):
        lines = [line[2:] for line in lines if line.startswith("$ ")]
    found = []
    for line in lines:
        words = shlex.split(line, comments=True)
        command: list[str] = []
        for word in [*words, ";"]:
            if word in (";", "&&", "|", "&", "||"):
                while command and re.match(r"^[A-Z_]+=", command[0]):
                    command.pop(0)
                synopsis = any(w.startswith("[") or "|" in w for w in command)
                if command[:1] == ["harness"] and not synopsis:
                    found.append(command[1:])
                command = []
            else:
                command.append(word.rstrip(";"))
    return found


CONSOLE = [b for b in BLOCKS if b.lang == "console"]


@pytest.mark.parametrize("block", CONSOLE, ids=str)
def test_every_harness_command_in_the_docs_parses(block) -> None:
    """Unknown commands and options are refused while parsing, before `--help` is
    answered: a renamed option in a page fails here, without running anything."""
    for command in _commands(block):
        result = CliRunner().invoke(main, [*command, "--help"])
        assert result.exit_code == 0, (str(block), shlex.join(command), result.output)


def _harness(tmp_path: Path, command: str) -> subprocess.CompletedProcess[str]:
    """One command line of a page, run in `tmp_path` as the page's reader runs it."""
    env_db = f"sqlite:///{tmp_path / 'docs.sqlite3'}"
    bin_dir = Path(sys.executable).parent
    return subprocess.run(
        command,
        shell=True,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        env={
            "PATH": f"{bin_dir}:/usr/bin:/bin",
            "HARNESS_DATABASE_URL": env_db,
            "HOME": str(tmp_path),
        },
    )


def _matches(shown: list[str], printed: list[str]) -> bool:
    """The page's lines against the printed ones, `...` standing for any text."""
    patterns = [re.escape(line).replace(re.escape("..."), ".*") for line in shown]
    return len(patterns) == len(printed) and all(
        re.fullmatch(p, line) for p, line in zip(patterns, printed, strict=True)
    )


def _shown(block: Block) -> list[str]:
    """A console block's output lines (those without a prompt)."""
    return [line for line in block.body.splitlines() if not line.startswith("$ ")]


def test_validate_in_an_empty_folder_prints_the_page(tmp_path) -> None:
    block = _block("docs/contracts.md", "$ mkdir e && cd e")
    (command,) = [line[2:] for line in block.body.splitlines() if line.startswith("$ ")]
    done = _harness(tmp_path, command)
    assert done.returncode == 0, done.stderr
    printed = (done.stderr + done.stdout).splitlines()
    assert _matches(_shown(block), printed), (printed, _shown(block))


def test_a_failed_verdict_fails_the_gate_as_shown(tmp_path) -> None:
    block = _block("docs/contracts.md", "$ harness contracts verify")
    outputs = []
    for line in block.body.splitlines():
        if line.startswith("$ "):
            outputs.append(_harness(tmp_path, line[2:]))
    verify, gate = outputs
    assert verify.returncode == 1, verify.stdout + verify.stderr  # the rules broken
    assert _matches(_shown(block), gate.stdout.splitlines()), (gate.stdout, _shown(block))


def test_the_contract_commands_run(tmp_path) -> None:
    """Each line in order (verify's capture feeds the offline verify); a refusal or a
    failed verdict may exit 1, nothing may exit 2 (usage) or crash."""
    block = _block("docs/contracts.md", "harness contracts list")
    (tmp_path / "reports").mkdir()
    for line in block.body.splitlines():
        done = _harness(tmp_path, line)
        assert done.returncode in (0, 1), (line, done.stdout, done.stderr)
        assert "Traceback" not in done.stderr, (line, done.stderr)
    assert (tmp_path / "fallback.json").is_file() and (tmp_path / "verdicts.json").is_file()
    assert (tmp_path / "reports" / "gate.xml").is_file()


def test_the_engine_example_runs(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    namespace: dict = {}
    exec(_block("README.md", "from harness import AllowAllGate").body, namespace)
    job = namespace["engine"].get_job(namespace["job"].id)
    assert job.status.value == "succeeded" and job.result == {"summary": "..."}
    assert [a.state.value for a in job.attempts] == ["failed", "succeeded"]  # resolved, won


def test_the_plugin_example_is_a_passing_test(tmp_path) -> None:
    (tmp_path / "test_doc.py").write_text(_block("README.md", "from harness import Intent").body)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_doc.py"],
        cwd=tmp_path, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0 and "1 passed" in done.stdout, done.stdout + done.stderr


def test_the_python_examples_run(tmp_path, monkeypatch) -> None:
    """docs/providers.md's blocks in the page's order, in one namespace as a reader's
    interpreter would hold them; the fragments that use `fakes` and `Behaviour` get them."""
    from fake_providers import Behaviour, FakeProviders

    monkeypatch.chdir(tmp_path)
    namespace: dict = {"fakes": FakeProviders(), "Behaviour": Behaviour}
    for first in PROVIDER_EXAMPLES:
        exec(_block("docs/providers.md", first).body, namespace)
    assert namespace["client"] is not None and len(namespace["fakes"].ledger.entries()) >= 1
