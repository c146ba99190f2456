"""The one reader of configuration files: YAML, or TOML for a ``.toml`` file.

It sits below every part that reads a section of the file (``harness.config`` reads the
whole service configuration; ``harness.providers.config`` and ``harness.contracts.chains``
read their own sections for their standalone loaders), so none of them imports another
to read a file, and the file is read the same way by all.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import yaml

from harness.errors import ConfigError
from harness.formats import yaml_text

CONFIG_SUFFIXES = (".yaml", ".yml", ".toml")


def read_config_file(path: str | Path) -> dict[str, Any]:
    """A configuration file's top-level mapping (``{}`` for an empty file).

    An error gives the position and the problem, never the offending text: it may be a
    token or a key."""
    path = Path(path)
    if path.suffix.lower() not in CONFIG_SUFFIXES:
        raise ConfigError(f"{path}: a configuration file must be .yaml, .yml or .toml")
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) else "not UTF-8 text"
        raise ConfigError(f"{path}: cannot read: {reason}") from None
    loaded = _parse_toml(path, text) if path.suffix.lower() == ".toml" else _parse_yaml(path, text)
    if loaded is None:
        return {}
    if not isinstance(loaded, dict):
        raise ConfigError(f"{path}: (top level): must be a mapping", field="(top level)")
    return loaded


def _parse_toml(path: Path, text: str) -> Any:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:  # its message has line and column only
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None


def _parse_yaml(path: Path, text: str) -> Any:
    try:
        return yaml_text.load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or "cannot parse"
        raise ConfigError(f"{path}: not valid YAML{where}: {problem}") from None
