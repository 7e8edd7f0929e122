"""Regexes from plans, compiled with RE2, so matching a name takes linear time whatever a plan holds.

A plan's topic, group, backfill and config-exclude patterns come from whoever wrote the plan. Python's
`re` backtracks: `(a+)+` against a long name that does not match runs for hours. RE2 never backtracks, and
refuses the constructs that need it (look-around, back-references, possessive quantifiers, atomic
groups) at compile time, where the plan can name the pattern. Matching stays MirrorMaker 2's: a Java
regex, matched against the whole name.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache
from typing import Protocol

import re2

__all__ = [
    "MAX_PATTERNS",
    "MAX_PATTERN_LENGTH",
    "FullMatcher",
    "RegexError",
    "check_pattern",
    "check_patterns",
    "compile_any",
]

# Bounds on what one plan list may hold: far above any real migration (topic names are at most 249
# characters), low enough that compiling them stays in milliseconds and a few megabytes.
MAX_PATTERNS = 1000
MAX_PATTERN_LENGTH = 2000
# RE2's budget for one compiled list (its default is 8 MiB); a list that needs more is refused, not built.
_MAX_PROGRAM_BYTES = 64 << 20

_SUPPORTED_FLAGS = frozenset("ism-")
_FLAG_GROUP = re.compile(r"\(\?([A-Za-z\-]+)[:)]")
_BACKTRACKING = ("plans match regexes in linear time (RE2), so look-around, back-references, "
                 "possessive quantifiers and atomic groups are not supported")


class RegexError(ValueError):
    """A pattern a plan may not use; the message names the pattern and says why."""


class FullMatcher(Protocol):
    def fullmatch(self, text: str) -> object | None: ...


def _options() -> re2.Options:
    options = re2.Options()
    options.log_errors = False  # RE2 would print every refused pattern to stderr; the error says it once
    options.max_mem = _MAX_PROGRAM_BYTES
    return options


def _scan_syntax(pattern: str) -> None:
    """Refuse what RE2 would read differently from Java rather than refuse: unsupported inline flags
    (RE2's `(?U)` is "ungreedy", Java's is Unicode classes) and Java's class intersection `[a&&[b]]`."""
    index, in_class = 0, False
    while index < len(pattern):
        if pattern.startswith("\\Q", index):  # quoted up to \E: literal text, nothing to scan
            end = pattern.find("\\E", index + 2)
            index = len(pattern) if end < 0 else end + 2
            continue
        char = pattern[index]
        if char == "\\":
            index += 2
            continue
        if in_class:
            if pattern.startswith("&&", index):
                raise RegexError(f"{pattern!r} uses Java's character class intersection (&&), which RE2 would "
                                 "read as literal characters: list the characters of the class instead")
            in_class = char != "]"
        elif char == "[":
            in_class = True
            # A ']' right after '[' or '[^' is a literal member, not the end of the class.
            index += 2 if pattern.startswith("^]", index + 1) else 1 if pattern.startswith("]", index + 1) else 0
        elif char == "(":
            flags = _FLAG_GROUP.match(pattern, index)
            if flags and not set(flags.group(1)) <= _SUPPORTED_FLAGS:
                raise RegexError(f"inline flag (?{flags.group(1)}) in {pattern!r} is not supported: plans support "
                                 "(?i) (case-insensitive), (?s) and (?m), alone or as groups such as (?i:...)")
        index += 1


def check_pattern(pattern: str) -> None:
    """Raise RegexError naming the pattern when a plan may not use it."""
    if len(pattern) > MAX_PATTERN_LENGTH:
        raise RegexError(f"'{pattern[:40]}...' is {len(pattern)} characters long; a pattern may have at most "
                         f"{MAX_PATTERN_LENGTH}")
    _scan_syntax(pattern)
    _compiled(pattern)


def check_patterns(patterns: Sequence[str]) -> None:
    if len(patterns) > MAX_PATTERNS:
        raise RegexError(f"{len(patterns)} patterns; a list may hold at most {MAX_PATTERNS} (one pattern can "
                         "name many topics: orders-(eu|us)-.*)")
    for pattern in patterns:
        check_pattern(pattern)


def _compiled(pattern: str) -> FullMatcher:
    try:
        return re2.compile(pattern, _options())
    except re2.error as error:
        reason = error.args[0].decode(errors="replace") if error.args and isinstance(error.args[0], bytes) \
            else str(error)
        raise RegexError(f"{pattern!r} is not a valid regular expression: {reason} ({_BACKTRACKING})") from None


@lru_cache(maxsize=256)
def _compile_any(patterns: tuple[str, ...]) -> FullMatcher:
    check_patterns(patterns)
    # Each pattern in its own group, so that an inline flag stays in the pattern that sets it (joined with a
    # bare "|", as MM2 does, a Java `(?i)` would also apply to every pattern after it).
    return _compiled("|".join(f"(?:{pattern})" for pattern in patterns))


def compile_any(patterns: Sequence[str]) -> FullMatcher | None:
    """One matcher whose `fullmatch` accepts a name that fully matches any of `patterns`, or None for an empty
    list. Compiled once per distinct list (plans rebuild their filters freely)."""
    return _compile_any(tuple(patterns)) if patterns else None
