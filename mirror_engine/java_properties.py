"""Java `.properties` files, read exactly as `java.util.Properties.load` reads them.

MirrorMaker 2 loads its config with `Properties.load(InputStream)`: the bytes are ISO-8859-1 (every byte is
one character, so a file is never "not UTF-8"), characters beyond Latin-1 are written `\\uXXXX`. Kafka's
FileConfigProvider loads its files with `Properties.load(Reader)` over UTF-8 text: the same syntax on
characters instead of bytes. The rules, from `Properties.LineReader` and `Properties.loadConvert`:

- natural lines end at `\\n`, `\\r` or `\\r\\n`; their leading spaces, tabs and form feeds are skipped;
- a line whose first non-blank character is `#` or `!` is a comment, even if it ends with a backslash;
  a `#` anywhere else is data;
- a line ending in an odd number of backslashes continues on the next natural line, whose leading
  blanks are dropped; an empty next line ends the entry; a backslash at the end of the input is dropped;
- the key ends at the first unescaped `=`, `:` or blank; blanks, then at most one `=` or `:`, then
  blanks separate it from the value; the value keeps its trailing blanks;
- escapes: `\\t \\n \\r \\f`, `\\uXXXX` (exactly four hex digits, or the file is malformed), and a
  backslash before any other character stands for that character.
"""

from __future__ import annotations

import re

__all__ = ["PropertiesError", "load_properties", "parse_properties_text"]

_LINE_BREAK = re.compile(r"\r\n|\r|\n")
_BLANKS = " \t\f"
_CONTROL_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}
_HEX_DIGITS = frozenset("0123456789abcdefABCDEF")


class PropertiesError(ValueError):
    """A malformed .properties text; the message names each bad line."""


def _ends_with_odd_backslashes(line: str) -> bool:
    return (len(line) - len(line.rstrip("\\"))) % 2 == 1


def _logical_lines(text: str) -> list[tuple[int, str]]:
    """(first natural line number, joined logical line) for every entry line of the text."""
    natural = _LINE_BREAK.split(text)
    logical: list[tuple[int, str]] = []
    index = 0
    while index < len(natural):
        number = index + 1
        line = natural[index].lstrip(_BLANKS)
        index += 1
        if not line or line[0] in "#!":
            continue
        while _ends_with_odd_backslashes(line):
            line = line[:-1]
            if index == len(natural):
                break
            line += natural[index].lstrip(_BLANKS)
            index += 1
        logical.append((number, line))
    return logical


def _split_key(line: str) -> tuple[str, str]:
    """The raw (still escaped) key and value of one logical line."""
    position = 0
    escaped = False
    while position < len(line):
        char = line[position]
        if not escaped and (char in "=:" or char in _BLANKS):
            break
        escaped = char == "\\" and not escaped
        position += 1
    key, rest = line[:position], line[position:]
    rest = rest.lstrip(_BLANKS)
    if rest[:1] in ("=", ":"):
        rest = rest[1:].lstrip(_BLANKS)
    return key, rest


def _unescape(raw: str, number: int, problems: list[str]) -> str:
    out: list[str] = []
    position = 0
    while position < len(raw):
        char = raw[position]
        if char != "\\" or position + 1 == len(raw):
            out.append(char)
            position += 1
            continue
        escaped = raw[position + 1]
        if escaped == "u":
            digits = raw[position + 2 : position + 6]
            if len(digits) != 4 or not set(digits) <= _HEX_DIGITS:
                problems.append(f"line {number}: malformed \\uXXXX escape {raw[position : position + 6]!r}")
                return "".join(out)
            out.append(chr(int(digits, 16)))
            position += 6
            continue
        out.append(_CONTROL_ESCAPES.get(escaped, escaped))
        position += 2
    return "".join(out)


def parse_properties_text(text: str) -> dict[str, str]:
    """The entries of a .properties text, as `Properties.load(Reader)`; later duplicates win.

    Raises PropertiesError naming every line with a malformed `\\uXXXX` escape.
    """
    entries: dict[str, str] = {}
    problems: list[str] = []
    for number, line in _logical_lines(text):
        raw_key, raw_value = _split_key(line)
        key = _unescape(raw_key, number, problems)
        entries[key] = _unescape(raw_value, number, problems)
    if problems:
        raise PropertiesError("; ".join(problems))
    return entries


def load_properties(data: bytes) -> dict[str, str]:
    """The entries of .properties bytes, as `Properties.load(InputStream)`: every byte is a Latin-1 character."""
    return parse_properties_text(data.decode("iso-8859-1"))
