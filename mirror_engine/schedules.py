"""Checking a plan's schedule (a DAG schedule: an Airflow preset or a five-field cron expression) at load.

The CLI never schedules anything, but a plan that Airflow would refuse is refused by every command too, with
the field named, rather than only when the DAG file is parsed.
"""

from __future__ import annotations

import re

PRESETS = frozenset({"@once", "@continuous", "@hourly", "@daily", "@weekly", "@monthly", "@quarterly", "@yearly",
                     "@annually", "@midnight"})
_MONTHS = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]
_DAYS = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"]
# (name, lowest, highest, names for lowest.. in order)
_FIELDS: list[tuple[str, int, int, list[str]]] = [
    ("minute", 0, 59, []), ("hour", 0, 23, []), ("day of month", 1, 31, []), ("month", 1, 12, _MONTHS),
    ("day of week", 0, 7, _DAYS),
]
_ITEM = re.compile(r"^(?:(\*)|([0-9a-z]+)(?:-([0-9a-z]+))?)(?:/([0-9]+))?$")


def schedule_problem(value: str) -> str | None:
    """Why Airflow could not schedule `value`, or None."""
    if len(value) > 200:
        return f"is {len(value)} characters long; a schedule is a preset such as @daily or a cron expression"
    text = value.strip().lower()
    if text.startswith("@"):
        return None if text in PRESETS else f"unknown preset {value!r} (known: {', '.join(sorted(PRESETS))})"
    fields = text.split()
    if len(fields) != 5:
        return (f"{value!r} has {len(fields)} field(s); a cron expression has 5 (minute hour day-of-month month "
                "day-of-week), e.g. '0 2 * * *'")
    for text_field, (name, low, high, names) in zip(fields, _FIELDS, strict=True):
        for item in text_field.split(","):
            problem = _item_problem(item, low, high, names)
            if problem:
                return f"{value!r}: {name} field {text_field!r}: {problem}"
    return None


def _item_problem(item: str, low: int, high: int, names: list[str]) -> str | None:
    match = _ITEM.match(item)
    if not match:
        return f"{item!r} is not a number, range, name or */step"
    _star, first, last, step = match.groups()
    if step is not None and int(step) == 0:
        return "a step of 0"
    for part in (first, last):
        if part is None:
            continue
        if part.isdigit():
            if not low <= int(part) <= high:
                return f"{part} is outside {low}-{high}"
        elif part not in names:
            return f"{part!r} is not a number from {low} to {high}" + (f" or one of {', '.join(names)}" if names
                                                                        else "")
    return None
