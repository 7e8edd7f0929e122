"""The readiness check "a live engine copies every planned partition" from bounded status records."""

from __future__ import annotations

import time
from types import SimpleNamespace

from mirror_engine.cutover.testing import EngineCopying
from mirror_engine.observe import status_record
from mirror_engine.plan import plan_from_dict

PLAN = plan_from_dict({"name": "p", "source": {"alias": "src", "bootstrap_servers": "127.0.0.1:1"},
                       "target": {"alias": "tgt", "bootstrap_servers": "127.0.0.1:2"}, "topics": {"include": ["t.*"]}})


def _status(worker: str, keys: list[tuple[str, int]]) -> dict:
    parts = [{"topic": t, "partition": p, "lag": 0, "lag_ms": 0, "records_per_s": 0.0, "records_copied": 0,
              "failed": None} for t, p in keys]
    now_ms = int(time.time() * 1000)
    summary = {"worker": worker, "state": "running", "mode": "worker", "updated_ms": now_ms, "interval_s": 5.0,
               "lag": 0, "records_per_s": 0.0, "last_error": None}
    return status_record(summary, parts, keys, len(keys))


def _check(planned: set[tuple[str, int]], statuses: list[dict]) -> EngineCopying:
    check = EngineCopying(PLAN, {}, {})
    check._watch = SimpleNamespace(refresh=lambda: None, live_statuses=lambda: statuses,
                                   planned_partitions=lambda: dict.fromkeys(planned, 0),
                                   control=SimpleNamespace(backfills={}))
    return check


def test_workers_with_hundreds_of_partitions_each_cover_the_plan_or_name_what_is_missing():
    planned = {(f"t{t}", p) for t in range(40) for p in range(10)}  # 400 partitions, more than a record lists
    first, second = sorted(planned)[:200], sorted(planned)[200:]
    assert _check(planned, [_status("w1", first), _status("w2", second)]).check().done
    missing = _check(planned, [_status("w1", first), _status("w2", second[:-1])]).check()
    assert not missing.done and "399 of 400" in missing.progress and "t9[9]" in missing.progress, missing.progress
    too_many = [{**_status("w1", first), "assigned": None}, _status("w2", second[:-1])]  # only the count
    counted = _check(planned, too_many).check()
    assert not counted.done and "399 of 400" in counted.progress, counted.progress
