"""Exact restart without transactions: what of the target, past the stored progress, is already a copy.

Invariant (the copy contract): the engine is the only writer of its target partitions and its producer
is idempotent and gapless, so the records on a target partition past the stored target position P_t
are copies, in order, of the source records past the stored source position P_s: the n-th record after
P_t is the n-th committed record after P_s (the source's offset holes, such as transaction markers,
skipped). A crash between copying and storing the progress leaves such a tail; taking the partition
again, the engine walks the source forward by the tail's length, checks the first and the last pair by
fingerprint, and goes on after the last one. When they disagree (another writer touched the target
partition) it goes on from the stored progress and says so.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from confluent_kafka import TIMESTAMP_LOG_APPEND_TIME, Consumer, KafkaError, Message, TopicPartition

from mirror_engine.kafka import TopicPartitionKey
from mirror_engine.replication.copy_contract import fingerprint
from mirror_engine.replication.offset_syncs import SyncOnDelta
from mirror_engine.schemas import RecordRewrite, UnmappedRecord

log = logging.getLogger("mirror_engine.replication.engine")

NOTHING = b""  # no record where one was expected: matches no fingerprint


@dataclass(frozen=True)
class TargetTail:
    """A taken partition whose target holds records past the stored progress."""

    topic: str
    partition: int
    target_topic: str
    source_position: int  # P_s: the next source record to copy, as stored
    target_position: int  # P_t: where its copy goes, as stored
    target_end: int  # the target partition's end now

    @property
    def length(self) -> int:
        return self.target_end - self.target_position


@dataclass
class Reconciled:
    """Where copying goes on: the tail counted as copied, with the offset-syncs it needs."""

    position: int  # the source offset after the tail's last record
    target_position: int
    records: int
    last_source: int
    syncs: list[tuple[int, int]] = field(default_factory=list)  # (source, target) at every change of delta


class SourceWalk:
    """The committed source records after P_s, paired one by one with the target's tail (pure)."""

    def __init__(self, tail: TargetTail) -> None:
        self.tail = tail
        self.seen = 0
        self.first: bytes | None = None
        self.last: bytes | None = None
        self.last_source = -1
        self.syncs: list[tuple[int, int]] = []
        self._rule = SyncOnDelta()

    @property
    def done(self) -> bool:
        return self.seen >= self.tail.length

    def add(self, offset: int, record_fingerprint: bytes) -> None:
        if self.done:
            return
        target = self.tail.target_position + self.seen
        if self._rule.due(offset, target):
            self.syncs.append((offset, target))
        if self.seen == 0:
            self.first = record_fingerprint
        self.seen += 1
        self.last, self.last_source = record_fingerprint, offset

    def verdict(self, target_first: bytes | None, target_last: bytes | None) -> Reconciled | str:
        """The reconciled position, or why the tail is not the copy of the source records after P_s."""
        if not self.done:
            return f"the source has {self.seen} record(s) after {self.tail.source_position}, the target's tail " \
                   f"{self.tail.length}"
        if target_first != self.first or target_last != self.last:
            return "the target's records past the stored progress are not the source's next records"
        return Reconciled(self.last_source + 1, self.tail.target_end, self.seen, self.last_source, self.syncs)


def _fingerprint(message: Message, rewrite: RecordRewrite | None = None) -> bytes:
    """A record's fingerprint; a source record's as its copy is written (`rewrite`: the plan's schema ids)."""
    # A LogAppendTime record's timestamp is its own broker's: a copy's differs by nature, so it is left out.
    kind, timestamp = message.timestamp()
    key, value = message.key(), message.value()
    if rewrite is not None:
        with contextlib.suppress(UnmappedRecord):  # never copied: its fingerprint as it is matches no copy
            key, value = rewrite(key, value)
    return fingerprint(key, value, message.headers(), -1 if kind == TIMESTAMP_LOG_APPEND_TIME else timestamp)


def _read_one_each(consumer: Consumer, wanted: dict[TopicPartitionKey, int], deadline: float
                   ) -> dict[TopicPartitionKey, bytes]:
    """The fingerprint of the target record at each wanted offset (NOTHING where there is none)."""
    consumer.assign([TopicPartition(topic, partition, offset) for (topic, partition), offset in wanted.items()])
    found: dict[TopicPartitionKey, bytes] = {}
    while len(found) < len(wanted) and time.monotonic() < deadline:
        for message in consumer.consume(len(wanted), timeout=0.2):
            key = (message.topic(), message.partition())
            if key in found or key not in wanted:
                continue
            error = message.error()
            if error is None:
                # A record past the wanted offset means the offset is a hole: nothing there to match.
                found[key] = _fingerprint(message) if message.offset() == wanted[key] else NOTHING
            elif error.code() == KafkaError._PARTITION_EOF:
                found[key] = NOTHING
    consumer.unassign()
    return found


def reconcile_tails(source_config: dict[str, str], target_config: dict[str, str], tails: list[TargetTail],
                    timeout_s: float = 60.0, rewrite_of: Callable[[str], RecordRewrite | None] = lambda _: None,
                    ) -> dict[TopicPartitionKey, Reconciled | str]:
    """For each tail, the reconciled position or why the stored progress stands (keyed by source partition).
    `rewrite_of`: a topic's schema-id rewrite, which its copies carry."""
    if not tails:
        return {}
    deadline = time.monotonic() + timeout_s
    reader = {"enable.auto.commit": False, "enable.partition.eof": True, "group.id": "mirror-engine-reconcile",
              "fetch.max.bytes": 8 * 1024 * 1024, "queued.max.messages.kbytes": 16 * 1024}
    target = Consumer({**target_config, **reader})
    try:
        firsts = _read_one_each(target, {(t.target_topic, t.partition): t.target_position for t in tails}, deadline)
        lasts = _read_one_each(target, {(t.target_topic, t.partition): t.target_end - 1 for t in tails}, deadline)
    finally:
        target.close()
    walks = {(t.topic, t.partition): SourceWalk(t) for t in tails}
    rewrites = {t.topic: rewrite_of(t.topic) for t in tails}
    source = Consumer({**source_config, **reader, "isolation.level": "read_committed"})
    try:
        source.assign([TopicPartition(t.topic, t.partition, t.source_position) for t in tails])
        ended: set[TopicPartitionKey] = set()
        while not all(walk.done for walk in walks.values()) and time.monotonic() < deadline:
            for message in source.consume(10_000, timeout=0.2):
                key = (message.topic(), message.partition())
                error = message.error()
                if error is not None:
                    if error.code() == KafkaError._PARTITION_EOF:
                        ended.add(key)
                    continue
                walks[key].add(message.offset(), _fingerprint(message, rewrites[key[0]]))
            if ended and all(walk.done or key in ended for key, walk in walks.items()):
                break
    finally:
        source.close()
    results: dict[TopicPartitionKey, Reconciled | str] = {}
    for tail in tails:
        key, target_key = (tail.topic, tail.partition), (tail.target_topic, tail.partition)
        if target_key not in firsts or target_key not in lasts:
            results[key] = f"the target's records {tail.target_position}..{tail.target_end - 1} could not be read " \
                           f"within {timeout_s:.0f} s"
        else:
            results[key] = walks[key].verdict(firsts[target_key], lasts[target_key])
    return results
