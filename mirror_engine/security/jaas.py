"""A `sasl.jaas.config` value, read as Kafka's `JaasConfig` reads it (with `java.io.StreamTokenizer`).

Grammar: `<LoginModule class> <flag> [<name>=<value> ...];`, repeated. The tokenizer decides what a value
may be: a double- or single-quoted string (backslash escapes as in Java, unterminated at the end of the
line), or a bare word of letters, digits, `.`, `-`, `_` and `$` that does not start with a digit or `.`
(those start a number, which JAAS refuses as a value). `/* */` and `//` comments are skipped, and so is the
rest of the line after a lone `/`.

Errors never show an option value, nor an option name that could be a piece of one: the value usually is a
password, and error messages end up in logs. `render_jaas_config` writes an entry this reader (and Kafka's)
reads back exactly, whatever the password holds.

Hand-written because the grammar is Java's `StreamTokenizer`, which no maintained Python package reads; the
tests hold it to what Kafka's own `JaasConfig` accepts and refuses.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["JaasConfigError", "JaasLoginModule", "parse_jaas_config", "render_jaas_config"]

_FLAGS = ("required", "requisite", "sufficient", "optional")
# Option names of Kafka's own login modules: only these are named in an error message.
_KNOWN_OPTION_NAMES = frozenset({
    "username", "password", "tokenauth", "serviceName", "principal", "keyTab", "useKeyTab", "storeKey",
    "useTicketCache", "debug", "clientId", "clientSecret", "scope", "unsecuredLoginStringClaim_sub",
})
_QUOTE_ESCAPES = {"a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v"}


class JaasConfigError(ValueError):
    """A malformed JAAS config; the message holds no option value."""


@dataclass(frozen=True)
class JaasLoginModule:
    """One login module entry: its class name, control flag (lower case) and options."""

    module: str
    flag: str
    options: dict[str, str] = field(default_factory=dict)

    @property
    def simple_name(self) -> str:
        return self.module.rpartition(".")[2]


@dataclass(frozen=True)
class _Token:
    kind: str  # "word", "quoted", "number", "eof", or the ordinary character itself
    text: str | None = None  # StreamTokenizer's sval: set for words and quoted strings only


_DIGITS = frozenset("0123456789")
_NUMBER_CHARS = _DIGITS | {"."}


def _is_word_start(char: str) -> bool:
    """Letters, `_`, `$` and every character from U+00A0 up (StreamTokenizer's word characters)."""
    return ("a" <= char.lower() <= "z" and len(char) == 1) or char in ("_", "$") or char >= "\u00a0"


def _is_word_part(char: str) -> bool:
    return _is_word_start(char) or char in _NUMBER_CHARS or char == "-"


class _Tokenizer:
    """The subset of StreamTokenizer's behaviour that JaasConfig's settings give."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.position = 0

    def _peek(self, offset: int = 0) -> str:
        index = self.position + offset
        return self.text[index] if index < len(self.text) else ""

    def _skip_blanks_and_comments(self) -> None:
        while self.position < len(self.text):
            char = self.text[self.position]
            if char <= " ":
                self.position += 1
            elif char == "/" and self._peek(1) == "*":
                end = self.text.find("*/", self.position + 2)
                self.position = len(self.text) if end < 0 else end + 2
            elif char == "/":  # `//`, and a lone `/` (StreamTokenizer's default comment character)
                while self.position < len(self.text) and self.text[self.position] not in "\r\n":
                    self.position += 1
            else:
                return

    def next(self) -> _Token:
        self._skip_blanks_and_comments()
        if self.position >= len(self.text):
            return _Token("eof")
        char = self.text[self.position]
        # Digits, `.` and a `-` before a digit or `.` start a number (parseNumbers), checked before words.
        if char in _NUMBER_CHARS or (char == "-" and self._peek(1) in _NUMBER_CHARS and self._peek(1)):
            self.position += 1
            while self._peek() and self._peek() in _NUMBER_CHARS:
                self.position += 1
            return _Token("number")
        if _is_word_start(char):
            start = self.position
            while self._peek() and _is_word_part(self._peek()):
                self.position += 1
            return _Token("word", self.text[start : self.position])
        if char in "\"'":
            return self._quoted(char)
        self.position += 1
        return _Token(char)

    def _quoted(self, quote: str) -> _Token:
        self.position += 1
        out: list[str] = []
        while self.position < len(self.text) and self.text[self.position] not in (quote, "\n", "\r"):
            char = self.text[self.position]
            self.position += 1
            if char != "\\" or self.position >= len(self.text):
                out.append(char)
                continue
            escaped = self.text[self.position]
            if "0" <= escaped <= "7":  # octal: up to three digits, at most \377
                digits = escaped
                limit = 3 if escaped <= "3" else 2
                self.position += 1
                while len(digits) < limit and "0" <= self._peek() <= "7" and self._peek():
                    digits += self._peek()
                    self.position += 1
                out.append(chr(int(digits, 8)))
                continue
            out.append(_QUOTE_ESCAPES.get(escaped, escaped))
            self.position += 1
        if self._peek() == quote:
            self.position += 1
        return _Token("quoted", "".join(out))


def _option_label(name: str | None, index: int, token_kind: str) -> str:
    if token_kind == "word" and name in _KNOWN_OPTION_NAMES:
        return f"option '{name}'"
    return f"option {index}"


def parse_jaas_config(text: str) -> list[JaasLoginModule]:
    """Every login module entry of the config, in order; JaasConfigError if Kafka would refuse it."""
    tokenizer = _Tokenizer(text)
    entries: list[JaasLoginModule] = []
    token = tokenizer.next()
    while token.kind != "eof":
        if token.kind != "word" or token.text is None:
            raise JaasConfigError("expected a login module class name at the start of an entry")
        module = token.text
        flag = tokenizer.next()
        if flag.kind == "eof":
            raise JaasConfigError(f"login module {module}: no control flag (required, requisite, sufficient "
                                  "or optional)")
        if flag.kind != "word" or flag.text is None or flag.text.lower() not in _FLAGS:
            raise JaasConfigError(f"login module {module}: invalid control flag; expected required, requisite, "
                                  "sufficient or optional")
        options: dict[str, str] = {}
        index = 0
        token = tokenizer.next()
        while token.kind not in ("eof", ";"):
            index += 1
            label = _option_label(token.text, index, token.kind)
            equals = tokenizer.next()
            value = tokenizer.next() if equals.kind == "=" else _Token("eof")
            if equals.kind != "=" or value.text is None:
                raise JaasConfigError(f"login module {module}: {label} has no value (write name=\"value\"; a "
                                      "value that starts with a digit or holds other characters needs quotes)")
            options[token.text or ""] = value.text
            token = tokenizer.next()
        if token.kind != ";":
            raise JaasConfigError(f"login module {module}: the entry does not end with a semicolon "
                                  "(or a quoted value is not closed)")
        entries.append(JaasLoginModule(module, flag.text.lower(), options))
        token = tokenizer.next()
    if not entries:
        raise JaasConfigError("no login module: expected '<LoginModule class> required name=\"value\" ...;'")
    return entries


def _quoted_value(value: str) -> str:
    # Inside quotes StreamTokenizer reads a backslash as an escape (\n, octal \101, ...) and a line break as the
    # end of the string: both are written escaped, as are the quotes.
    escaped = value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\r", "\\r")
    return f'"{escaped}"'


def render_jaas_config(module: str, options: dict[str, str], flag: str = "required") -> str:
    """One login module entry, every option value quoted and escaped so that Kafka reads exactly `options`."""
    rendered = "".join(f" {name}={_quoted_value(value)}" for name, value in options.items())
    return f"{module} {flag}{rendered};"
