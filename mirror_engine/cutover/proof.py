"""The proof of a switch: for each partition, the record just before and the record at the committed position,
fetched from both clusters, and their fingerprints (key, value, headers, timestamp) compared."""

from __future__ import annotations

import contextlib
import hashlib
import time
from dataclasses import dataclass

from confluent_kafka import (
    TIMESTAMP_LOG_APPEND_TIME,
    TIMESTAMP_NOT_AVAILABLE,
    Consumer,
    KafkaError,
    Message,
    TopicPartition,
)

from mirror_engine.cutover.waiting import SwitchError
from mirror_engine.kafka import SHORT_FETCH_WAIT, TopicPartitionKey, assign_known, consume_available
from mirror_engine.schemas import RecordRewrite, UnmappedRecord


def fingerprint(message: Message | None, with_timestamp: bool = True, rewrite: RecordRewrite | None = None) -> str:
    """Short hash of a record's key, value, headers and timestamp ("-" for no record); a source record's as its
    copy is written (`rewrite`: the plan's schema ids)."""
    if message is None:
        return "-"
    digest = hashlib.sha256()
    key, value = message.key(), message.value()
    if rewrite is not None:
        with contextlib.suppress(UnmappedRecord):  # never copied: as it is, it matches no copy
            key, value = rewrite(key, value)
    for part in (key, value):
        digest.update(b"\x00" if part is None else b"\x01" + len(part).to_bytes(4, "big") + part)
    for name, value in message.headers() or []:
        digest.update(name.encode() + b"\x00" + (b"\x00" if value is None else b"\x01" + value))
    if with_timestamp:
        digest.update(message.timestamp()[1].to_bytes(8, "big", signed=True))
    return digest.hexdigest()[:16]


def broker_timed(*messages: Message | None) -> bool:
    """A record of a LogAppendTime topic carries its broker's append time, never its producer's, and a v0 record
    (Kafka 0.9's format) none at all: a copy cannot keep the source's, so it is compared by key, value and headers."""
    return any(m is not None and m.timestamp()[0] in (TIMESTAMP_LOG_APPEND_TIME, TIMESTAMP_NOT_AVAILABLE)
               for m in messages)


PROOF_WINDOW = 64  # offsets read before each position, first


def records_around_all(config: dict[str, str], positions: dict[TopicPartitionKey, int],
                       timeout_s: float = 60.0) -> dict[TopicPartitionKey, tuple[Message | None, Message | None]]:
    """For each partition, the last committed record before its position and the first at or after it (None where
    there is none), read with one consumer for all partitions from `PROOF_WINDOW` offsets before each position.

    A partition whose window holds no record before the position (compaction or aborted transactions left none
    there) is looked up again alone, further back (`records_around`).
    """
    if not positions:
        return {}
    consumer = Consumer({**config, "group.id": "mirror-engine-proof", "enable.auto.commit": False,
                         "isolation.level": "read_committed", "enable.partition.eof": True,
                         # A window starting before the log's start starts at its start.
                         "auto.offset.reset": "earliest", **SHORT_FETCH_WAIT})
    before: dict[TopicPartitionKey, Message] = {}
    at: dict[TopicPartitionKey, Message] = {}
    pending = set(positions)
    deadline = time.monotonic() + timeout_s
    try:
        assign_known(consumer, [TopicPartition(topic, partition, max(0, offset - PROOF_WINDOW))
                                for (topic, partition), offset in positions.items()])
        while pending:
            if time.monotonic() > deadline:
                raise SwitchError(f"reading the records around the switched positions took more than {timeout_s:.0f} "
                                  f"s ({', '.join(f'{t}[{p}]' for t, p in sorted(pending))} not read)")
            finished = []
            for message in consume_available(consumer, 0.2):
                key = (message.topic(), message.partition())
                if key not in pending:  # done: what a batch holds past the first record at the position is not read
                    continue
                error = message.error()
                if error is not None:
                    if error.code() == KafkaError._PARTITION_EOF:
                        pending.discard(key)
                        finished.append(key)
                    continue
                if message.offset() < positions[key]:
                    before[key] = message
                else:
                    at[key] = message
                    pending.discard(key)
                    finished.append(key)
            if finished:
                consumer.pause([TopicPartition(*key) for key in finished])
    finally:
        consumer.close()
    return {key: (before.get(key), at.get(key)) if key in before or offset <= PROOF_WINDOW
            else records_around(config, *key, offset) for key, offset in positions.items()}


def records_around(config: dict[str, str], topic: str, partition: int,
                   offset: int) -> tuple[Message | None, Message | None]:
    """The last committed record before `offset` and the first at or after it (None where there is none)."""
    consumer = Consumer({**config, "group.id": "mirror-engine-proof", "enable.auto.commit": False,
                         "isolation.level": "read_committed", "enable.partition.eof": True, **SHORT_FETCH_WAIT})
    try:
        low, high = consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=15)
        window = PROOF_WINDOW
        while True:
            start = max(low, offset - window)
            before: Message | None = None
            at: Message | None = None
            consumer.assign([TopicPartition(topic, partition, start)])
            done = start >= high
            while not done:
                for message in consume_available(consumer, 0.2):
                    if message.error() is not None:
                        if message.error().code() == KafkaError._PARTITION_EOF:
                            done = True
                        continue
                    if message.offset() < offset:
                        before = message
                    else:
                        at, done = message, True
                        break
            if before is not None or start <= low:
                return before, at
            window *= 16  # compaction or aborted transactions left no record in the window: look further back
    finally:
        consumer.close()


@dataclass
class PartitionSwitch:
    topic: str  # source topic
    partition: int
    source_offset: int
    target_topic: str
    target_offset: int
    lag_at_switch: int  # records on the source after the group's position when it stopped
    before: str  # fingerprints, source / target
    at: str
    proof: str  # "ok", or what did not match


def prove_partition(topic: str, partition: int, source_offset: int, target_topic: str, target_offset: int, lag: int,
           source: tuple[Message | None, Message | None], target: tuple[Message | None, Message | None],
           rewrite: RecordRewrite | None = None) -> PartitionSwitch:
    """Compare the records before and at the position on both clusters (the source's as rewritten by the plan's
    schema ids, as their copies were)."""
    (source_before, source_at), (target_before, target_at) = source, target
    timed = not broker_timed(source_before, source_at, target_before, target_at)
    before = (fingerprint(source_before, timed, rewrite), fingerprint(target_before, timed))
    at = (fingerprint(source_at, timed, rewrite), fingerprint(target_at, timed))
    problems = []
    if before[0] != before[1]:
        problems.append("the records before differ")
    # A record at the source position that is not on the target yet (still being copied) proves nothing
    # wrong; a different record there does.
    if target_at is not None and at[0] != at[1]:
        problems.append("the records at the position differ")
    return PartitionSwitch(topic, partition, source_offset, target_topic, target_offset, lag,
                           f"{before[0]}/{before[1]}", f"{at[0]}/{at[1]}", "; ".join(problems) or "ok")
