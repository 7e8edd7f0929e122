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

import functools
import json
import time
from collections.abc import Iterable
from dataclasses import dataclass

from confluent_kafka import OFFSET_BEGINNING, Consumer, IsolationLevel, KafkaError, Message, TopicPartition
from confluent_kafka.admin import OffsetSpec
from pydantic import BaseModel, TypeAdapter

from mirror_engine.flow.internal_topics import InternalTopics
from mirror_engine.kafka import (
    SMALL_PREFETCH,
    MalformedRecord,
    admin_client,
    assign_known,
    consume_available,
    decoded,
    existing_topics,
    list_offsets,
    read_to_end,
)
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
        return progress_value(self.position, self.target_position, self.topic_id)


def progress_value(position: int, target_position: int, topic_id: str) -> bytes:
    """A partition's progress record value: json.dumps({"offset": ..., "position": ..., "target_position": ...,
    "topic_id": ...}) byte for byte, without building the dict (nor a `PartitionProgress`): the engine writes one a
    second for every partition that moved (10,000 at 10,000 partitions), on the copy's thread."""
    return _PROGRESS_VALUE % (position - 1, position, target_position, _json_string(topic_id))


_PROGRESS_VALUE = b'{"offset":%d,"position":%d,"target_position":%d,"topic_id":%s}'


@functools.lru_cache(maxsize=1 << 16)
def _json_string(text: str) -> bytes:
    return json.dumps(text).encode()


@functools.lru_cache(maxsize=1 << 16)
def progress_key(cluster: str, topic: str, partition: int) -> bytes:
    """A partition's key, made once per partition (10,000 a second were 4 us each).

    json.dumps([PROGRESS_NAME, {"cluster": ..., "partition": ..., "topic": ...}], separators=(",", ":")) byte for
    byte, its strings encoded once per topic: the engine's start makes the key of every partition at once (10,000
    json.dumps calls were a fifth of a second of its first assignment)."""
    # Field order as Java's HashMap iterates these keys in MM2's records: cluster, partition, topic.
    return _PROGRESS_KEY_FORMAT % (_json_string(PROGRESS_NAME), _json_string(cluster), partition, _json_string(topic))


_PROGRESS_KEY_FORMAT = b'[%b,{"cluster":%b,"partition":%d,"topic":%b}]'


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
    topic, partition = _progress_partition(key)
    if value is None:
        return (topic, partition), None
    data = _ProgressValue.model_validate_json(value)
    position = data.position if data.position is not None else data.offset + 1
    return (topic, partition), PartitionProgress(topic, partition, position, data.target_position, data.topic_id)


@functools.lru_cache(maxsize=1 << 16)
def _progress_partition(key: bytes) -> tuple[str, int]:
    """The (topic, partition) of a progress key, read once per key: a reader of a flow of 10,000 partitions meets
    each of them every second."""
    _name, partition_map = _PROGRESS_KEY.validate_json(key)
    return partition_map.topic, partition_map.partition


def _decode(message: Message) -> tuple[tuple[str, int], PartitionProgress | None]:
    return parse_progress(message.key(), message.value())


def latest_records(messages: Iterable[Message]) -> list[Message]:
    """The last record of each key, as the cleaner of a compacted topic leaves them (in the order of each key's first).

    A reader of the progress topic may count on nothing else: a fresh reader sees only these once the cleaner ran,
    and positions only move forward. Readers decode these alone: a read spans many progress intervals (a checkpoint
    round's refresh, ten of them for every moving partition; a fresh read, up to a whole uncompacted segment), and
    decoding a record costs about 6 us."""
    latest: dict[bytes | None, Message] = {}
    for message in messages:
        latest[message.key()] = message
    return list(latest.values())


def load_progress(config: dict[str, str], topic: str) -> dict[tuple[str, int], PartitionProgress]:
    """The latest progress of every source partition recorded in the progress topic."""
    latest: dict[tuple[str, int], PartitionProgress] = {}
    for _message, (key, progress) in decoded(latest_records(read_to_end(config, topic)), _decode):
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


class ProgressFollower:
    """The flow's stored progress kept in memory, read with one consumer kept open: the first `catch_up()` reads the
    progress topic from its start, each later one, and `poll()`, only what was written since.

    What a worker needs when the group gives it partitions is then a read of the last moments, whatever the flow's
    age and however many partitions it stores: the callback of the group's rebalance stays short (a read from the
    topic's start there grew with the run and outlasted the group's session). Records are kept as read and decoded
    only when asked for (`progress_of`): the workers write their partitions' progress every interval, and decoding
    them all as they come would cost the copy far more than keeping the latest of each partition."""

    def __init__(self, config: dict[str, str], topic: str, group_id: str = "mirror-engine-progress") -> None:
        self.config, self.topic, self.group_id = config, topic, group_id
        self._admin = admin_client(config)
        self._consumer: Consumer | None = None
        self._next = 0  # the next offset of partition 0 to read
        self._keys: dict[bytes, tuple[str, int]] = {}  # a record key -> its partition (each key decoded once)
        self._latest: dict[tuple[str, int], Message] = {}  # the last record read of each partition, not decoded
        self._valid: dict[tuple[str, int], PartitionProgress] = {}  # the last progress decoded of each partition
        self.records_read = 0

    def catch_up(self, settle_s: float = 2.0, timeout_s: float = 60.0) -> None:
        """Read what was written up to now. Records of a transaction still open (a worker committing its progress
        this moment) are waited for up to `settle_s`, then what is committed is enough: a transaction left open by
        a killed worker holds the topic's stable end back until the target aborts it."""
        deadline = time.monotonic() + timeout_s
        if self._consumer is None:
            if not existing_topics(self._admin, [self.topic]):
                return
            self._consumer = Consumer({**self.config, "group.id": self.group_id, "enable.auto.commit": False,
                                       "isolation.level": "read_committed", "enable.partition.eof": True,
                                       # Kept open for the engine's life: a fetch at the end waits for new records
                                       # this long instead of asking again every 10 ms.
                                       "fetch.wait.max.ms": 100, **SMALL_PREFETCH})
            # Reopened after `close()`: on from where it stopped.
            assign_known(self._consumer, [TopicPartition(self.topic, 0, self._next or OFFSET_BEGINNING)])
        partition = [TopicPartition(self.topic, 0)]
        end = list_offsets(self._admin, partition, OffsetSpec.latest())[(self.topic, 0)]
        self._read_until(end, min(deadline, time.monotonic() + settle_s))
        if self._next < end:
            stable = list_offsets(self._admin, partition, OffsetSpec.latest(),
                                  isolation_level=IsolationLevel.READ_COMMITTED)[(self.topic, 0)]
            self._read_until(stable, deadline)
            if self._next < stable:
                raise TimeoutError(f"reading {self.topic} stopped short of its end after {timeout_s:.0f} s")

    def poll(self, max_records: int = 10_000) -> None:
        """Take what has arrived, without waiting (between the copy's batches)."""
        if self._consumer is not None:
            self._apply(self._consumer.consume(max_records, timeout=0))

    def _read_until(self, end: int, deadline: float) -> None:
        assert self._consumer is not None
        while self._next < end and time.monotonic() < deadline:
            self._apply(consume_available(self._consumer, 0.2))

    def _apply(self, messages: list[Message]) -> None:
        for message in messages:
            error = message.error()
            if error is not None:
                if error.code() != KafkaError._PARTITION_EOF:
                    raise RuntimeError(f"reading {self.topic} on the target: {error.str()}")
                self._next = max(self._next, message.offset())  # past transaction markers and aborted records
                continue
            self._next = message.offset() + 1
            self.records_read += 1
            raw = message.key() or b""
            key = self._keys.get(raw)
            if key is None:
                found = decoded([message], _decode)  # a malformed record is skipped (and said once)
                if not found:
                    continue
                key = found[0][1][0]
                if len(self._keys) < 1_000_000:
                    self._keys[raw] = key
            self._latest[key] = message

    def progress_of(self, keys: list[tuple[str, int]] | None = None) -> dict[tuple[str, int], PartitionProgress]:
        """The latest progress of these partitions (all by default) among those read; a partition reset (a
        tombstone) or never stored is left out. A malformed latest record is skipped: the one before it stands."""
        wanted = list(self._latest) if keys is None else [key for key in keys if key in self._latest]
        for _message, (key, progress) in decoded([self._latest.pop(key) for key in wanted], _decode):
            if progress is None:
                self._valid.pop(key, None)
            else:
                self._valid[key] = progress
        return {key: self._valid[key] for key in (self._valid if keys is None else keys) if key in self._valid}

    def close(self) -> None:
        if self._consumer is not None:
            self._consumer.close()
            self._consumer = None
