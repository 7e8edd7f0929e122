"""Keeping credentials out of everything the engine writes: logs at any level, errors, reports, records.

Client settings carry passwords (`sasl.password`, `ssl.key.password`, a `sasl.jaas.config` with its
`password="..."`). Nothing prints a client config; as a second line of defence every secret value of the
configs in use is remembered, and `RedactingFilter` masks it in any log record, whoever wrote it.
librdkafka's own `debug` output can print protocol details of the login, so it is never enabled together
with credentials.
"""

from __future__ import annotations

import logging
import re
import threading

REDACTED = "[redacted]"
# `basic.auth.user.info` (a schema registry's "user:password") included.
_SECRET_KEY = re.compile(r"(?i)(password|secret|jaas|\.pem$|\.key$|token|credential|user\.info)")
# `password="x"`, `sasl.password=x`, `"sasl.password": "x"` in free text (an exception's message, say).
_SECRET_IN_TEXT = re.compile(
    r"(?i)(password|secret|sasl\.jaas\.config|credentials?)(\"?\s*[=:]\s*)(\"[^\"]*\"?|'[^']*'?|[^\s,;}]+)")

_known: set[str] = set()
_lock = threading.Lock()
log = logging.getLogger(__name__)


def is_secret_key(key: str) -> bool:
    """A client setting whose value is a credential (never shown)."""
    return bool(_SECRET_KEY.search(key))


def secret_values(config: dict[str, str]) -> set[str]:
    """Every secret a client config holds: the values of its secret settings, and a JAAS line's password."""
    values = {str(value) for key, value in config.items() if is_secret_key(key) and str(value)}
    # A JAAS line's password is a secret of its own, in case only it is echoed.
    for value in list(values):
        for match in re.finditer(r"password\s*=\s*(?:\"([^\"]*)\"|([^\";\s]+))", value):
            values.add(match.group(1) or match.group(2) or "")
    values.discard("")
    return values


def remember_secrets(config: dict[str, str]) -> None:
    """Register the secret values of a client config, so that `redact` masks them wherever they appear."""
    values = secret_values(config)
    with _lock:
        _known.update(value for value in values if len(value) >= 3)


def masked(config: dict[str, str]) -> dict[str, str]:
    """A client config fit to show: every secret value replaced."""
    return {key: REDACTED if is_secret_key(key) else str(value) for key, value in config.items()
            if not callable(value)}


def redact(text: str) -> str:
    """`text` with every remembered secret and every `password=...`-looking value masked."""
    with _lock:
        known = sorted(_known, key=len, reverse=True)
    for secret in known:
        if secret in text:
            text = text.replace(secret, REDACTED)
    return _SECRET_IN_TEXT.sub(lambda m: m.group(1) + m.group(2) + REDACTED, text)


def printable(text: str) -> str:
    """The text with control, format and line-separator characters shown as escapes: a value echoed from a file
    cannot move the cursor, recolour the terminal, reorder text or start a line that looks like another."""
    return "".join(char if char.isprintable() or char == " " else char.encode("unicode_escape").decode("ascii")
                   for char in text)


def printable_lines(text: str) -> str:
    """`printable`, line by line: the message's own line breaks stay."""
    return "\n".join(printable(line) for line in text.split("\n"))


def without_credential_debug(config: dict[str, str], where: str) -> dict[str, str]:
    """The config without librdkafka's `debug` when it carries credentials (debug output can print them)."""
    if "debug" in config and any(is_secret_key(key) for key in config):
        log.warning("%s: librdkafka 'debug' is ignored because this client carries credentials (its debug output "
                    "can print them)", where)
        return {key: value for key, value in config.items() if key != "debug"}
    return config


class RedactingFilter(logging.Filter):
    """Masks secrets in every log record passing a handler (messages, arguments and exception text)."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        cleaned = redact(message)
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redact(record.exc_text)
        if cleaned != message:
            record.msg, record.args = cleaned, ()
        return True
