"""A flow's offset mapping as stored on the target: the offset-syncs and the engine's progress, read incrementally.

The engine advances a partition's progress only past offset-syncs the target acknowledged, so reading
the progress topic up to its end first and the offset-syncs topic up to its end second yields, for
every progress record read, all the syncs it relies on: translation up to that progress is exact.
"""

from __future__ import annotations

from collections.abc import Collection

from confluent_kafka import Message

from mirror_engine.flow.internal_topics import InternalTopics
from mirror_engine.flow.offset_map import OffsetMap, PartitionOffsetMap
from mirror_engine.flow.progress import PartitionProgress, parse_progress
from mirror_engine.kafka import InternalTopicReader, TopicPartitionKey, decoded
from mirror_engine.mm2 import OffsetSync
from mirror_engine.plan import MigrationPlan


class FlowMapping:
    """Source-to-target offsets of one plan's flow; `refresh()` reads what the engine stored since the last call.

    Given `partitions`, it keeps and translates those source partitions only (the others are pending to it): one
    group's switch reads the whole flow's records all the same, but decodes the offset-syncs of its own partitions
    only, matched by their key's bytes (MM2's binary key: one encoding per partition).

    `topics`: another flow's topics to read instead of the plan's own, e.g. the return flow's on the plan's source
    (`InternalTopics.of_return_flow`), with `target_config` that flow's target."""

    def __init__(self, plan: MigrationPlan, target_config: dict[str, str],
                 partitions: Collection[TopicPartitionKey] | None = None, *,
                 topics: InternalTopics | None = None) -> None:
        self.plan = plan
        self.partitions = None if partitions is None else frozenset(partitions)
        self._sync_keys = None if self.partitions is None else frozenset(
            OffsetSync(topic, partition, 0, 0).record_key() for topic, partition in self.partitions)
        self.topics = InternalTopics.for_plan(plan) if topics is None else topics
        self.offsets = OffsetMap()
        self.progress: dict[TopicPartitionKey, PartitionProgress] = {}
        # Each partition's latest progress record read and not yet applied (key -> record): the compacted topic's
        # reader may count on nothing else (`latest_records`), and decoding one costs about 6 us.
        self._unapplied_progress: dict[bytes | None, Message] = {}
        self._maps_by_key: dict[bytes | None, PartitionOffsetMap] = {}  # an offset-sync's key -> its partition's map
        # Progress first: each read asks its end before the syncs' end (see the module docstring).
        self._reader = InternalTopicReader(target_config, [self.topics.progress, self.topics.offset_syncs],
                                           "mirror-engine-mapping")

    def close(self) -> None:
        self._reader.close()

    def __enter__(self) -> FlowMapping:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def refresh(self, timeout_s: float = 30.0) -> FlowMapping:
        """Read what the engine stored since the last call, as it arrives: each offset-sync is added at once and
        each partition's latest progress record is kept, to be decoded and applied once both topics are read to
        the ends asked (see the module docstring). A read cut short by a timeout keeps its syncs, and its
        progress for the next call."""
        progress_topic = self.topics.progress
        try:
            for batch in self._reader.new_batches(timeout_s):
                syncs = []
                for message in batch:
                    if message.topic() == progress_topic:
                        self._unapplied_progress[message.key()] = message
                    elif self._sync_keys is None or message.key() in self._sync_keys:
                        syncs.append(message)
                decoded(syncs, self._add_sync)
        except TimeoutError:
            raise TimeoutError(f"reading the flow's mapping from {self.topics.progress} and "
                               f"{self.topics.offset_syncs} took more than {timeout_s:.0f} s") from None
        latest, self._unapplied_progress = list(self._unapplied_progress.values()), {}
        for _message, (key, progress) in decoded(latest, self._decode):
            if self.partitions is not None and key not in self.partitions:
                continue
            if progress is None:
                self.progress.pop(key, None)
                continue
            self.progress[key] = progress
            if progress.target_position >= 0:
                self.offsets.set_positions(*key, progress.position, progress.target_position)
        return self

    def _add_sync(self, message: Message) -> None:
        """Add an offset-sync to its partition's map; the key (topic and partition) is decoded once per partition:
        a fresh read of a long flow meets every partition's key at every sync interval."""
        key, value = message.key(), message.value()
        partition_map = self._maps_by_key.get(key)
        if partition_map is None:
            sync = OffsetSync.from_record(key, value)
            self.offsets.add(sync)
            partition_map = self.offsets.partition(sync.topic, sync.partition)
            assert partition_map is not None
            self._maps_by_key[key] = partition_map
            return
        partition_map.add_sync(*OffsetSync.offsets_of_value(value))

    def _decode(self, message: Message) -> tuple[TopicPartitionKey, PartitionProgress | None]:
        return parse_progress(message.key(), message.value())

    def translate(self, topic: str, partition: int, source_offset: int) -> int | None:
        """Exact target offset for a committed source offset; None while it is not copied yet."""
        return self.offsets.translate(topic, partition, source_offset)

    def reverse(self, topic: str, partition: int, target_offset: int) -> int | None:
        return self.offsets.reverse(topic, partition, target_offset)

    def copied_position(self, topic: str, partition: int) -> int | None:
        progress = self.progress.get((topic, partition))
        return progress.position if progress else None
