"""Checking a plan's schedule (a DAG schedule: an Airflow preset or a cron expression) at load.

The CLI never schedules anything, but a plan that Airflow would refuse is refused by every command too, with
the field named, rather than only when the DAG file is parsed. The check is Airflow's own: its cron timetables
validate an expression by building a `croniter` from it, so `L`, `1#2`, `?` and names pass here as there.
"""

from __future__ import annotations

# Airflow's presets: @once and @continuous are timetables of their own, the rest are cron shorthands.
PRESETS = frozenset({"@once", "@continuous", "@hourly", "@daily", "@weekly", "@monthly", "@quarterly", "@yearly",
                     "@annually", "@midnight"})
_CRON_SHORTHANDS = {"@quarterly": "0 0 1 */3 *"}  # Airflow's; croniter knows the others itself


def schedule_problem(value: str) -> str | None:
    """Why Airflow could not schedule `value`, or None."""
    if len(value) > 200:
        return f"is {len(value)} characters long; a schedule is a preset such as @daily or a cron expression"
    text = value.strip()
    if text.startswith("@"):
        return None if text.lower() in PRESETS else f"unknown preset {value!r} (known: {', '.join(sorted(PRESETS))})"
    # Imported here, for a plan with a cron schedule only: croniter and dateutil were a twentieth of every command's
    # imports, the engine's start included.
    from croniter import CroniterBadCronError, CroniterBadDateError, croniter

    try:
        croniter(_CRON_SHORTHANDS.get(text, text))
    except (CroniterBadCronError, CroniterBadDateError) as error:
        return (f"{value!r} is not a cron expression Airflow can schedule ({error}); write minute hour day-of-month "
                "month day-of-week, e.g. '0 2 * * *', or a preset such as @daily")
    return None
