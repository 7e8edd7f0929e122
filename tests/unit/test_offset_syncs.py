"""The offset-sync writer's decision, writes, in-flight bound and hold-back, without a broker (a fake producer)."""

from __future__ import annotations

from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

from confluent_kafka import KafkaError, Message

from mirror_engine.flow import InternalTopics, PartitionProgress
from mirror_engine.mm2 import OffsetSync
from mirror_engine.plan import plan_from_dict
from mirror_engine.replication import PartitionState, SideRecordWriter
from mirror_engine.replication.testing import Faults, Transactional

PLAN = plan_from_dict({
    "name": "shop",
    "source": {"alias": "src", "bootstrap_servers": "127.0.0.1:19092"},
    "target": {"alias": "tgt", "bootstrap_servers": "127.0.0.1:29092"},
    "topics": {"include": ["orders.*"]},
})
TOPICS = InternalTopics.for_plan(PLAN)


@dataclass
class Acked:
    """What the producer hands a record's delivery callback: the target offset and the record's timestamp."""

    target: int
    timestamp_ms: int = 1_000

    def offset(self) -> int:
        return self.target

    def timestamp(self) -> tuple[int, int]:
        return (0, self.timestamp_ms)


class FakeProducer:
    """Records what is produced; `full` makes produce() raise BufferError as a full local queue does (a poll
    empties it)."""

    def __init__(self) -> None:
        self.produced: list[tuple[str, bytes | None, bytes | None, int, Any]] = []
        self.full = False
        self.polls = 0

    def produce(self, topic: str, value: bytes | None = None, key: bytes | None = None, partition: int = -1,
                on_delivery: Any = None, *_rest: Any) -> None:
        if self.full:
            raise BufferError("queue full")
        self.produced.append((topic, value, key, partition, on_delivery))

    def poll(self, _timeout: float = 0) -> int:
        self.polls += 1
        self.full = False
        return 0

    def syncs(self) -> list[OffsetSync]:
        return [OffsetSync.from_record(key, value) for topic, value, key, _p, _cb in self.produced
                if topic == TOPICS.offset_syncs]

    def deliver_syncs(self, error: KafkaError | None = None) -> None:
        """The target acknowledges (or refuses) every offset-sync produced so far, in order."""
        for topic, value, key, partition, callback in self.produced:
            if topic == TOPICS.offset_syncs:
                callback(error, Message(topic=topic, partition=partition, key=key, value=value))


class TransactionalProducer(FakeProducer):
    """A transactional producer: `flush` has the target acknowledge what was produced since (the offset-syncs'
    callbacks run); each commit notes how many records were produced by then."""

    def __init__(self) -> None:
        super().__init__()
        self.acknowledged = 0
        self.commits: list[int] = []

    def flush(self, _timeout: float = 0) -> int:
        self.full = False
        pending, self.acknowledged = self.produced[self.acknowledged:], len(self.produced)
        for topic, value, key, partition, callback in pending:
            if topic == TOPICS.offset_syncs:
                callback(None, Message(topic=topic, partition=partition, key=key, value=value))
        return 0

    def commit_transaction(self, _timeout: float = 0) -> None:
        self.commits.append(len(self.produced))

    def begin_transaction(self) -> None:
        pass


class Parts:
    """One partition of `orders` copied from `start`, with the writer of its offset-syncs."""

    def __init__(self, start: int = 100) -> None:
        self.producer = FakeProducer()
        self.faults = Faults()
        self.failures: list[str] = []
        self.states: dict[tuple[str, int], PartitionState] = {}
        self.side = SideRecordWriter(TOPICS, "src", "tgt", self.states, lambda: self.producer, self.faults)
        self.writer = self.side.offset_syncs
        self.state = self.track("orders", 0, start)

    def track(self, topic: str, partition: int, start: int) -> PartitionState:
        state = PartitionState(topic, partition, topic, start, offset_syncs=self.writer,
                               on_failure=lambda _s, reason, _offset: self.failures.append(reason))
        self.states[(topic, partition)] = state
        return state

    def write_progress(self) -> None:
        self.side.write_progress()

    def periodic(self, offset_lag_max: int = 0) -> None:
        self.writer.send_periodic(offset_lag_max)

    def continue_after(self, state: PartitionState, last_source: int, last_target: int,
                       syncs: list[tuple[int, int]]) -> None:
        """A reconciled tail: copying goes on after it, its offset-syncs written (as the assigner does)."""
        state.acked_source, state.acked_target = last_source, last_target
        self.writer.continue_after(state, last_target - last_source, syncs)


def _pairs(producer: FakeProducer) -> list[tuple[int, int]]:
    return [(sync.upstream_offset, sync.downstream_offset) for sync in producer.syncs()]


def test_the_first_acknowledged_record_writes_an_offset_sync_in_mm2_format_to_partition_0():
    parts = Parts()
    parts.state.callback(100, True, 1)(None, Acked(0))
    [(topic, value, key, partition, _cb)] = parts.producer.produced
    assert (topic, partition) == ("mm2-offset-syncs.src.internal", 0)
    sync = OffsetSync("orders", 0, 100, 0)
    assert (key, value) == (sync.record_key(), sync.record_value())


def test_no_sync_while_the_delta_holds_and_one_at_each_change():
    parts = Parts()
    parts.state.callback(100, True, 1)(None, Acked(0))
    parts.state.callback(109, False, 10)(None, Acked(9))  # same delta: nothing
    parts.state.callback(110, True, 11)(None, Acked(10))  # a new run, same delta: nothing
    parts.state.callback(115, True, 12)(None, Acked(11))  # offsets 111..114 were transaction markers
    assert _pairs(parts.producer) == [(100, 0), (115, 11)] and not parts.failures


def test_a_delta_change_inside_a_run_stops_the_partition_and_writes_no_sync():
    parts = Parts()
    parts.state.callback(100, True, 1)(None, Acked(0))
    parts.state.callback(109, False, 10)(None, Acked(12))  # three foreign records landed in between
    assert parts.failures and "another producer" in parts.failures[0]
    assert _pairs(parts.producer) == [(100, 0)]


def test_the_progress_stops_at_a_sync_until_the_target_acknowledges_it():
    parts = Parts()
    state = parts.state
    state.callback(100, True, 1)(None, Acked(0))
    state.callback(109, False, 10)(None, Acked(9))
    state.produced_next = 110
    assert state.copied_position() == 100 and state.progress_target_position() == 0
    parts.producer.deliver_syncs()
    assert state.copied_position() == 110 and state.progress_target_position() == 10


def test_a_sync_acknowledged_out_of_its_order_is_not_taken_for_the_oldest():
    parts = Parts()
    state = parts.state
    state.callback(100, True, 1)(None, Acked(0))
    state.callback(105, True, 2)(None, Acked(1))
    state.produced_next = 106
    _first, second = [entry for entry in parts.producer.produced]
    second[4](None, Message(topic=second[0], partition=0, key=second[2], value=second[1]))
    assert state.copied_position() == 100  # the oldest, (100, 0), is still in flight


def test_a_full_queue_holds_syncs_back_in_order_and_the_progress_writes_them_first():
    parts = Parts()
    state = parts.state
    parts.producer.full = True
    state.callback(100, True, 1)(None, Acked(0))  # inside the producer's poll: held back, never waited for
    parts.producer.full = False
    state.callback(105, True, 2)(None, Acked(1))  # room now, but it waits behind the held one
    assert parts.producer.produced == [] and parts.producer.polls == 0
    state.produced_next = 106
    assert state.copied_position() == 100  # a held-back sync bounds the progress as one in flight does
    parts.write_progress()
    topics = [entry[0] for entry in parts.producer.produced]
    assert topics == [TOPICS.offset_syncs, TOPICS.offset_syncs, TOPICS.progress]
    assert _pairs(parts.producer) == [(100, 0), (105, 1)]
    progress = parts.producer.produced[2]
    assert progress[2] == PartitionProgress("orders", 0, 100, 0).key("src")
    assert progress[1] == PartitionProgress("orders", 0, 100, 0).value()


def test_a_transaction_stores_the_progress_of_every_record_it_commits_with_syncs_held_back():
    """Exactly-once: a restart goes on from the committed progress and takes nothing past it on the target as
    copied, so the progress a transaction commits must reach every record it commits, held-back syncs or not."""
    parts = Parts()
    producer = parts.producer = TransactionalProducer()
    state = parts.state
    producer.full = True
    state.callback(100, True, 1)(None, Acked(0))  # held back by the full queue
    state.callback(105, True, 2)(None, Acked(1))  # waits behind it
    state.produced_next = 106
    Transactional(SimpleNamespace(producer=producer), parts.side, parts.faults).commit()  # type: ignore[arg-type]
    committed = producer.produced[:producer.commits[-1]]
    assert _pairs(producer) == [(100, 0), (105, 1)]
    progress = [value for topic, value, _key, _p, _cb in committed if topic == TOPICS.progress]
    assert progress == [PartitionProgress("orders", 0, 106, 2).value()]  # not (100, 0): its sync was held back
    assert not parts.faults.fatal


def test_held_back_syncs_are_written_waiting_for_room():
    parts = Parts()
    parts.producer.full = True
    parts.state.callback(100, True, 1)(None, Acked(0))
    parts.producer.full = True  # still full when the periodic work comes: it serves deliveries until there is room
    parts.periodic()
    assert _pairs(parts.producer) == [(100, 0)] and parts.producer.polls >= 1


def test_periodic_syncs_refresh_partitions_that_moved_past_their_last_sync_only():
    parts = Parts()
    other = parts.track("orders", 1, 0)
    stopped = parts.track("orders", 2, 0)
    parts.state.callback(100, True, 1)(None, Acked(0))
    parts.state.callback(149, False, 50)(None, Acked(49))
    other.callback(0, True, 1)(None, Acked(0))
    stopped.callback(0, True, 1)(None, Acked(0))
    stopped.callback(9, False, 10)(None, Acked(9))
    stopped.failed = "stopped"
    parts.producer.produced.clear()
    parts.periodic()
    assert [(s.partition, s.upstream_offset, s.downstream_offset) for s in parts.producer.syncs()] == [(0, 149, 49)]
    parts.producer.produced.clear()
    parts.periodic()  # nothing moved since
    assert parts.producer.produced == []


def test_periodic_syncs_wait_until_a_partition_moved_more_than_offset_lag_max():
    # MM2's offset.lag.max: its readers translate past the latest sync to its target offset + 1, so a partition
    # 100 records past its last sync costs them at most 100 re-read records, and needs no sync yet.
    parts = Parts()
    fast = parts.track("orders", 1, 0)
    parts.state.callback(100, True, 1)(None, Acked(0))
    parts.state.callback(200, False, 101)(None, Acked(100))  # 100 target offsets past its sync
    fast.callback(0, True, 1)(None, Acked(0))
    fast.callback(101, False, 102)(None, Acked(101))  # 101 past
    parts.producer.produced.clear()
    parts.periodic(offset_lag_max=100)
    assert [(s.partition, s.upstream_offset, s.downstream_offset) for s in parts.producer.syncs()] == [(1, 101, 101)]
    parts.producer.produced.clear()
    parts.state.callback(201, False, 102)(None, Acked(101))
    parts.periodic(offset_lag_max=100)
    assert [(s.partition, s.upstream_offset, s.downstream_offset) for s in parts.producer.syncs()] == [(0, 201, 101)]


def test_a_refused_sync_is_fatal_and_names_the_partition_and_the_first_error_stays():
    parts = Parts()
    parts.state.callback(100, True, 1)(None, Acked(0))
    parts.producer.deliver_syncs(KafkaError(KafkaError.TOPIC_AUTHORIZATION_FAILED, "denied"))
    assert "offset-sync for orders[0]" in parts.faults.fatal and "denied" in parts.faults.fatal
    first = parts.faults.fatal
    parts.producer.deliver_syncs(KafkaError(KafkaError.MSG_SIZE_TOO_LARGE, "later"))
    assert parts.faults.fatal == first


def test_a_purged_sync_says_nothing_and_stays_in_flight():
    parts = Parts()
    parts.state.callback(100, True, 1)(None, Acked(0))
    parts.state.produced_next = 101
    parts.producer.deliver_syncs(KafkaError(KafkaError._PURGE_QUEUE))
    assert not parts.faults.fatal and parts.state.copied_position() == 100


def test_a_reconciled_tail_writes_its_syncs_and_carries_its_delta_on():
    parts = Parts(start=106)
    state = parts.state
    state.produced_next = state.acked_next = 106
    parts.continue_after(state, 105, 43, [(100, 40), (104, 42)])
    assert _pairs(parts.producer) == [(100, 40), (104, 42)]
    state.callback(106, True, 1)(None, Acked(44))  # the same delta as the tail's last record: no new sync
    assert _pairs(parts.producer) == [(100, 40), (104, 42)]
    state.callback(108, True, 2)(None, Acked(45))
    assert _pairs(parts.producer)[-1] == (108, 45)
