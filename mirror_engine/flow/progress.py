"""The engine's progress, stored on the target in a compacted topic, one record per source partition.

Records follow the shape of MirrorMaker 2's Connect offsets (key `[name, {cluster, partition,
topic}]`, value `{"offset": last copied source offset}`) so a handover to or from MM2 can map them,
with three more fields the exact switchover needs:
- `position`: every source record below it has been copied and acknowledged (may be past
  trailing transaction markers or compaction gaps, where `offset + 1` would stop short);
- `target_position`: the target offset just after the last copied record;
- `topic_id`: the source topic's id when it was copied, to notice a deleted-and-recreated topic.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from confluent_kafka import Message
from pydantic import BaseModel, TypeAdapter

from mirror_engine.flow.internal_topics import InternalTopics
from mirror_engine.kafka import MalformedRecord, decoded, read_to_end
from mirror_engine.plan import MigrationPlan

PROGRESS_NAME = "mirror-engine"


@dataclass(frozen=True)
class PartitionProgress:
    topic: str
    partition: int
    position: int
    target_position: int
    topic_id: str = ""

    def key(self, cluster: str) -> bytes:
        return progress_key(cluster, self.topic, self.partition)

    def value(self) -> bytes:
        return json.dumps({
            "offset": self.position - 1,
            "position": self.position,
            "target_position": self.target_position,
            "topic_id": self.topic_id,
        }, separators=(",", ":")).encode()


def progress_key(cluster: str, topic: str, partition: int) -> bytes:
    # Field order as Java's HashMap iterates these keys in MM2's records: cluster, partition, topic.
    return json.dumps(
        [PROGRESS_NAME, {"cluster": cluster, "partition": partition, "topic": topic}], separators=(",", ":")
    ).encode()


class _ProgressPartition(BaseModel):
    topic: str
    partition: int


class _ProgressValue(BaseModel):
    offset: int
    position: int | None = None
    target_position: int = -1
    topic_id: str = ""


_PROGRESS_KEY = TypeAdapter(tuple[str, _ProgressPartition])


def parse_progress(key: bytes | None, value: bytes | None) -> tuple[tuple[str, int], PartitionProgress | None]:
    """((topic, partition), progress), or progress None for a tombstone (the partition was reset).

    Raises a ValueError (pydantic's ValidationError among them) for a record not of this format."""
    if key is None:
        raise MalformedRecord("a progress record without a key")
    _name, partition_map = _PROGRESS_KEY.validate_json(key)
    topic, partition = partition_map.topic, partition_map.partition
    if value is None:
        return (topic, partition), None
    data = _ProgressValue.model_validate_json(value)
    position = data.position if data.position is not None else data.offset + 1
    return (topic, partition), PartitionProgress(topic, partition, position, data.target_position, data.topic_id)


def _decode(message: Message) -> tuple[tuple[str, int], PartitionProgress | None]:
    return parse_progress(message.key(), message.value())


def load_progress(config: dict[str, str], topic: str) -> dict[tuple[str, int], PartitionProgress]:
    """The latest progress of every source partition recorded in the progress topic."""
    latest: dict[tuple[str, int], PartitionProgress] = {}
    for _message, (key, progress) in decoded(read_to_end(config, topic), _decode):
        if progress is None:
            latest.pop(key, None)
        else:
            latest[key] = progress
    return latest


def managed_target_topics(plan: MigrationPlan, target_config: dict[str, str]) -> frozenset[str]:
    """The target topics this plan's flow has copied into (it has stored progress for them)."""
    topic = InternalTopics.for_plan(plan).progress
    policy = plan.policy()
    return frozenset(policy.format_remote_topic(plan.source.alias, t) for t, _ in load_progress(target_config, topic))
