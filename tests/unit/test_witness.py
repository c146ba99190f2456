"""Witnesses and violations as text a person reads: no Python reprs, one
line per history entry, and violations that say the same thing grouped with a count."""

from __future__ import annotations

from harness.scenarios.witness import describe_entry, finding_blocks, grouped, value_text


def test_values_read_as_written_never_as_python_reprs() -> None:
    assert [value_text(v) for v in (None, True, 2.0, 0.25, "a", 3)] == [
        "none", "yes", "2", "0.25", "a", "3",
    ]  # fmt: skip
    assert value_text({"created": 20}) == '{"created": 20}'
    assert value_text(["primary:failed"]) == '["primary:failed"]'


def test_each_kind_of_history_entry_is_one_readable_line() -> None:
    event = {"t": 15.0, "kind": "won", "job": "a", "attempt": "a#2", "actor": None,
             "detail": {"version": 1}}  # fmt: skip
    operation = {"t": 0.0, "i": 3, "process": "client:alice", "type": "ok", "op": "create",
                 "answer": "created", "client": 0, "job": "a", "key": None}  # fmt: skip
    execution = {"t": 0.5, "attempt": "a#1", "behaviour": "success", "provider_kind": "openai",
                 "billed": True, "status": 200}  # fmt: skip
    assert describe_entry(event) == "t=15 event won a#2 (version=1)"
    assert describe_entry(operation) == ("t=0 client:alice ok create answer=created client=0 job=a")
    assert describe_entry(execution) == (
        "t=0.5 execution openai for a#1 (success, billed=yes status=200)"
    )
    assert describe_entry({"t": None, "x": {"y": 1}}) == 't=? x={"y": 1}'


def _finding(job: str, other: str, episode: int = 0) -> dict:
    return {
        "invariant": "I1",
        "job": job,
        "message": f"one key answered two jobs ({job}, {other})",
        "witness": [{"t": 0.0, "process": "client:c1", "type": "ok", "op": "create",
                     "answer": "created", "job": job}],
        "episode": episode,
    }  # fmt: skip


def test_violations_that_say_the_same_thing_print_once_with_a_count() -> None:
    findings = [_finding("a", f"a~{n}") for n in range(2, 21)]
    findings += [_finding("j7", "j7~2", 1), _finding("j9", "j9~2", 2)]
    findings.append({"invariant": "I3", "job": "b", "message": "2 live attempts", "witness": []})
    [same, other] = grouped(findings)
    assert same.count == 21 and other.count == 1
    assert same.headline() == (
        "I1 jobs a, j7, j9: one key answered two jobs (a, a~2) (and 20 more like it)"
    )
    assert other.headline() == "I3 job b: 2 live attempts"
    assert sorted(set(same.episodes)) == [0, 1, 2]
    block = finding_blocks(findings)[0]
    assert block.splitlines()[1] == "    witness t=0 client:c1 ok create answer=created job=a"
