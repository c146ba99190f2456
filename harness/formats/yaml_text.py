"""The one YAML reading of every file format (scenario, probe, profile, contract,
configuration, fake scripts): JSON-like scalars, as in YAML 1.2's core schema (only
true/false are booleans, so `no` stays a string and a schema refuses it where a boolean
belongs; no timestamps: a date stays its text), and a key given twice is an error.

`parse` reads the text once and gives its data and its node tree (the nodes carry the
lines that errors name, `harness.scenarios.places.YamlLines`); libyaml parses when it is
installed. `yaml.YAMLError` (and its marked kind, with the line) is the caller's to say.
"""

from __future__ import annotations

import re
from typing import Any

import yaml

_Base: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class Loader(_Base):
    """Safe YAML with JSON-like scalars and no duplicate keys."""


Loader.yaml_implicit_resolvers = {
    first: [
        (tag, regexp)
        for tag, regexp in resolvers
        if tag not in ("tag:yaml.org,2002:timestamp", "tag:yaml.org,2002:bool")
    ]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
Loader.add_implicit_resolver(
    "tag:yaml.org,2002:bool",
    re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"),
    list("tTfF"),
)


def _construct_mapping(loader: Any, node: yaml.MappingNode, deep: bool = False) -> Any:
    seen: dict[Any, yaml.Node] = {}
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        try:
            duplicate = key in seen
        except TypeError:
            duplicate = False
        if duplicate:
            raise yaml.constructor.ConstructorError(
                "while constructing a mapping",
                node.start_mark,
                f"found duplicate key {key!r} (first at line {seen[key].start_mark.line + 1})",
                key_node.start_mark,
            )
        seen[key] = key_node
    return loader.construct_mapping(node, deep=deep)


Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def parse(text: str) -> tuple[Any, yaml.Node | None]:
    """The document's data and its node tree, from one parse (None, None: empty)."""
    loader = Loader(text)
    try:
        node = loader.get_single_node()
        return (None if node is None else loader.construct_document(node)), node
    finally:
        loader.dispose()


def load(text: str) -> Any:
    """The document's data alone."""
    return parse(text)[0]
