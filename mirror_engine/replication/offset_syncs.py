"""The offset-sync writer: the one owner of a flow's offset-syncs, as MirrorMaker 2's `OffsetSyncWriter`.

It owns the decision (`SyncOnDelta`: at a partition's first record and wherever (target - source) changes), the
writes to the offset-syncs topic (MM2's format, partition 0), the syncs in flight, which bound the stored
progress, and the hold-back of syncs while the producer's queue is full. The engine's writer uses the copy's main
producer, the one that writes the progress (and, in exactly-once mode, the records too, in its transaction), so
that the progress proves what was copied: it never passes a sync that producer has not seen acknowledged, nor a
record whose acknowledgement has not come back from the producer that wrote it (`RecordProducers`). A writer of
whole ranges (the Spark backfill) has its own producer under the same copy contract.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Mapping
from typing import Protocol

from confluent_kafka import KafkaError, KafkaException, Message, Producer

from mirror_engine.kafka import TopicPartitionKey
from mirror_engine.mm2 import OffsetSync
from mirror_engine.replication.copy_contract import produce_when_room
from mirror_engine.replication.faults import Faults

# Callbacks of purged records: an aborted transaction or a fatal producer error, which says why itself.
PURGED = (KafkaError._PURGE_QUEUE, KafkaError._PURGE_INFLIGHT)


class SyncOnDelta:
    """When to write an offset-sync: at the first record and wherever (target - source) changes."""

    __slots__ = ("delta",)

    def __init__(self) -> None:
        self.delta: int | None = None

    def due(self, source: int, target: int) -> bool:
        if target - source == self.delta:
            return False
        self.delta = target - source
        return True


class PartitionSyncs(SyncOnDelta):
    """One partition's offset-syncs, kept by the `OffsetSyncWriter` (a field of its `PartitionState`).

    Invariant: `in_flight` holds, oldest first, every sync of the partition sent or held back and not yet
    acknowledged by the target; the partition's stored progress never passes the oldest of them
    (`PartitionState.copied_position`). `delta` is (target - source) at the last acknowledged record that
    carries a delivery callback, or after a reconciled tail.
    """

    __slots__ = ("in_flight", "last_synced_source", "last_synced_target")

    def __init__(self) -> None:
        super().__init__()
        # (source, target) in send order: a list, not a deque, as it holds a few at most (an empty deque is 624
        # bytes, 6 MiB at 10,000 partitions; an empty list 56).
        self.in_flight: list[tuple[int, int]] = []
        self.last_synced_source = -1  # the record of the last offset-sync sent
        self.last_synced_target = -1  # and its target offset

    def oldest(self) -> tuple[int, int] | None:
        """The oldest sync not yet acknowledged: the bound of the stored progress."""
        return self.in_flight[0] if self.in_flight else None


class PartitionState(Protocol):
    """What the writer reads and keeps of a partition's copy state (`partition_state.PartitionState`)."""

    topic: str
    partition: int
    acked_source: int
    acked_target: int
    failed: str
    syncs: PartitionSyncs


class OffsetSyncWriter:
    """Offset-syncs at every change of delta and periodically, written in the order they were made.

    It is built from its collaborators, so a unit test gives it a stand-in producer (anything with `produce` and
    `poll`) and plain states: the decision is tested without a broker. The engine gives it the copy's producer
    (a callable: the producer is rebuilt at times) and its partitions' states; a writer of whole ranges gives it
    a producer of its own and no states (`SideRecordWriter.for_ranges`).
    """

    def __init__(self, topic: str, producer: Callable[[], Producer],
                 states: Mapping[TopicPartitionKey, PartitionState], faults: Faults) -> None:
        self.topic = topic
        self._producer = producer  # called at each write: the engine rebuilds its producer at times
        self.states = states
        self.faults = faults
        self.unsent: deque[tuple[bytes, bytes]] = deque()  # held back by a full queue, oldest first

    # ------------------------------------------------------------------ the decision
    def acknowledged(self, state: PartitionState, source: int, target: int, boundary: bool) -> bool:
        """The target acknowledged, at `target`, the record at `source` that carries a delivery callback
        (`boundary`: the first of a run or the first after a source gap). A sync where the delta changed.

        False when it changed inside a run without source gaps: another producer wrote into the target
        partition, offsets can no longer be translated exactly; nothing is written and the caller stops the
        partition."""
        syncs = state.syncs
        if not boundary and syncs.delta is not None and target - source != syncs.delta:
            return False
        if syncs.due(source, target):
            self.send(state, source, target)
        return True

    def continue_after(self, state: PartitionState, delta: int, syncs: Iterable[tuple[int, int]]) -> None:
        """Records found on the target past the stored progress count as copied: write the syncs found for them
        (by the same rule) and carry their last record's delta on."""
        state.syncs.delta = delta
        for source, target in syncs:
            self.send(state, source, target)

    def send_periodic(self, offset_lag_max: int) -> None:
        """Refresh the syncs of partitions whose copy moved more than `offset_lag_max` target offsets past their last
        one (MM2's `offset.lag.max`): MM2's readers translate an offset past the latest sync before it to that
        sync's target offset + 1, so between two calls they re-read at most that many records or what the
        partition copied since the last call. This project's own translation needs none of these
        (`PartitionOffsetMap`); a partition copying slowly no longer costs a sync every interval."""
        self.send_unsent()
        for state in self.states.values():
            syncs = state.syncs
            if state.acked_source > syncs.last_synced_source and not state.failed \
                    and state.acked_target - syncs.last_synced_target > offset_lag_max:
                self.send(state, state.acked_source, state.acked_target)

    # ------------------------------------------------------------------ writes
    def send(self, state: PartitionState, source: int, target: int) -> None:
        """Write an offset-sync, or hold it back while the producer's queue is full.

        Called from the copied records' delivery callbacks, while the copy loop waits for room in that same
        queue: it must neither wait here (inside the producer's poll) nor raise. A held-back sync stays in
        flight, so the stored progress cannot pass it, and every later sync waits behind it: they are
        acknowledged in the order they were made (`on_delivery` pops the oldest).
        """
        state.syncs.in_flight.append((source, target))
        state.syncs.last_synced_source, state.syncs.last_synced_target = source, target
        sync = OffsetSync(state.topic, state.partition, source, target)
        record = (sync.record_value(), sync.record_key())
        if not self.unsent:
            try:
                self._producer().produce(self.topic, record[0], record[1], 0, self.on_delivery)
                return
            except BufferError:
                pass
            except KafkaException as error:
                # A producer failed for good (fenced by another engine of the flow, say): nothing more commits, and
                # raised from a delivery callback the error would break every later callback of the same poll.
                if error.args[0].fatal():
                    self.faults.producer_failed(error.args[0], f"writing offset-sync for {state.topic}"
                                                               f"[{state.partition}] failed: {error.args[0].str()}")
                    return
        self.unsent.append(record)

    def send_unsent(self) -> None:
        """Write the held-back offset-syncs in their order, waiting for room (never from a delivery callback)."""
        producer = self._producer()
        while self.unsent:
            value, key = self.unsent[0]
            produce_when_room(producer, self.topic, value, key, 0, self.on_delivery, 0, None)
            self.unsent.popleft()

    def write(self, topic: str, partition: int, syncs: Iterable[tuple[int, int]]) -> None:
        """Write syncs decided elsewhere (by `SyncOnDelta`, over a copied range), in their order."""
        producer = self._producer()
        for source, target in syncs:
            sync = OffsetSync(topic, partition, source, target)
            produce_when_room(producer, self.topic, sync.record_value(), sync.record_key(), 0,
                              self.on_delivery, 0, None)

    def on_delivery(self, error: KafkaError | None, message: Message) -> None:
        if error is not None and error.code() in PURGED:
            return
        sync = OffsetSync.from_record(message.key(), message.value())
        if error is not None:  # the first fatal error says why: later ones are its echoes (purged records)
            self.faults.fatal = self.faults.fatal or \
                f"writing offset-sync for {sync.topic}[{sync.partition}] failed: {error.str()}"
            return
        state = self.states.get((sync.topic, sync.partition))
        if state is not None and state.syncs.in_flight and state.syncs.in_flight[0][0] == sync.upstream_offset:
            del state.syncs.in_flight[0]
