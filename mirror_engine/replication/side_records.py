"""The records the engine writes beside the copy, through the copy's producer: offset-syncs (by its
`OffsetSyncWriter`), progress and heartbeats; and what a writer of whole ranges (the Spark backfill) stores after
its copy, under the same contract.

They go through the copy's main producer (in exactly-once mode the one producer, whose transaction holds the
records too) because the progress must prove what was copied: a partition's progress never passes an
offset-sync the target has not acknowledged, nor a record whose acknowledgement has not come back
(`PartitionState.copied_position`), whichever of the copy's producers wrote it (`RecordProducers`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from confluent_kafka import KafkaError, Message, Producer

from mirror_engine.flow import InternalTopics, PartitionProgress, progress_key, progress_value
from mirror_engine.kafka import TopicPartitionKey
from mirror_engine.mm2 import Heartbeat
from mirror_engine.replication.copy_contract import produce_when_room, target_producer_settings
from mirror_engine.replication.faults import EngineError, Faults
from mirror_engine.replication.offset_syncs import PURGED, OffsetSyncWriter
from mirror_engine.replication.partition_state import PartitionState


@dataclass
class CopiedRange:
    """A source partition's range copied whole to the target: where its progress goes, and its offset-syncs (decided
    by `SyncOnDelta` over the range)."""

    topic: str
    partition: int
    position: int  # the source offset after the range
    target_position: int  # the target offset after its copy
    syncs: list[tuple[int, int]] = field(default_factory=list)


class SideRecordWriter:
    """Progress and heartbeats; offset-syncs through `offset_syncs`, which this writer's progress never passes."""

    def __init__(self, topics: InternalTopics, source_alias: str, target_alias: str,
                 states: dict[TopicPartitionKey, PartitionState], producer: Callable[[], Producer],
                 faults: Faults) -> None:
        self.topics = topics
        self.source_alias = source_alias
        self.target_alias = target_alias
        self.states = states
        self._producer = producer
        self.faults = faults
        self.offset_syncs = OffsetSyncWriter(topics.offset_syncs, producer, states, faults)

    @classmethod
    def for_ranges(cls, target_config: dict[str, str], topics: InternalTopics, source_alias: str,
                   target_alias: str) -> SideRecordWriter:
        """A writer of whole copied ranges' records (`store_ranges`), with a producer of its own that follows the
        copy contract."""
        producer = Producer(target_producer_settings(target_config, linger_ms=5, compression="none",
                                                     batch_bytes=1_000_000))
        return cls(topics, source_alias, target_alias, {}, lambda: producer, Faults())

    def on_delivery(self, error: KafkaError | None, message: Message) -> None:
        """The delivery report of a progress, heartbeat or status record: a failure stops the engine."""
        if error is not None and error.code() not in PURGED:  # purged: the fatal error that caused it says why
            self.faults.fatal = self.faults.fatal or f"writing to {message.topic()} on the target failed: {error.str()}"

    # ------------------------------------------------------------------ progress
    def write_progress(self, keys: list[TopicPartitionKey] | None = None, force: bool = False) -> None:
        """Store the copied position of these partitions (all by default) where it moved (or always: `force`)."""
        self.offset_syncs.send_unsent()
        states = self.states.values() if keys is None else [self.states[key] for key in keys]
        producer, topic, cluster = self._producer(), self.topics.progress, self.source_alias
        for state in states:
            position = state.copied_position()
            if position != state.stored_position or force:
                produce_when_room(producer, topic, progress_value(position, state.progress_target_position(),
                                                                  state.topic_id),
                                  progress_key(cluster, state.topic, state.partition), 0, self.on_delivery, 0, None)
                state.stored_position = position

    def store_ranges(self, ranges: list[CopiedRange], timeout_s: float = 60.0) -> None:
        """Store whole copied ranges: their offset-syncs and, once the target acknowledged every one, each
        partition's progress at the end of its range (the progress never passes a sync the target has not
        acknowledged, as in the engine)."""
        for copied in ranges:
            self.offset_syncs.write(copied.topic, copied.partition, copied.syncs)
        self._flush(timeout_s, "the target did not acknowledge the offset-syncs")
        producer = self._producer()
        for copied in ranges:
            progress = PartitionProgress(copied.topic, copied.partition, copied.position, copied.target_position)
            produce_when_room(producer, self.topics.progress, progress.value(), progress.key(self.source_alias), 0,
                              self.on_delivery, 0, None)
        self._flush(timeout_s, "the target did not acknowledge the backfill's progress")

    def _flush(self, timeout_s: float, unacknowledged: str) -> None:
        if self._producer().flush(timeout_s):
            raise EngineError(unacknowledged)
        if self.faults.fatal:
            raise EngineError(self.faults.fatal)

    # ------------------------------------------------------------------ heartbeats
    def send_heartbeat(self) -> None:
        beat = Heartbeat(self.source_alias, self.target_alias, int(time.time() * 1000))
        produce_when_room(self._producer(), self.topics.heartbeats, beat.record_value(), beat.record_key(), 0,
                          self.on_delivery, beat.timestamp_ms, None)
