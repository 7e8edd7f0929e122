"""Java `.properties` files, read as `java.util.Properties.load` reads them, by the `javaproperties` package.

MirrorMaker 2 loads its config with `Properties.load(InputStream)`: the bytes are ISO-8859-1 (every byte is
one character, so a file is never "not UTF-8"), characters beyond Latin-1 are written `\\uXXXX`, and those
beyond the BMP as a surrogate pair of two escapes, which `javaproperties` joins into one character. Kafka's
FileConfigProvider loads its files with `Properties.load(Reader)` over UTF-8 text: the same syntax on
characters instead of bytes. The syntax itself (separators, continuations, comments, escapes) is the
library's; what stays here is what MM2 needs around it: the Latin-1 reading, later duplicates winning, and
errors naming the line (a malformed `\\uXXXX`, or half of a surrogate pair, which no encoder can write).
"""

from __future__ import annotations

import re

import javaproperties

__all__ = ["PropertiesError", "load_properties", "parse_properties_text"]

_LINE_BREAK = re.compile(r"\r\n|\r|\n")
_LONE_SURROGATE = re.compile(r"[\ud800-\udfff]")


class PropertiesError(ValueError):
    """A malformed .properties text; the message names the bad line."""


def parse_properties_text(text: str) -> dict[str, str]:
    """The entries of a .properties text, as `Properties.load(Reader)`; later duplicates win.

    Raises PropertiesError naming the first line with a malformed `\\uXXXX` escape or a lone surrogate.
    """
    entries: dict[str, str] = {}
    lines_before = 0  # natural lines of the elements read so far: the next one starts on the line after
    try:
        for element in javaproperties.parse(text):
            line = lines_before + 1
            lines_before += len(_LINE_BREAK.findall(element.source))
            if not isinstance(element, javaproperties.KeyValue):
                continue
            if _LONE_SURROGATE.search(element.key + element.value):
                raise PropertiesError(f"line {line}: a \\uXXXX escape is half of a surrogate pair (D800 to DFFF) "
                                      "without its other half; write a character beyond U+FFFF as both escapes, "
                                      "e.g. \\uD83D\\uDE00")
            entries[element.key] = element.value
    except javaproperties.InvalidUEscapeError as error:
        raise PropertiesError(f"line {lines_before + 1}: malformed \\uXXXX escape {error.escape!r}") from None
    return entries


def load_properties(data: bytes) -> dict[str, str]:
    """The entries of .properties bytes, as `Properties.load(InputStream)`: every byte is a Latin-1 character."""
    return parse_properties_text(data.decode("iso-8859-1"))
