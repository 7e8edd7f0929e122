"""A flow's offset mapping as stored on the target: the offset-syncs and the engine's progress, read incrementally.

The engine advances a partition's progress only past offset-syncs the target acknowledged, so reading
the progress topic up to its end first and the offset-syncs topic up to its end second yields, for
every progress record read, all the syncs it relies on: translation up to that progress is exact.
"""

from __future__ import annotations

import time

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, TopicPartition
from confluent_kafka.admin import OffsetSpec

from mirror_engine.clusters import admin_client
from mirror_engine.internal_topics import InternalTopics
from mirror_engine.mm2_formats import OffsetSync
from mirror_engine.offset_map import OffsetMap
from mirror_engine.plan import MigrationPlan
from mirror_engine.progress import PartitionProgress, parse_progress
from mirror_engine.topic_tail import SHORT_FETCH_WAIT, assign_known, consume_available
from mirror_engine.topics import list_offsets

TopicPartitionKey = tuple[str, int]


class FlowMapping:
    """Source-to-target offsets of one plan's flow; `refresh()` reads what the engine stored since the last call."""

    def __init__(self, plan: MigrationPlan, target_config: dict[str, str]) -> None:
        self.plan = plan
        self.topics = InternalTopics.for_plan(plan)
        self.offsets = OffsetMap()
        self.progress: dict[TopicPartitionKey, PartitionProgress] = {}
        self._admin = admin_client(target_config)
        self._consumer = Consumer({
            **target_config, "group.id": "mirror-engine-mapping", "enable.auto.commit": False,
            "isolation.level": "read_committed", "enable.partition.eof": True, **SHORT_FETCH_WAIT,
        })
        assign_known(self._consumer, [TopicPartition(self.topics.progress, 0, OFFSET_BEGINNING),
                                      TopicPartition(self.topics.offset_syncs, 0, OFFSET_BEGINNING)])
        self._read_up_to = {self.topics.progress: 0, self.topics.offset_syncs: 0}

    def close(self) -> None:
        self._consumer.close()

    def __enter__(self) -> FlowMapping:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def refresh(self, timeout_s: float = 30.0) -> FlowMapping:
        # Progress end first, syncs end second (see the module docstring).
        ends = {}
        for topic in (self.topics.progress, self.topics.offset_syncs):
            ends[topic] = list_offsets(self._admin, [TopicPartition(topic, 0)], OffsetSpec.latest())[(topic, 0)]
        deadline = time.monotonic() + timeout_s
        while any(self._read_up_to[topic] < end for topic, end in ends.items()):
            for message in consume_available(self._consumer, 0.2):
                error = message.error()
                if error is not None:
                    if error.code() != KafkaError._PARTITION_EOF:
                        raise RuntimeError(f"reading {message.topic()} on the target: {error.str()}")
                    self._read_up_to[message.topic()] = max(self._read_up_to[message.topic()], message.offset())
                    continue
                self._read_up_to[message.topic()] = message.offset() + 1
                if message.topic() == self.topics.offset_syncs:
                    self.offsets.add(OffsetSync.from_record(message.key(), message.value()))
                    continue
                key, progress = parse_progress(message.key(), message.value())
                if progress is None:
                    self.progress.pop(key, None)
                    continue
                self.progress[key] = progress
                if progress.target_position >= 0:
                    self.offsets.set_positions(*key, progress.position, progress.target_position)
            if time.monotonic() > deadline:
                raise TimeoutError(f"reading the flow's mapping from {self.topics.progress} and "
                                   f"{self.topics.offset_syncs} took more than {timeout_s:.0f} s")
        return self

    def translate(self, topic: str, partition: int, source_offset: int) -> int | None:
        """Exact target offset for a committed source offset; None while it is not copied yet."""
        return self.offsets.translate(topic, partition, source_offset)

    def reverse(self, topic: str, partition: int, target_offset: int) -> int | None:
        return self.offsets.reverse(topic, partition, target_offset)

    def copied_position(self, topic: str, partition: int) -> int | None:
        progress = self.progress.get((topic, partition))
        return progress.position if progress else None
