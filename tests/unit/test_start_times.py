"""One rule for a start time, in the plan and the backfill: earliest, latest, or a time with its zone."""

from __future__ import annotations

import copy
from datetime import UTC, datetime, timedelta, timezone

import pytest

from mirror_engine.plan import PlanError, load_plan, plan_from_dict
from spark_jobs.backfill import parse_bound

GOOD = {
    "name": "shop",
    "source": {"alias": "src", "bootstrap_servers": "127.0.0.1:19092"},
    "target": {"alias": "tgt", "bootstrap_servers": "127.0.0.1:29092"},
}


def _start_from(value) -> dict:
    data = copy.deepcopy(GOOD)
    data["engine"] = {"start_from": value}
    return data


@pytest.mark.parametrize(("value", "moment"), [
    ("earliest", "earliest"),
    ("latest", "latest"),
    ("2026-01-31T00:00:00Z", datetime(2026, 1, 31, tzinfo=UTC)),
    ("2026-01-31T01:00:00+01:00", datetime(2026, 1, 31, 1, tzinfo=timezone(timedelta(hours=1)))),
])
def test_earliest_latest_and_aware_times_are_accepted(value, moment):
    start = plan_from_dict(_start_from(value)).engine.start_from
    assert start == moment
    if isinstance(start, datetime):
        assert start.timestamp() == datetime(2026, 1, 31, tzinfo=UTC).timestamp()


@pytest.mark.parametrize("value", ["2026-01-31T00:00:00", "2026-01-31", datetime(2026, 1, 31)])
def test_a_naive_start_time_is_refused_with_how_to_write_the_zone(value):
    with pytest.raises(PlanError) as raised:
        plan_from_dict(_start_from(value))
    [problem] = raised.value.problems
    assert problem.startswith("engine.start_from:")
    assert "no time zone" in problem and "2026-01-31T00:00:00Z" in problem and "+01:00" in problem


def test_a_yaml_timestamp_is_read_with_its_zone_or_refused_without(tmp_path):
    aware, naive = tmp_path / "aware.yaml", tmp_path / "naive.yaml"
    base = ("name: shop\nsource: {alias: src, bootstrap_servers: '127.0.0.1:19092'}\n"
            "target: {alias: tgt, bootstrap_servers: '127.0.0.1:29092'}\n")
    aware.write_text(base + "engine: {start_from: 2026-01-31T00:00:00Z}\n")
    naive.write_text(base + "engine: {start_from: 2026-01-31 00:00:00}\n")
    assert load_plan(aware).engine.start_from == datetime(2026, 1, 31, tzinfo=UTC)
    with pytest.raises(PlanError, match="no time zone"):
        load_plan(naive)


def test_the_backfill_bounds_follow_the_same_rule():
    assert parse_bound("2026-01-31T00:00:00Z") == datetime(2026, 1, 31, tzinfo=UTC)
    assert parse_bound("12") == 12
    with pytest.raises(ValueError, match=r"no time zone.*2026-01-31T00:00:00Z"):
        parse_bound("2026-01-31T00:00:00")
