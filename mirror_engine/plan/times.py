"""Times users give (a plan's `engine.start_from`, the backfill's `--from`/`--to`): one rule everywhere.

A time is read only with its zone (pydantic's `AwareDatetime`): a naive one would be read in the local time
zone of whichever host reads it (an Airflow worker, a Spark driver, a laptop), so the same plan would start
at different moments on different machines. A naive time is refused with a sentence showing how to write it.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import AwareDatetime, BeforeValidator, TypeAdapter, ValidationError

__all__ = ["HOW_TO_WRITE_THE_ZONE", "StartPosition", "aware_time"]

HOW_TO_WRITE_THE_ZONE = ("write its zone: 2026-01-31T00:00:00Z for UTC, or an offset such as "
                         "2026-01-31T00:00:00+01:00")
_AWARE = TypeAdapter(AwareDatetime)


def aware_time(value: Any) -> datetime:
    """`value` (ISO-8601 text or a datetime) as an aware datetime; ValueError with a sentence otherwise."""
    shown = value.isoformat() if isinstance(value, datetime) else str(value)
    if not isinstance(value, str | datetime):
        raise ValueError(f"{shown!r} is not a time; {HOW_TO_WRITE_THE_ZONE}")
    try:
        return _AWARE.validate_python(value)
    except ValidationError as error:
        if any(problem["type"] == "timezone_aware" for problem in error.errors()):
            raise ValueError(f"{shown!r} has no time zone (it would be read in the local zone of whichever host "
                             f"reads it); {HOW_TO_WRITE_THE_ZONE}") from None
        raise ValueError(f"{shown!r} is not an ISO-8601 time; {HOW_TO_WRITE_THE_ZONE}") from None


def _start_position(value: Any) -> Any:
    # Checked before the union, so a bad value gives one message instead of one per union branch.
    if value in ("earliest", "latest"):
        return value
    try:
        return aware_time(value)
    except ValueError as error:
        raise ValueError(f"must be 'earliest', 'latest' or a time with its zone: {error}") from None


StartPosition = Annotated[Literal["earliest", "latest"] | AwareDatetime, BeforeValidator(_start_position)]
"""Where a new flow starts reading a partition: `earliest`, `latest`, or an aware time."""
