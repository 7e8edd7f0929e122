"""The backfill task's batch handling without Kafka: headers from the flattened Arrow column, order checked."""

from __future__ import annotations

import pyarrow as pa
import pytest

from spark_jobs.range_copy import RangeCopier, RangeState, header_lists

HEADERS = pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))


def test_headers_per_row_from_the_flattened_column():
    column = pa.array([[{"key": "a", "value": b"1"}, {"key": "b", "value": None}], None, [],
                       [{"key": "c", "value": b""}]], type=HEADERS)
    assert header_lists(column) == [[("a", b"1"), ("b", None)], None, None, [("c", b"")]]
    assert header_lists(column.slice(1)) == [None, None, [("c", b"")]]
    assert header_lists(pa.array([None, []], type=HEADERS)) == [None, None]


def _batch(offsets: list[int]) -> pa.RecordBatch:
    rows = len(offsets)
    return pa.RecordBatch.from_pydict({
        "topic": ["t"] * rows, "partition": pa.array([0] * rows, pa.int32()), "offset": offsets,
        "key": pa.array([b"k"] * rows), "value": pa.array([b"v"] * rows),
        "headers": pa.array([None] * rows, type=HEADERS), "ts": list(range(rows))})


def _copier_with_everything_already_copied() -> RangeCopier:
    copier = RangeCopier({}, {("t", 0): {"target_topic": "t", "target_start": 100}})
    copier.states[("t", 0)] = RangeState("t", 0, "t", 100, already=10**9)  # nothing is produced
    return copier


def test_offset_syncs_at_the_first_record_and_at_every_gap():
    copier = _copier_with_everything_already_copied()
    copier.copy(_batch([0, 1, 2]))
    copier.copy(_batch([3, 7, 8]))  # a compacted gap: the delta changes at 7
    copier.copy(_batch([9, 10]))
    state = copier.states[("t", 0)]
    assert state.syncs == [(0, 100), (7, 104)]
    assert (state.index, state.written) == (8, 0)


def test_rows_out_of_offset_order_stop_the_task():
    copier = _copier_with_everything_already_copied()
    copier.copy(_batch([5, 6]))
    with pytest.raises(RuntimeError, match=r"t\[0\]: rows out of offset order"):
        copier.copy(_batch([6, 7]))
    with pytest.raises(RuntimeError, match="out of offset order"):
        _copier_with_everything_already_copied().copy(_batch([1, 3, 2]))


def test_the_cyclic_collector_is_off_while_a_task_copies_and_back_on_after(monkeypatch):
    """Two containers per record (the header lists) made the collector sweep the worker's heap again and again:
    several times the copy's own work. Nothing in the copy makes reference cycles."""
    import gc

    from spark_jobs.range_copy import copy_arrow_batches

    seen: list[bool] = []
    monkeypatch.setattr(RangeCopier, "copy", lambda self, batch: seen.append(gc.isenabled()))
    monkeypatch.setattr(RangeCopier, "finish", lambda self: seen.append(gc.isenabled()) or [])
    assert gc.isenabled()
    list(copy_arrow_batches(iter([_batch([0]), _batch([1])]), {}, {}))
    assert seen == [False, False, False] and gc.isenabled()

    def fail(self, batch):
        raise RuntimeError("rejected")

    monkeypatch.setattr(RangeCopier, "copy", fail)
    with pytest.raises(RuntimeError, match="rejected"):
        list(copy_arrow_batches(iter([_batch([0])]), {}, {}))
    assert gc.isenabled()
