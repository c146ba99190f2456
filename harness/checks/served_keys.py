"""The served story's judges of the canary key: where it must never go, whole or in part.

docs/providers.md: API keys appear in no log record, outcome or database row, and an echo
of one in a provider's text (the key shortened, ``sk-proj-****abcd``; a run of eight of
its characters) is masked as a whole word, ``***``.
"""

from __future__ import annotations

import json
import re
from dataclasses import replace
from typing import Any

KEY_RUN = "{key_run}"
"""In a scripted answer: eight characters of the key, past its vendor prefix."""
KEY_TAIL = "{key_tail}"
"""In a scripted answer: the key's last six characters (more than the four OpenAI
shows), as a gateway's shortened key shows them after its mask mark."""
KEY_HEAD = "{key_head}"
"""In a scripted answer: the vendor's prefix and the key's first character past it."""
KEY_LAST = "{key_last}"
"""In a scripted answer: the key's last four characters as a word of their own, with no
mask mark beside them: ordinary text, which the service keeps."""
PREFIX = "sk-canary-"
"""The canary key's vendor prefix, which every such key shares: text naming it alone
is about keys, not an echo of one (docs/providers.md)."""


def key_run(key: str) -> str:
    return key[len(PREFIX) :][:8]


def key_head(key: str) -> str:
    return key[: len(PREFIX) + 1]


def key_tail(key: str) -> str:
    return key[-6:]


def with_key(behaviour: Any, key: str) -> Any:
    """A scripted behaviour whose content quotes `KEY_RUN`, `KEY_TAIL`, `KEY_HEAD` and
    `KEY_LAST` of the key."""
    if isinstance(behaviour, dict) and isinstance(behaviour.get("content"), str):
        return {**behaviour, "content": quoting(behaviour["content"], key)}
    return behaviour


def quoting(text: str, key: str) -> str:
    """`text` with `KEY_RUN`, `KEY_TAIL`, `KEY_HEAD` and `KEY_LAST` of `key` in place."""
    text = text.replace(KEY_RUN, key_run(key)).replace(KEY_HEAD, key_head(key))
    return text.replace(KEY_TAIL, key_tail(key)).replace(KEY_LAST, key[-4:])


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
    (or more) shown after a mask mark (``*``, ``...``, ``…``), the shape of a shortened
    key."""
    secret = key.removeprefix(PREFIX)
    runs = {secret[i : i + 8] for i in range(len(secret) - 7)}
    found = sorted(run for run in runs if run in text)
    found += re.findall(rf"(?:\*|\.\.\.|…)[A-Za-z0-9]*{re.escape(key[-4:])}", text)
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
    answers = "\n".join(played.served.values())
    places |= {"the logs": "\n".join(stage.logs), "the API's answers": answers}
    echoed = played.served.get("echoed-answer", "").split("\n")[0]
    expected = quoting(ECHOED_MASKED, stage.key)
    if expected not in echoed:
        result.failures.append(
            "the API does not serve job echoed-answer's text with the key's run, its "
            "shortened forms masked, and the vendor's prefix alone and the key's last four "
            f"as a word of their own kept (`{expected}`)"
        )
    for place, text in places.items():
        echoes = _echoes(stage.key, text)
        if echoes:
            result.failures.append(
                f"the canary key is echoed in part in {place}: {len(echoes)} pieces"
            )


MASK = "***"
SHORT = f"{PREFIX[:6]}..."  # the vendor's prefix shortened beside a mask mark, not past it
ECHOED = (
    f"Your key begins {KEY_RUN} and ends ...{KEY_TAIL}, that is all. "
    f"Ours all begin {PREFIX} ({SHORT} for short), yours {KEY_HEAD}. Ticket {KEY_LAST} is open."
)
"""The primary's answer to job echoed-answer: a run of the key (a prompt that carried
it, a debug text), the key shortened to its last six, the vendor's prefix alone, shortened
beside a mask mark (`sk-can...`: no edge reaching past it) and with one character past
it, and the key's last four as a word of their own: the service masks every echo and
keeps the prefix alone, whole or shortened (a run of eight counts once it reaches past
the prefix, by one character) and the last four without a mask mark beside them
(ordinary text: only a shortened key's visible edge is an echo)."""
ECHOED_MASKED = (
    f"Your key begins {MASK} and ends {MASK}, that is all. "
    f"Ours all begin {PREFIX} ({SHORT} for short), yours {MASK}. Ticket {KEY_LAST} is open."
)


def masked(entry: Any, key: str) -> Any:
    """`entry` with each word of its answer that echoes `key`, shortened (its last four or
    more after stars or dots, `KEY_HEAD`) or as a run of it (`KEY_RUN`), written as
    ``***``."""
    if not isinstance(entry.response, dict):
        return entry
    text = json.dumps(entry.response)
    text = re.sub(rf"[\w-]*(?:\*+|\.\.\.)\w*{re.escape(key[-4:])}", MASK, text)
    text = re.sub(rf"\b{re.escape(key_run(key))}\b", MASK, text)
    text = re.sub(rf"{re.escape(key_head(key))}(?![A-Za-z0-9])", MASK, text)
    return replace(entry, response=json.loads(text))
