"""Reading a plan file's YAML safely: bounded in size, depth and alias expansion, one reading per key.

A plan file may come from anyone who can put a file where a DAG or the CLI reads it. Whatever it holds,
reading it ends within a second with either the data or one `PlanFileProblem` saying what is wrong and
where: never a hang (a device or FIFO given as the plan), never memory blown up by aliases ("billion
laughs"), never a crash on deep nesting, and never a key given twice silently read as its last value.

Bounds written here on PyYAML's safe loader rather than another library: PyYAML and ruamel.yaml expand aliases
and take a key twice without limit, and strictyaml reads another dialect (every value a string, no flow style),
which would change what an existing plan means.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

import yaml
from yaml.nodes import MappingNode, ScalarNode

__all__ = ["MAX_ALIASES", "MAX_DEPTH", "MAX_EXPANDED_VALUES", "MAX_PLAN_BYTES", "PlanFileProblem",
           "read_plan_yaml"]

# A real plan is a few kilobytes, a few levels deep, with a handful of anchors at most.
MAX_PLAN_BYTES = 1 << 20
MAX_DEPTH = 32
MAX_ALIASES = 100
MAX_EXPANDED_VALUES = 20_000  # values in the plan once every alias is expanded; a real plan has hundreds
MAX_NUMBER_DIGITS = 40

# libyaml's C parser when the wheel has it (PyYAML's wheels do): a 1 MiB file parses in milliseconds.
_BaseLoader: type = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_MERGE_TAG = "tag:yaml.org,2002:merge"


class PlanFileProblem(ValueError):
    """What makes a file unreadable as a plan, in one sentence (the caller names the file)."""


def _line(node_or_event: Any) -> int:
    return node_or_event.start_mark.line + 1


class _PlanLoader(_BaseLoader):  # type: ignore[misc, valid-type]
    """The safe loader, refusing keys given twice and numbers too long to be a setting."""

    def construct_mapping(self, node: MappingNode, deep: bool = False) -> dict[Any, Any]:
        first_seen: dict[tuple[str, str], int] = {}
        for key_node, _value in node.value:
            if not isinstance(key_node, ScalarNode) or key_node.tag == _MERGE_TAG:
                continue
            key = (key_node.tag, key_node.value)
            if key in first_seen:
                raise PlanFileProblem(f"line {_line(key_node)}: the key '{key_node.value}' is given twice in one "
                                      f"mapping (first at line {first_seen[key]}): keep one of them")
            first_seen[key] = _line(key_node)
        return super().construct_mapping(node, deep)

    def construct_yaml_int(self, node: ScalarNode) -> int:
        # Python refuses to parse integers of more than 4300 digits with a bare ValueError; no setting needs 40.
        if len(node.value) > MAX_NUMBER_DIGITS:
            raise PlanFileProblem(f"line {_line(node)}: a number of {len(node.value)} digits; no plan setting "
                                  f"takes more than {MAX_NUMBER_DIGITS}")
        return super().construct_yaml_int(node)


_PlanLoader.add_constructor("tag:yaml.org,2002:int", _PlanLoader.construct_yaml_int)


def _read_bytes(path: Path) -> bytes:
    try:
        # Non-blocking, so that a FIFO opens at once instead of waiting for a writer; checked on the open file.
        descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as error:
        raise PlanFileProblem(f"cannot read it: {error.strerror}") from None
    with os.fdopen(descriptor, "rb") as file:
        mode = os.fstat(file.fileno()).st_mode
        if not stat.S_ISREG(mode):
            raise PlanFileProblem("not a regular file (a folder, device, FIFO or socket): give the path of a "
                                  "YAML plan")
        data = file.read(MAX_PLAN_BYTES + 1)
    if len(data) > MAX_PLAN_BYTES:
        raise PlanFileProblem("larger than 1 MiB: a plan is a few kilobytes of YAML; is this the right file?")
    return data


def _decode(data: bytes) -> str:
    if b"\x00" in data:
        raise PlanFileProblem("holds NUL bytes: a binary file, not a YAML plan")
    try:
        return data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as error:
        line = data[:error.start].count(b"\n") + 1
        raise PlanFileProblem(f"not UTF-8 text: byte 0x{data[error.start]:02x} at line {line}; save the plan as "
                              "UTF-8") from None


def _check_shape(text: str) -> None:
    """Walk the parser's events (no tree is built) and refuse depth, aliases and expansion past the bounds.

    `expanded` counts every value as it would appear once aliases are expanded: a scalar or a collection
    counts one, an alias counts every value of what its anchor holds.
    """
    depth = aliases = expanded = 0
    anchored_sizes: dict[str, int] = {}
    open_collections: list[tuple[str | None, int]] = []  # (anchor, `expanded` when it opened)
    for event in yaml.parse(text, Loader=_BaseLoader):
        if isinstance(event, yaml.CollectionStartEvent):
            depth += 1
            if depth > MAX_DEPTH:
                raise PlanFileProblem(f"line {_line(event)}: nested more than {MAX_DEPTH} levels deep; a plan needs "
                                      "a few")
            open_collections.append((event.anchor, expanded))
            expanded += 1
        elif isinstance(event, yaml.CollectionEndEvent):
            depth -= 1
            anchor, opened_at = open_collections.pop()
            if anchor:
                anchored_sizes[anchor] = expanded - opened_at
        elif isinstance(event, yaml.ScalarEvent):
            expanded += 1
            if event.anchor:
                anchored_sizes[event.anchor] = 1
        elif isinstance(event, yaml.AliasEvent):
            aliases += 1
            if aliases > MAX_ALIASES:
                raise PlanFileProblem(f"line {_line(event)}: more than {MAX_ALIASES} aliases (*name); a plan needs "
                                      "a few")
            if any(anchor == event.anchor for anchor, _ in open_collections):
                raise PlanFileProblem(f"line {_line(event)}: the alias *{event.anchor} refers to itself (it is "
                                      "inside its own anchor)")
            expanded += anchored_sizes.get(event.anchor or "", 1)  # an unknown anchor is the composer's error
        if expanded > MAX_EXPANDED_VALUES:
            raise PlanFileProblem(f"line {_line(event)}: more than {MAX_EXPANDED_VALUES:,} values once its aliases "
                                  "are expanded (a 'billion laughs' file?); a plan holds hundreds")


def _yaml_problem(error: yaml.YAMLError) -> str:
    mark = getattr(error, "problem_mark", None)
    problem = getattr(error, "problem", None)
    if mark is None or problem is None:
        return f"not valid YAML: {error}"
    context = f" ({error.context})" if getattr(error, "context", None) else ""
    return f"not valid YAML at line {mark.line + 1}, column {mark.column + 1}: {problem}{context}"


def read_plan_yaml(path: Path) -> Any:
    """The data of a plan file; PlanFileProblem says what is wrong with the file, at which line."""
    text = _decode(_read_bytes(path))
    try:
        _check_shape(text)
        return yaml.load(text, Loader=_PlanLoader)  # a SafeLoader: no Python objects from tags
    except yaml.YAMLError as error:
        raise PlanFileProblem(_yaml_problem(error)) from None
    except (ValueError, TypeError, OverflowError) as error:
        if isinstance(error, PlanFileProblem):
            raise
        # A value the safe constructors could not build (e.g. a timestamp with a month 13).
        raise PlanFileProblem(f"a value cannot be read: {error}") from None
