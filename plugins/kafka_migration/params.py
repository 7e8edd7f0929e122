"""A migration run's params as its tasks read them, in one place.

The migration DAG renders its templates as native objects (`render_template_as_native_obj`), so a boolean param
reaches a task as a bool, a number as a number and an empty one as None. These readers also take the text a
template field holds when an operator is built by hand (a test, another DAG), so that every task reads a flag or
a duration the same way."""

from __future__ import annotations

from typing import Any


def flag(value: Any) -> bool:
    """A boolean param: True, or the text "true" in any case."""
    return value if isinstance(value, bool) else str(value).strip().lower() == "true"


def seconds(value: Any) -> float | None:
    """A duration param in seconds; None for an empty one (None, "", or a null rendered as text)."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    text = str(value).strip()
    return None if text in ("", "None", "null") else float(text)


def whole(value: Any) -> int | None:
    """A count param (records); None for an empty one."""
    number = seconds(value)
    return None if number is None else int(number)
