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
import time
from dataclasses import dataclass

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, TopicPartition

from mirror_engine.clusters import admin_client
from mirror_engine.internal_topics import InternalTopics
from mirror_engine.plan import MigrationPlan
from mirror_engine.topic_tail import SHORT_FETCH_WAIT, assign_known, consume_available
from mirror_engine.topics import _RETRIABLE

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


def parse_progress(key: bytes, value: bytes | None) -> tuple[tuple[str, int], PartitionProgress | None]:
    """((topic, partition), progress), or progress None for a tombstone (the partition was reset)."""
    _name, partition_map = json.loads(key)
    topic, partition = partition_map["topic"], int(partition_map["partition"])
    if value is None:
        return (topic, partition), None
    data = json.loads(value)
    position = int(data.get("position", data["offset"] + 1))
    return (topic, partition), PartitionProgress(
        topic, partition, position, int(data.get("target_position", -1)), data.get("topic_id", "")
    )


def read_topic_to_end(config: dict[str, str], topic: str, timeout_s: float = 30.0, since_ms: int | None = None) -> list:
    """Every record of partition 0 of a small internal topic, from the beginning (or the first record
    written at or after `since_ms`) to its end (none when the topic does not exist: the flow never wrote
    it). Records of open or aborted transactions are left out.

    The consumer learns the topic's leader before it is assigned (`assign_known`: else its first fetch waits
    up to a second for librdkafka's scan of unknown topics) and stops at the end-of-partition event, which the
    broker sends within `SHORT_FETCH_WAIT` of the last record.
    """
    # Asked first, with an admin client: a consumer (it needs a group id) looks up its group's coordinator as
    # soon as it exists, which creates `__consumer_offsets` on a cluster that has none, and `plan` or a dry-run
    # must change nothing on a fresh target.
    if topic not in admin_client(config).list_topics(timeout=timeout_s).topics:  # all topics: never auto-creates
        return []
    consumer = Consumer({
        **config, "group.id": "mirror-engine-reader", "enable.auto.commit": False,
        "isolation.level": "read_committed", "enable.partition.eof": True, **SHORT_FETCH_WAIT,
    })
    try:
        deadline = time.monotonic() + timeout_s
        start = OFFSET_BEGINNING
        if since_ms is not None:
            start = _offset_for_time(consumer, topic, since_ms, deadline)
            if start < 0:  # nothing written since then
                return []
        assign_known(consumer, [TopicPartition(topic, 0, start)], timeout_s)
        records = []
        while True:
            batch = consume_available(consumer, 0.2)
            if not batch and time.monotonic() > deadline:
                raise TimeoutError(f"reading {topic} stopped short of its end after {timeout_s:.0f} s")
            for message in batch:
                error = message.error()
                if error is None:
                    records.append(message)
                elif error.code() == KafkaError._PARTITION_EOF:
                    return records
                else:
                    raise RuntimeError(f"reading {topic}: {error.str()}")
    finally:
        consumer.close()


def _offset_for_time(consumer: Consumer, topic: str, since_ms: int, deadline: float) -> int:
    """The offset of partition 0's first record at or after `since_ms` (-1: none), retrying the brief errors of a
    just-created partition whose leader is not known yet."""
    while True:
        try:
            [found] = consumer.offsets_for_times([TopicPartition(topic, 0, since_ms)],
                                                 timeout=max(0.1, deadline - time.monotonic()))
            if found.error is None:
                return int(found.offset)
            error = found.error
        except KafkaException as raised:
            error = raised.args[0]
        if error.code() not in _RETRIABLE or time.monotonic() > deadline:
            raise KafkaException(error)
        time.sleep(0.2)


def load_progress(config: dict[str, str], topic: str) -> dict[tuple[str, int], PartitionProgress]:
    """The latest progress of every source partition recorded in the progress topic."""
    latest: dict[tuple[str, int], PartitionProgress] = {}
    for message in read_topic_to_end(config, topic):
        key, progress = parse_progress(message.key(), message.value())
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
