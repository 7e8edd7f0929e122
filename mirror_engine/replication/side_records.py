"""The records the engine writes beside the copy, through the copy's producer: offset-syncs, progress, heartbeats.

They share the copy's producer (and, in exactly-once mode, its transaction) because the progress must
prove what was copied: a partition's progress never passes an offset-sync the target has not
acknowledged (`PartitionState.copied_position`).
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable

from confluent_kafka import KafkaError, Message, Producer

from mirror_engine.flow import InternalTopics, PartitionProgress
from mirror_engine.mm2 import Heartbeat, OffsetSync
from mirror_engine.replication.copy_contract import produce_when_room
from mirror_engine.replication.faults import Faults
from mirror_engine.replication.partition_state import PartitionState

TopicPartitionKey = tuple[str, int]


class SideRecordWriter:
    """Offset-syncs (MM2's format, at every change of delta and periodically), progress and heartbeats."""

    def __init__(self, topics: InternalTopics, source_alias: str, target_alias: str,
                 states: dict[TopicPartitionKey, PartitionState], producer: Callable[[], Producer],
                 faults: Faults) -> None:
        self.topics = topics
        self.source_alias = source_alias
        self.target_alias = target_alias
        self.states = states
        self._producer = producer
        self.faults = faults
        self.unsent_syncs: deque[tuple[bytes, bytes]] = deque()  # held back by a full queue, oldest first

    # ------------------------------------------------------------------ offset-syncs
    def send_sync(self, state: PartitionState, source: int, target: int) -> None:
        """Write an offset-sync, or hold it back while the producer's queue is full.

        Called from the copied records' delivery callbacks, while the copy loop waits for room in that same
        queue: it must neither wait here (inside the producer's poll) nor raise. A held-back sync stays in
        `syncs_in_flight`, so the stored progress cannot pass it, and every later sync waits behind it: they
        are acknowledged in the order they were made (`on_delivery` pops the oldest).
        """
        sync = OffsetSync(state.topic, state.partition, source, target)
        state.syncs_in_flight.append((source, target))
        state.last_synced_source = source
        record = (sync.record_value(), sync.record_key())
        if not self.unsent_syncs:
            try:
                self._producer().produce(self.topics.offset_syncs, record[0], record[1], 0, self.on_delivery)
                return
            except BufferError:
                pass
        self.unsent_syncs.append(record)

    def send_unsent_syncs(self) -> None:
        """Write the held-back offset-syncs in their order, waiting for room (never from a delivery callback)."""
        producer = self._producer()
        while self.unsent_syncs:
            value, key = self.unsent_syncs[0]
            produce_when_room(producer, self.topics.offset_syncs, value, key, 0, self.on_delivery, 0, None)
            self.unsent_syncs.popleft()

    def send_periodic_syncs(self) -> None:
        """Refresh syncs of partitions that moved: MM2's readers translate from the latest sync before an offset."""
        self.send_unsent_syncs()
        for state in self.states.values():
            if state.acked_source > state.last_synced_source and not state.failed:
                self.send_sync(state, state.acked_source, state.acked_target)

    def on_delivery(self, error: KafkaError | None, message: Message) -> None:
        if error is not None and error.code() in (KafkaError._PURGE_QUEUE, KafkaError._PURGE_INFLIGHT):
            return  # purged by an aborted transaction or a fatal producer error, which says why itself
        if message.topic() == self.topics.offset_syncs:
            sync = OffsetSync.from_record(message.key(), message.value())
            if error is not None:  # the first fatal error says why: later ones are its echoes (purged records)
                self.faults.fatal = self.faults.fatal or \
                    f"writing offset-sync for {sync.topic}[{sync.partition}] failed: {error.str()}"
                return
            state = self.states.get((sync.topic, sync.partition))
            if state is not None and state.syncs_in_flight and state.syncs_in_flight[0][0] == sync.upstream_offset:
                state.syncs_in_flight.popleft()
        elif error is not None:
            self.faults.fatal = self.faults.fatal or f"writing to {message.topic()} on the target failed: {error.str()}"

    # ------------------------------------------------------------------ progress
    def write_progress(self, keys: list[TopicPartitionKey] | None = None, force: bool = False) -> None:
        """Store the copied position of these partitions (all by default) where it moved (or always: `force`)."""
        self.send_unsent_syncs()
        states = self.states.values() if keys is None else [self.states[key] for key in keys]
        producer = self._producer()
        for state in states:
            position = state.copied_position()
            if position != state.stored_position or force:
                progress = PartitionProgress(
                    state.topic, state.partition, position, state.progress_target_position(), state.topic_id
                )
                produce_when_room(producer, self.topics.progress, progress.value(), progress.key(self.source_alias),
                                  0, self.on_delivery, 0, None)
                state.stored_position = position

    # ------------------------------------------------------------------ heartbeats
    def send_heartbeat(self) -> None:
        beat = Heartbeat(self.source_alias, self.target_alias, int(time.time() * 1000))
        produce_when_room(self._producer(), self.topics.heartbeats, beat.record_value(), beat.record_key(), 0,
                          self.on_delivery, beat.timestamp_ms, None)
