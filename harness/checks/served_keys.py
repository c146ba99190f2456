"""The served story's judges of the canary key: where it must never go, whole or in part.

docs/providers.md: API keys appear in no log record, outcome or database row, and an echo
of one in a provider's text (the key shortened, ``sk-proj-****abcd``; a run of eight of
its characters) is masked as a whole word, ``***``.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any


def judge_key_kept(stage: Any, result: Any) -> None:
    """The canary key is in none of the database's files and none of the logs; and the
    run logged no error."""
    needle = stage.key.encode()
    folder = stage.database_file.parent
    for path in sorted(folder.glob(f"{stage.database_file.name}*")):
        if needle in path.read_bytes():
            result.failures.append(f"the canary key is in the database file {path.name}")
    if any(stage.key in line for line in stage.logs):
        result.failures.append("the canary key is in the logs")
    errors = [line for line in stage.logs if line.startswith(("ERROR", "CRITICAL"))]
    for line in errors[:3]:
        result.failures.append(f"the service logged an error: {line.splitlines()[0][:300]}")
    result.notes.append(f"{len(stage.logs)} log records, {len(errors)} errors")


def _echoes(key: str, text: str) -> list[str]:
    """The echoes of `key` in `text` that docs/providers.md says a user never meets: a run
    of eight of its characters past its vendor prefix (``sk-canary-``), or its last four
    shown beside a mask mark (``*``, ``...``, ``…``), the shape of a shortened key."""
    secret = key.removeprefix("sk-canary-")
    runs = {secret[i : i + 8] for i in range(len(secret) - 7)}
    found = sorted(run for run in runs if run in text)
    found += re.findall(rf"(?:\*|\.\.\.|…){re.escape(key[-4:])}", text)
    return found


def judge_key_echo(
    stage: Any, played: Any, entries: list[Any], result: Any, *, provider: str
) -> None:
    """The primary's 401 echoed the key shortened (its own last four beside stars); what
    the service stored, logged and served of that job carries the message with the echo
    masked as ``***`` and no echo of the key anywhere."""
    from harness.scenarios.history import error_message

    refused = [e for e in entries if e.provider == provider and e.status_code == 401]
    messages = [error_message(e.response) or "" for e in refused]
    if len(refused) != 1 or not _echoes(stage.key, messages[0]):
        result.failures.append(
            f"{len(refused)} 401s at {provider}, echoing {messages}: expected one whose "
            "message echoes the key shortened (the story cannot judge the masking)"
        )
        return
    shown = played.served.get("wrong-key", "")
    if "Incorrect API key provided: ***" not in shown:
        result.failures.append(
            "the API does not show job wrong-key's 401 as the provider's message with the "
            "key's echo masked (`Incorrect API key provided: ***`)"
        )
    folder = stage.database_file.parent
    places = {
        f"file {p.name}": p.read_bytes().decode("utf-8", "replace")
        for p in sorted(folder.glob(f"{stage.database_file.name}*"))
    }
    places |= {"the logs": "\n".join(stage.logs), "the API's answers": shown}
    for place, text in places.items():
        echoes = _echoes(stage.key, text)
        if echoes:
            result.failures.append(
                f"the canary key is echoed in part in {place}: {len(echoes)} pieces"
            )


def masked(entry: Any, key: str) -> Any:
    """`entry` with the word of its error message that echoes `key` shortened (the
    key's last four after stars) written as ``***``."""
    error = entry.response.get("error") if isinstance(entry.response, dict) else None
    if not isinstance(error, dict) or not isinstance(error.get("message"), str):
        return entry
    message = error["message"]
    masked = re.sub(rf"[\w-]*\*+{re.escape(key[-4:])}", "***", message)
    return replace(entry, response={**entry.response, "error": {**error, "message": masked}})
