"""The backfill task's handling of consumed messages, without Kafka: offset-syncs at gaps, order, the range's end,
records already on the target not written again."""

from __future__ import annotations

from typing import Any

import pytest
from confluent_kafka import KafkaError, Message

from spark_jobs.range_copy import RangeCopier, RangeState, partition_runs


class Producer:
    """What the task's producer was given, in order."""

    def __init__(self) -> None:
        self.records: list[tuple] = []

    def produce(self, topic: str, value: Any, key: Any, partition: int, _on_delivery: Any, _callback: Any,
                timestamp: int, headers: Any) -> None:
        self.records.append((topic, partition, key, value, timestamp, headers))

    def poll(self, _timeout: float = 0) -> int:
        return 0


def _messages(offsets: list[int]) -> list[Message]:
    return [Message(topic="t", partition=0, offset=o, key=b"k%d" % o, value=b"v%d" % o,
                    headers=[("n", b"%d" % o)] if o % 2 else None, timestamp=(1, 1000 + o)) for o in offsets]


def _eof(offset: int) -> Message:
    return Message(topic="t", partition=0, offset=offset, error=KafkaError(KafkaError._PARTITION_EOF))


def _copier(already: int = 0) -> tuple[RangeCopier, RangeState, Producer]:
    copier = RangeCopier({}, {})
    copier.producer = producer = Producer()  # type: ignore[assignment]
    state = copier.states[("t", 0)] = RangeState("t", 0, "tgt.t", 100, already=already)
    return copier, state, producer


def test_offset_syncs_at_the_first_record_and_at_every_gap():
    copier, state, producer = _copier()
    assert not copier.copy_messages(state, _messages([0, 1, 2]), end=20)
    assert not copier.copy_messages(state, _messages([3, 7, 8]), end=20)  # a compacted gap: the delta changes at 7
    assert not copier.copy_messages(state, _messages([9, 10]), end=20)
    assert state.syncs == [(0, 100), (7, 104)]
    assert (state.index, state.written, state.previous) == (8, 8, 10)
    assert [r[3] for r in producer.records] == [b"v%d" % o for o in (0, 1, 2, 3, 7, 8, 9, 10)]


def test_every_field_goes_to_the_same_partition_of_the_target_topic():
    copier, state, producer = _copier()
    copier.copy_messages(state, _messages([4, 5]), end=20)
    assert producer.records == [("tgt.t", 0, b"k4", b"v4", 1004, None), ("tgt.t", 0, b"k5", b"v5", 1005, [("n", b"5")])]


def test_records_out_of_offset_order_stop_the_task():
    copier, state, _ = _copier()
    copier.copy_messages(state, _messages([5, 6]), end=20)
    with pytest.raises(RuntimeError, match=r"t\[0\]: offset 6 read after 6: records out of offset order"):
        copier.copy_messages(state, _messages([6, 7]), end=20)
    copier, state, _ = _copier()
    with pytest.raises(RuntimeError, match="out of offset order"):
        copier.copy_messages(state, _messages([1, 3, 2]), end=20)


def test_the_range_ends_before_its_end_offset_whatever_follows():
    copier, state, producer = _copier()
    assert copier.copy_messages(state, _messages([7, 8, 9, 10]), end=9)  # stops after 8, the last one below 9
    assert [r[3] for r in producer.records] == [b"v7", b"v8"] and state.index == 2
    copier, state, producer = _copier()
    assert copier.copy_messages(state, _messages([7, 12]), end=9)  # a gap across the end: 12 is not copied
    assert [r[3] for r in producer.records] == [b"v7"] and state.syncs == [(7, 100)]


def test_the_end_of_the_partition_ends_the_range_only_at_or_past_its_end_offset():
    copier, state, _ = _copier()
    # Below the end (records of an open transaction not readable yet): read on.
    assert not copier.copy_messages(state, [*_messages([0, 1]), _eof(2)], end=5)
    # At the end (the last offsets were transaction markers or aborted records): done.
    assert copier.copy_messages(state, [*_messages([2]), _eof(5)], end=5)
    assert state.index == 3


def test_a_consumer_error_stops_the_task():
    copier, state, _ = _copier()
    failed = Message(topic="t", partition=0, offset=0, error=KafkaError(KafkaError.TOPIC_AUTHORIZATION_FAILED))
    with pytest.raises(RuntimeError, match=r"t\[0\]"):
        copier.copy_messages(state, [failed], end=5)


def test_records_already_on_the_target_are_counted_and_not_written_again():
    copier, state, producer = _copier(already=3)
    copier.copy_messages(state, _messages([0, 1]), end=10)
    copier.copy_messages(state, _messages([2, 5, 6]), end=10)
    assert [r[3] for r in producer.records] == [b"v5", b"v6"]
    assert (state.index, state.written) == (5, 2)
    assert state.syncs == [(0, 100), (5, 103)]  # syncs of the whole range, the skipped part included


def test_the_cyclic_collector_is_off_while_a_task_copies_and_back_on_after(monkeypatch):
    """The header lists of every record made the collector sweep the worker's heap again and again: several times
    the copy's own work. Nothing in the copy makes reference cycles."""
    import gc

    import pyarrow as pa

    from spark_jobs.range_copy import copy_partition_ranges

    seen: list[bool] = []
    monkeypatch.setattr(RangeCopier, "copy_ranges", lambda self, parts: seen.append(gc.isenabled()))
    monkeypatch.setattr(RangeCopier, "finish", lambda self: seen.append(gc.isenabled()) or [])
    ids = pa.RecordBatch.from_pydict({"id": [0, 1]})
    assert gc.isenabled()
    list(copy_partition_ranges(iter([ids]), {}, {}, [[{}], [{}]]))
    assert seen == [False, False, False] and gc.isenabled()

    def fail(self, parts):
        raise RuntimeError("rejected")

    monkeypatch.setattr(RangeCopier, "copy_ranges", fail)
    with pytest.raises(RuntimeError, match="rejected"):
        list(copy_partition_ranges(iter([ids]), {}, {}, [[{}]]))
    assert gc.isenabled()


def test_a_batch_of_several_partitions_is_split_into_runs_of_one_partition_in_the_order_consumed():
    def of(topic: str, partition: int, offset: int) -> Message:
        return Message(topic=topic, partition=partition, offset=offset, value=b"v")

    batch = [of("a", 0, 0), of("a", 0, 1), of("b", 0, 0), of("a", 1, 5), of("a", 1, 6), of("a", 0, 2),
             Message(topic="b", partition=0, offset=1, error=KafkaError(KafkaError._PARTITION_EOF))]
    runs = [(key, [m.offset() for m in run]) for key, run in partition_runs(batch)]
    assert runs == [(("a", 0), [0, 1]), (("b", 0), [0]), (("a", 1), [5, 6]), (("a", 0), [2]), (("b", 0), [1])]
    assert list(partition_runs([])) == []
