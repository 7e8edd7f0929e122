"""A plan's schedule is accepted exactly when Airflow would schedule it (croniter, as Airflow checks it)."""

from __future__ import annotations

import pytest

from mirror_engine.plan import schedule_problem


@pytest.mark.parametrize("schedule", [
    "0 2 * * *", "@daily", "@once", "@continuous", "@annually", "*/15 * * * mon-fri",
    # Forms Airflow's cron timetables take that a five-number reading refuses: last day of the month, the
    # second Monday, "no specific value".
    "0 0 L * *", "0 0 * * 1#2", "0 0 ? * *",
])
def test_schedules_airflow_accepts_are_accepted(schedule):
    assert schedule_problem(schedule) is None


@pytest.mark.parametrize(("schedule", "said"), [
    ("61 * * * *", "out of range"),
    ("every day at noon", "cron expression"),
    ("@sometimes", "unknown preset"),
    ("0 0 * * 8", "out of range"),
])
def test_schedules_airflow_refuses_are_refused_with_a_sentence(schedule, said):
    problem = schedule_problem(schedule)
    assert problem is not None and said in problem and repr(schedule) in problem
