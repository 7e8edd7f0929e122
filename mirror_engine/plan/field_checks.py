"""The checks a plan's values go through: finite numbers within a stated range (one message naming the range),
RE2 regexes, schedules; and the strict, frozen base of every section of the plan."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

from mirror_engine.plan.regexes import check_patterns
from mirror_engine.plan.schedules import schedule_problem


class StrictModel(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def check_regexes(patterns: list[str]) -> list[str]:
    # RegexError is a ValueError: pydantic reports it under the field's path.
    check_patterns(patterns)
    return patterns


def _shown(number: float) -> str:
    return str(number) if isinstance(number, int) else f"{number:g}"


def in_range(low: float, high: float, unit: str, integer: bool, low_excluded: bool) -> Callable[[Any], Any]:
    """A before-validator: the value as a finite number within [low, high] (or (low, high]), else one message
    that names the range. YAML reads `1e300` as text and `.inf`/`.nan` as floats; all of them end here."""
    kind = "a whole number" if integer else "a number"
    of_unit = f" of {unit}" if unit else ""
    excluded = " (excluded)" if low_excluded else ""
    allowed = f"must be {kind}{of_unit} from {_shown(low)}{excluded} to {_shown(high)}"

    def check(value: Any) -> Any:
        number: float | None = None
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            number = value
        elif isinstance(value, str) and len(value) <= 40:
            try:
                number = float(value.strip())
            except ValueError:
                number = None
        if number is None or not math.isfinite(number) or (integer and not float(number).is_integer()) \
                or number < low or number > high or (low_excluded and number == low):
            shown = repr(value) if len(repr(value)) <= 40 else repr(value)[:40] + "..."
            raise ValueError(f"{allowed}, got {shown}")
        return int(number) if integer else float(number)

    return check


def seconds(low: float, high: float) -> Any:
    return Annotated[float, BeforeValidator(in_range(low, high, "seconds", integer=False, low_excluded=False))]


def optional_seconds(low: float, high: float) -> Any:
    """Seconds in [low, high], or None (null in YAML) for the behaviour the field's comment names."""
    check = in_range(low, high, "seconds", integer=False, low_excluded=False)
    return Annotated[float | None, BeforeValidator(lambda value: None if value is None else check(value))]


def whole(low: int, high: int, unit: str = "") -> Any:
    return Annotated[int, BeforeValidator(in_range(low, high, unit, integer=True, low_excluded=False))]


# Kafka's offsets and counts are signed 64-bit.
INT64_MAX = 2**63 - 1
# A plan's name: it names the flow's internal topics and its DAGs.
PlanName = Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_\-]*$", max_length=100)]


def check_schedule(value: str | None) -> str | None:
    problem = None if value is None else schedule_problem(value)
    if problem:
        raise ValueError(problem)
    return value


