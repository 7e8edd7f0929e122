"""What Kafka allows as a topic name, and the name its metrics give a topic: rules of the broker, asked of no
cluster."""

from __future__ import annotations

import string

# Kafka's `Topic.validate`: what a broker refuses as a topic name.
MAX_TOPIC_NAME_LENGTH = 249
_LEGAL_TOPIC_CHARACTERS = frozenset(string.ascii_letters + string.digits + "._-")


def topic_name_problem(name: str) -> str | None:
    """Why a broker would refuse `name` as a topic name, or None when it is legal."""
    if not name:
        return "is empty"
    if name in (".", ".."):
        return "is '.' or '..': '.' and '..' are not topic names"
    if len(name) > MAX_TOPIC_NAME_LENGTH:
        return f"has {len(name)} characters, more than Kafka's {MAX_TOPIC_NAME_LENGTH}"
    illegal = sorted({char for char in name if char not in _LEGAL_TOPIC_CHARACTERS})
    if illegal:
        return (f"has characters Kafka refuses in a topic name ({', '.join(repr(c) for c in illegal)}); "
                "allowed are ASCII letters, digits, '.', '_' and '-'")
    return None


def metric_name(topic: str) -> str:
    """Kafka's metrics write '.' as '_', so a broker refuses a topic whose name differs from an existing one's
    only there (`orders.eu` beside `orders_eu`)."""
    return topic.replace(".", "_")
