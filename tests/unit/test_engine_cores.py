"""The engine's pure cores: a partition's bookkeeping, the control channel's state, a group's translation."""

from __future__ import annotations

import json
from dataclasses import dataclass

import pytest
from confluent_kafka import Message

from mirror_engine.cutover import translate_group
from mirror_engine.flow import ControlChanges, ControlChannel, OffsetMap
from mirror_engine.mm2 import OffsetSync
from mirror_engine.plan import PlanError, plan_from_dict
from mirror_engine.replication import OffsetSyncWriter, PartitionState
from mirror_engine.replication.testing import Faults

PLAN = {
    "name": "shop",
    "source": {"alias": "src", "bootstrap_servers": "127.0.0.1:19092"},
    "target": {"alias": "tgt", "bootstrap_servers": "127.0.0.1:29092"},
    "topics": {"include": ["orders.*"]},
}


@dataclass
class Acked:
    """What the producer hands a delivery callback: the target offset and the record's timestamp."""

    target: int
    timestamp_ms: int = 1_000

    def offset(self) -> int:
        return self.target

    def timestamp(self) -> tuple[int, int]:
        return (0, self.timestamp_ms)


class Recorder:
    """The offset-syncs a partition's writer produces (a stand-in producer) and the partition's failures."""

    def __init__(self) -> None:
        self.syncs: list[tuple[int, int]] = []
        self.failures: list[str] = []
        self.writer = OffsetSyncWriter("syncs", lambda: self, {}, Faults())  # type: ignore[arg-type,return-value]

    def produce(self, _topic: str, value: bytes, key: bytes, *_rest: object) -> None:
        sync = OffsetSync.from_record(key, value)
        self.syncs.append((sync.upstream_offset, sync.downstream_offset))


def _state(start: int = 100) -> tuple[PartitionState, Recorder]:
    recorder = Recorder()
    state = PartitionState("orders", 0, "orders", start, offset_syncs=recorder.writer,
                           on_failure=lambda _s, reason, _offset: recorder.failures.append(reason))
    return state, recorder


def test_a_run_of_records_is_copied_when_its_last_callback_is_acknowledged():
    state, recorder = _state()
    first = state.callback(100, True, 1)
    last = state.callback(109, False, 10)
    state.produced_next = 110
    assert state.copied_position() == 100 and not state.all_acknowledged()
    first(None, Acked(0))
    assert recorder.syncs == [(100, 0)]  # the first record sets the delta: an offset-sync
    assert state.copied_position() == 100  # ...which is not acknowledged yet
    del state.syncs.in_flight[0]
    assert state.copied_position() == 101
    last(None, Acked(9))
    assert state.copied_position() == 110 and state.records_copied == 10 and state.target_position == 10
    assert state.progress_target_position() == 10 and recorder.syncs == [(100, 0)] and not recorder.failures


def test_a_source_gap_changes_the_delta_and_writes_a_sync():
    state, recorder = _state()
    state.callback(100, True, 1)(None, Acked(0))
    state.syncs.in_flight.clear()
    # Offsets 101..104 are transaction markers on the source: the next record is 105 at target offset 1.
    state.callback(105, True, 2)(None, Acked(1))
    assert recorder.syncs == [(100, 0), (105, 1)] and not recorder.failures


def test_a_delta_change_inside_a_run_means_another_writer():
    state, recorder = _state()
    state.callback(100, True, 1)(None, Acked(0))
    state.callback(109, False, 10)(None, Acked(12))  # three foreign records landed in between
    assert recorder.failures and "another producer" in recorder.failures[0]


def test_the_stored_position_stops_at_an_unacknowledged_sync():
    state, _recorder = _state()
    state.callback(100, True, 1)(None, Acked(0))
    state.syncs.in_flight.clear()
    state.callback(105, True, 2)  # sent, not acknowledged
    state.callback(107, False, 4)(None, Acked(3))
    state.produced_next = 108
    state.syncs.in_flight.append((105, 1))
    # The record at 105 is on the target but not yet mapped: the progress stops before it, at its target offset.
    assert state.copied_position() == 105
    assert state.progress_target_position() == 1


def test_the_end_of_the_partition_moves_the_position_past_offset_holes():
    state, _recorder = _state()
    state.callback(100, True, 1)(None, Acked(0))
    state.syncs.in_flight.clear()
    state.produced_next = 101
    state.end_seen = 103  # a commit marker at 101..102, then the end
    assert state.copied_position() == 103
    state.failed_at = 102
    assert state.copied_position() == 102


def test_a_rejected_record_stops_the_partition():
    state, recorder = _state()

    class Refused:
        def str(self) -> str:
            return "MSG_SIZE_TOO_LARGE"

    state.callback(100, True, 1)(Refused(), None)
    assert recorder.failures and "100" in recorder.failures[0] and state.copied_position() == 100


def _control_record(key: str, value: dict | None) -> Message:
    return Message(topic="control", partition=0, offset=0, key=key.encode(),
                   value=None if value is None else json.dumps(value).encode())


def test_control_records_change_the_flow_only_when_they_change_something():
    channel = ControlChannel(plan_from_dict(PLAN), {"bootstrap.servers": "127.0.0.1:1"})
    changes = ControlChanges()
    channel._apply(_control_record("flow", {"state": "paused"}), changes)
    channel._apply(_control_record("topic:orders", {"state": "switched"}), changes)
    channel._apply(_control_record("backfill:orders-eu", {"state": "pending", "partitions": {"0": [50, 0]}}), changes)
    channel._apply(_control_record("flow", {"state": "bogus"}), changes)
    channel._apply(_control_record("topic:orders-eu", None), changes)
    assert channel.flow_state == "paused" and changes.flow_state == "paused"
    assert changes.switched == {"orders"} and changes.backfilled == set()
    assert channel.backfills["orders-eu"].partitions == {0: (50, 0)}

    again = ControlChanges()
    channel._apply(_control_record("flow", {"state": "paused"}), again)
    channel._apply(_control_record("topic:orders", {"state": "switched"}), again)
    channel._apply(_control_record("backfill:orders-eu", {"state": "done", "partitions": {"0": [50, 0]}}), again)
    assert again.flow_state is None and again.switched == set() and again.backfilled == {"orders-eu"}


def test_a_group_translates_only_what_is_copied_and_replicated():
    plan = plan_from_dict(PLAN)
    offsets = OffsetMap()
    offsets.add(OffsetSync("orders", 0, 100, 0))
    offsets.set_positions("orders", 0, 150, 50)
    result = translate_group(plan, offsets, "billing", {("orders", 0): 120, ("orders", 1): 7, ("payments", 0): 3})
    assert result.translated == {("orders", 0): 20}
    assert result.upstream == {("orders", 0): 120}
    assert result.pending == {("orders", 1): 7}
    assert result.not_replicated == ["payments"]


def test_a_group_on_the_return_flows_copies_translates_back_to_the_original_topics():
    """Flow src->tgt with tgt->src as its return flow: a group that failed over to src reads `tgt.orders` there;
    its offsets translate back through the return flow's mapping (tgt's `orders` copied to src) to `orders` on tgt.
    Copies of a third cluster's topics, and topics nobody copies, stay not replicated."""
    plan = plan_from_dict({**PLAN, "replication_policy": {"type": "default"}, "cutover": {"return_flow": "shop-back"}})
    forward, returning = OffsetMap(), OffsetMap()
    returning.add(OffsetSync("orders", 0, 40, 0))  # tgt's orders[0] from 40 on copied to src's tgt.orders[0] at 0
    returning.set_positions("orders", 0, 90, 50)
    committed = {("tgt.orders", 0): 30, ("tgt.orders", 1): 5, ("third.orders", 0): 1, ("payments", 0): 3}
    result = translate_group(plan, forward, "billing", committed, returning=returning)
    assert result.translated == {("orders", 0): 70}
    assert result.upstream == {("orders", 0): 30}
    assert result.pending == {("tgt.orders", 1): 5}  # nothing of it copied back yet
    assert result.not_replicated == ["payments", "third.orders"]
    # Without a return flow those copies are cycles, not copied: as MM2's checkpoints.
    assert translate_group(plan, forward, "billing", committed).not_replicated == [
        "payments", "tgt.orders", "third.orders"]


def test_a_return_flow_needs_the_prefixing_policy():
    with pytest.raises(PlanError, match=r"cutover\.return_flow needs replication_policy\.type: default"):
        plan_from_dict({**PLAN, "cutover": {"return_flow": "shop-back"}})
