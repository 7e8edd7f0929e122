"""The engine's status at many partitions: a bounded record with the partitions that matter most, rates and lag kept
on the partitions, and every row built only when the HTTP status is asked."""

from __future__ import annotations

import json
import tracemalloc
from types import SimpleNamespace

from mirror_engine.observe import STATUS_PARTITIONS, assigned_partitions
from mirror_engine.plan import plan_from_dict
from mirror_engine.replication import PartitionState
from mirror_engine.replication.testing import Faults, StatusReporter

PLAN = plan_from_dict({"name": "p", "source": {"alias": "a", "bootstrap_servers": "127.0.0.1:1"},
                       "target": {"alias": "b", "bootstrap_servers": "127.0.0.1:2"}})


class KeptRecords:
    def __init__(self) -> None:
        self.values: list[bytes] = []

    def produce(self, _topic: str, value: bytes, *_args) -> None:
        self.values.append(value)


def _reporter(topics: int, per_topic: int) -> tuple[StatusReporter, KeptRecords]:
    states = {}
    for t in range(topics):
        for p in range(per_topic):
            state = PartitionState(f"orders.t{t:04d}", p, f"a.orders.t{t:04d}", 0)
            state.end_known = 100
            states[(state.topic, p)] = state
    producer = KeptRecords()
    clients = SimpleNamespace(producer=producer, target_config={}, source_admin=None)
    return StatusReporter(PLAN, "w1", "single", False, "status-topic", states, Faults(), lambda: "running",
                          lambda *_: None, clients), producer  # type: ignore[arg-type]


def _copy(state: PartitionState, records: int) -> None:
    state.produced_next = state.acked_next = state.produced_next + records
    state.records_copied += records
    state.bytes_read += 100 * records


def test_the_record_names_the_stopped_and_most_behind_first_and_the_http_status_every_partition(monkeypatch):
    from mirror_engine.replication.testing import status_reporter

    # The source's end of a stopped partition (not fetched) is asked at each interval.
    monkeypatch.setattr(status_reporter, "list_offsets", lambda _admin, tps, *_a, **_k: {(tp.topic, tp.partition): 100
                                                                                          for tp in tps})
    reporter, producer = _reporter(100, 10)  # 1,000 partitions
    states = reporter.states
    for key, state in states.items():
        _copy(state, 100 if key[1] else 40)  # partition 0 of each topic 60 behind
    states[("orders.t0007", 3)].failed = "records 3..9 were deleted"
    _copy(states[("orders.t0042", 0)], -30)  # 90 behind: the most
    reporter.publish()
    for state in states.values():
        _copy(state, 5 if state.lag < 90 else 0)
    reporter.publish()

    record = json.loads(producer.values[-1])
    shown = [(p["topic"], p["partition"]) for p in record["partitions"]]
    assert len(shown) == STATUS_PARTITIONS and not record["partitions_complete"]
    assert shown[:3] == [("orders.t0007", 3), ("orders.t0042", 0), ("orders.t0000", 0)], shown[:3]
    assert record["partition_count"] == 1000 and record["partitions_behind"] == 100
    assert assigned_partitions(record) == set(states)
    assert record["lag"] == 99 * 55 + 90  # 60 - 5 behind on each partition 0, 90 on the one that copied none
    assert record["records_copied"] == sum(state.records_copied for state in states.values())
    assert record["records_per_s"] > 0 and record["partitions"][2]["records_per_s"] > 0
    assert record["partitions"][1]["records_per_s"] == 0  # nothing copied since the interval before

    served = reporter.snapshot
    assert [(p["topic"], p["partition"]) for p in served["partitions"]] == sorted(states)
    rows = {(p["topic"], p["partition"]): p for p in served["partitions"]}
    assert all(rows[(p["topic"], p["partition"])] == p for p in record["partitions"])
    assert rows[("orders.t0099", 9)]["lag"] == 0 and rows[("orders.t0099", 9)]["records_copied"] == 105


def test_the_log_names_the_partitions_the_status_names_first(caplog, monkeypatch):
    from mirror_engine.replication.testing import status_reporter

    monkeypatch.setattr(status_reporter, "list_offsets", lambda _admin, tps, *_a, **_k: {(tp.topic, tp.partition): 100
                                                                                          for tp in tps})
    reporter, producer = _reporter(100, 10)  # 1,000 partitions
    states = reporter.states
    for key, state in states.items():
        _copy(state, 100 if key[1] else 100 - key[0].count("7") - 1)  # partition 0 of each topic 1 or more behind
    states[("orders.t0090", 3)].failed = "records 3..9 were deleted"  # stopped, though none behind
    _copy(states[("orders.t0042", 0)], -30)  # 31 behind: the most
    reporter.publish()

    with caplog.at_level("INFO", logger="mirror_engine.replication.engine"):
        reporter.log_progress(10.0)
    lines = [record.getMessage() for record in caplog.records]
    assert len(lines) == 7, lines  # the summary, five partitions, "and N more": not a line per partition behind
    assert "lag 150 records (100 of 1000 partition(s) behind, 1 STOPPED)" in lines[0], lines[0]
    named = [line.split(" ->")[0].strip() for line in lines[1:6]]
    status = json.loads(producer.values[-1])
    assert named == [f"{p['topic']}[{p['partition']}]" for p in status["partitions"][:5]], (named, status)
    assert named[:3] == ["orders.t0090[3]", "orders.t0042[0]", "orders.t0077[0]"], named
    assert lines[6].strip() == "... and 96 more partition(s) behind (see `mirror-engine status`)", lines[6]


def _held_after_publish(topics: int) -> tuple[int, int]:
    """Bytes the reporter's interval leaves allocated, and the record's size."""
    reporter, producer = _reporter(topics, 10)
    reporter.publish()
    for state in reporter.states.values():
        _copy(state, 7)
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    reporter.publish()
    held = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    return held, len(producer.values[-1])


def test_an_interval_holds_no_row_per_partition():
    small_held, small_record = _held_after_publish(100)  # 1,000 partitions
    large_held, large_record = _held_after_publish(1000)  # 10,000
    assert large_record <= 64 * 1024 and small_record <= 64 * 1024
    # Before: every interval's snapshot kept a row (a dict of 16 fields) per partition, about 850 bytes each.
    assert large_held < 100 * 10_000, (small_held, large_held)


def test_an_offset_sync_in_flight_adds_no_lag():
    """A periodic offset-sync at a partition's last copied record bounds the stored progress until the target
    acknowledges it; the records were copied all the same, and the lag counted them as one behind."""
    reporter, producer = _reporter(1, 8)
    for state in reporter.states.values():
        _copy(state, 100)  # every record copied up to the end, 100
        state.syncs.in_flight.append((99, 99))  # the last record's sync, sent and not acknowledged yet
        assert state.copied_position() == 99
    reporter.publish()
    record = json.loads(producer.values[-1])
    assert record["lag"] == 0 and record["partitions_behind"] == 0, record
