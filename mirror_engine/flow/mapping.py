"""A flow's offset mapping as stored on the target: the offset-syncs and the engine's progress, read incrementally.

The engine advances a partition's progress only past offset-syncs the target acknowledged, so reading
the progress topic up to its end first and the offset-syncs topic up to its end second yields, for
every progress record read, all the syncs it relies on: translation up to that progress is exact.
"""

from __future__ import annotations

from confluent_kafka import Message

from mirror_engine.flow.internal_topics import InternalTopics
from mirror_engine.flow.offset_map import OffsetMap
from mirror_engine.flow.progress import PartitionProgress, latest_records, parse_progress
from mirror_engine.kafka import InternalTopicReader, decoded
from mirror_engine.mm2 import OffsetSync
from mirror_engine.plan import MigrationPlan

TopicPartitionKey = tuple[str, int]


class FlowMapping:
    """Source-to-target offsets of one plan's flow; `refresh()` reads what the engine stored since the last call."""

    def __init__(self, plan: MigrationPlan, target_config: dict[str, str]) -> None:
        self.plan = plan
        self.topics = InternalTopics.for_plan(plan)
        self.offsets = OffsetMap()
        self.progress: dict[TopicPartitionKey, PartitionProgress] = {}
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
        try:
            records = self._reader.read_new(timeout_s)
        except TimeoutError:
            raise TimeoutError(f"reading the flow's mapping from {self.topics.progress} and "
                               f"{self.topics.offset_syncs} took more than {timeout_s:.0f} s") from None
        for _message, item in decoded(self._latest_progress_and_syncs(records), self._decode):
            if isinstance(item, OffsetSync):
                self.offsets.add(item)
                continue
            key, progress = item
            if progress is None:
                self.progress.pop(key, None)
                continue
            self.progress[key] = progress
            if progress.target_position >= 0:
                self.offsets.set_positions(*key, progress.position, progress.target_position)
        return self

    def _latest_progress_and_syncs(self, records: list[Message]) -> list[Message]:
        """Each partition's latest progress record (`latest_records`: a checkpoint round reads every record the copy
        stored since the round before, one per moving partition per progress interval), then every offset-sync in
        the order read. A progress record and a sync change different parts of a partition's map: their order
        does not matter."""
        progress = self.topics.progress
        return [*latest_records(m for m in records if m.topic() == progress),
                *(m for m in records if m.topic() != progress)]

    def _decode(self, message: Message) -> OffsetSync | tuple[TopicPartitionKey, PartitionProgress | None]:
        if message.topic() == self.topics.offset_syncs:
            return OffsetSync.from_record(message.key(), message.value())
        return parse_progress(message.key(), message.value())

    def translate(self, topic: str, partition: int, source_offset: int) -> int | None:
        """Exact target offset for a committed source offset; None while it is not copied yet."""
        return self.offsets.translate(topic, partition, source_offset)

    def reverse(self, topic: str, partition: int, target_offset: int) -> int | None:
        return self.offsets.reverse(topic, partition, target_offset)

    def copied_position(self, topic: str, partition: int) -> int | None:
        progress = self.progress.get((topic, partition))
        return progress.position if progress else None
