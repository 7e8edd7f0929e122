"""The backfill's Spark task: copy the source ranges [start, end) of a few partitions to the same target partitions.

The task reads its partitions with a consumer of its own (librdkafka, `read_committed`, as the engine reads) and
writes through the copy contract (`mirror_engine.replication.copy_contract`): an idempotent, gapless producer,
the same partition number, key, value, headers and timestamp, and an offset-sync wherever (target - source)
changes. Per record it does what the engine's copy loop does: the consumed message's fields straight into one
`produce()`, nothing converted. The records never pass through Spark's JVM: reading them with Spark's Kafka
source and handing them to Python as Arrow cost about twice the CPU of the whole copy in a fresh session (the
JVM's compilation of that path included), more than the engine spends on the same records (bench/README.md).

Order: each source partition is copied by one task, read in offset order and written to its target partition by
the task's one idempotent producer, so the target holds the range in the source's order; a record below one
already seen stops the task. A task copies its partitions side by side (the job gives each core a share of them,
`backfill.copy_ranges`): one consumer, one producer and one final wait for the target's acknowledgements per task,
not per partition, which were most of a small partition's time. The producer reports deliveries only when they
fail (`delivery.report.only.error`), so no Python callback runs per record. The cyclic garbage collector is off
while a task copies. This module imports no pyspark: the Python worker loads only what the copy needs.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import OffsetSpec

from mirror_engine.kafka import admin_client, list_offsets
from mirror_engine.replication import SyncOnDelta, produce_when_room, target_producer_settings
from mirror_engine.schemas import RecordRewrite, RecordRewrites, UnmappedRecord

SUMMARY_SCHEMA = "topic string, partition int, records long, written long, syncs string"
BATCH = 10_000  # records taken from the consumer at a time
STALL_S = 120.0  # a range that yields nothing for this long fails its task (a re-run resumes)
# The engine's consumer settings (`replication.clients`) for one partition: bounded prefetch, fetched again
# soon (librdkafka waits 1 s by default once its prefetch is full, which stalled a task at every refill).
SOURCE_SETTINGS = {
    "group.id": "mirror-engine-backfill",
    "enable.auto.commit": False,
    "enable.auto.offset.store": False,
    "isolation.level": "read_committed",  # aborted records are not copied, as by the engine
    "enable.partition.eof": True,
    # Records the source's retention removed since the range was planned are skipped (what Spark's Kafka
    # source did with failOnDataLoss=false): the range starts at the earliest record still there.
    "auto.offset.reset": "earliest",
    "fetch.max.bytes": 1024 * 1024,
    "max.partition.fetch.bytes": 1024 * 1024,
    "queued.min.messages": BATCH,
    "queued.max.messages.kbytes": 8 * 1024,
    "fetch.queue.backoff.ms": 10,
}


@dataclass
class RangeState:
    """One partition's copy in a task. Invariant: the `index`-th record of the range (from 0) lands at
    target offset `target_start + index`; the first `already` of them were on the target before the task
    started (a re-run or a retried task) and are not written again."""

    topic: str
    partition: int
    target_topic: str
    target_start: int
    already: int
    index: int = 0
    written: int = 0
    previous: int = -1  # the last source offset seen
    rule: SyncOnDelta = field(default_factory=SyncOnDelta)
    syncs: list[tuple[int, int]] = field(default_factory=list)
    rewrite: RecordRewrite | None = None  # the plan's schema-id rewrite of the topic's records, as the engine's


class RangeCopier:
    """Copies the ranges of a task's partitions, read by one consumer and written by one producer; `finish()` waits
    for every acknowledgement."""

    def __init__(self, source_config: dict[str, str], target_config: dict[str, str],
                 rewrites: RecordRewrites | None = None) -> None:
        self.source_config = source_config
        self.target_config = target_config
        self.rewrites = rewrites
        self.states: dict[tuple[str, int], RangeState] = {}
        self.errors: list[str] = []
        self.producer: Producer | None = None

    def _states(self, parts: list[dict]) -> list[RangeState]:
        """Each part's state, the records already on the target past its range's start counted (the copy contract)."""
        new = [part for part in parts if (part["topic"], part["partition"]) not in self.states]
        if new:
            # The target's ends of a share's partitions in a few requests, not one per partition.
            ends = list_offsets(admin_client(self.target_config),
                                [TopicPartition(part["target_topic"], part["partition"]) for part in new],
                                OffsetSpec.latest(), timeout_s=30)
            for part in new:
                self.states[(part["topic"], part["partition"])] = RangeState(
                    part["topic"], part["partition"], part["target_topic"], part["target_start"],
                    max(0, ends[(part["target_topic"], part["partition"])] - part["target_start"]),
                    rewrite=self.rewrites.of(part["topic"]) if self.rewrites else None)
        if self.producer is None:
            settings = target_producer_settings(self.target_config, linger_ms=20, compression="lz4",
                                                batch_bytes=1_048_576)
            self.producer = Producer({**settings, "delivery.report.only.error": True,
                                      "on_delivery": self._on_failed_delivery})
        return [self.states[(part["topic"], part["partition"])] for part in parts]

    def _on_failed_delivery(self, error: Any, _message: Any) -> None:
        if error is not None:
            self.errors.append(error.str())

    def copy_ranges(self, parts: list[dict]) -> None:
        """Copy the source range [part["start"], part["end"]) of each part's partition (keys: topic, partition, start,
        end, target_topic, target_start), all read by one consumer. Each partition's records reach `copy_messages` in
        offset order, a run of them at a time; a partition read to its range's end is paused."""
        reading = {(state.topic, state.partition): (state, part["start"], part["end"])
                   for state, part in zip(self._states(parts), parts, strict=True) if part["end"] > part["start"]}
        if not reading:
            return
        consumer = Consumer({**self.source_config, **SOURCE_SETTINGS})
        try:
            consumer.assign([TopicPartition(topic, partition, start)
                             for (topic, partition), (_state, start, _end) in reading.items()])
            last_progress = time.monotonic()
            while reading:
                messages = consumer.consume(BATCH, 0.2)
                if not messages:
                    if time.monotonic() - last_progress > STALL_S:
                        state, start, end = min(reading.values(), key=lambda e: (e[0].topic, e[0].partition))
                        at = state.previous + 1 if state.previous >= 0 else start
                        raise RuntimeError(f"{state.topic}[{state.partition}]: nothing read for {STALL_S:.0f} s at "
                                           f"offset {at}, before the range's end {end}; the task can be run again")
                    continue
                last_progress = time.monotonic()
                for key, run in partition_runs(messages):
                    entry = reading.get(key)
                    if entry is not None and self.copy_messages(entry[0], run, entry[2]):
                        del reading[key]
                        consumer.pause([TopicPartition(*key)])  # what follows the range is the engine's
        finally:
            consumer.close()

    def copy_messages(self, state: RangeState, messages: list[Any], end: int) -> bool:
        """Copy consumed messages of `state`'s partition (in offset order) up to the range's `end`; True once the range
        is read to its end. An offset-sync is recorded at the range's first record and wherever the source offsets
        have a gap (compacted or transactional history: the delta changes there)."""
        producer, topic, partition = self.producer, state.target_topic, state.partition
        assert producer is not None
        produce, rule, syncs = producer.produce, state.rule, state.syncs
        index, already, target_start = state.index, state.already, state.target_start
        expected = state.previous + 1 if state.previous >= 0 else -1  # the next offset when there is no gap
        done = False
        written = 0
        for message in messages:
            error = message.error()
            if error is not None:
                if error.code() != KafkaError._PARTITION_EOF:
                    raise RuntimeError(f"{state.topic}[{state.partition}]: {error.str()}")
                if message.offset() >= end:  # everything below the end is read (markers or aborted records last)
                    done = True
                    break
                continue  # the records below the end are not readable yet (a transaction still open)
            offset = message.offset()
            if offset != expected:  # the first record, a gap, or the end
                if offset >= end:
                    done = True
                    break
                if offset < expected:
                    raise RuntimeError(f"{state.topic}[{state.partition}]: offset {offset} read after {expected - 1}: "
                                       "records out of offset order")
                if rule.due(offset, target_start + index):
                    syncs.append((offset, target_start + index))
            expected = offset + 1
            if index >= already:
                stamp = message.timestamp()[1]
                key, value = message.key(), message.value()
                if state.rewrite is not None:
                    try:
                        key, value = state.rewrite(key, value)
                    except UnmappedRecord as unmapped:
                        raise RuntimeError(f"{state.topic}[{state.partition}]: the record at offset {offset} cannot "
                                           f"be copied: {unmapped}") from None
                try:
                    # All positional (topic, value, key, partition, on_delivery, callback, timestamp, headers).
                    produce(topic, value, key, partition, None, None, stamp, message.headers())
                except BufferError:
                    produce_when_room(producer, topic, value, key, partition, None, stamp, message.headers())
                written += 1
            index += 1
            if expected >= end:
                done = True
                break
        state.index, state.written = index, state.written + written
        if expected > 0:
            state.previous = expected - 1
        producer.poll(0)
        return done

    def finish(self) -> list[dict]:
        """Wait for the target to acknowledge everything; one summary per partition."""
        if self.producer is not None and self.producer.flush(300):
            self.errors.append("records still unacknowledged after 300 s")
        if self.errors:
            raise RuntimeError(f"the target rejected backfilled records: {self.errors[:3]}")
        return [{"topic": s.topic, "partition": s.partition, "records": s.index, "written": s.written,
                 "syncs": s.syncs} for s in self.states.values()]


def partition_runs(messages: list[Any]) -> Iterator[tuple[tuple[str, int], list[Any]]]:
    """The consumed messages as runs of one partition each, with its (topic, partition), in the order consumed: a
    consumer of several partitions hands out each fetch's records of one partition together."""
    start, key = 0, None
    for index, message in enumerate(messages):
        at = (message.topic(), message.partition())
        if at != key:
            if key is not None:
                yield key, messages[start:index]
            start, key = index, at
    if key is not None:
        yield key, messages[start:]


def copy_partition_ranges(batches: Iterator[Any], source_config: dict[str, str], target_config: dict[str, str],
                          shares: list[list[dict]], schemas: dict[str, Any] | None = None) -> Iterator[Any]:
    """The function `mapInArrow` runs over `spark.range(len(shares))`: copy the ranges of the shares whose index is
    in the batches' `id` column, then yield one summary per partition (syncs as JSON). `schemas`: the plan's
    registries (`RecordRewrites.shipped`), whose ids the copies carry."""
    import gc

    import pyarrow as pa

    copier = RangeCopier(source_config, target_config, RecordRewrites.from_shipped(schemas))
    # The headers of every record are a list of tuples: allocations that set off the cyclic collector's sweeps
    # of the worker's whole heap (pyspark's modules) every few thousand records. The copy makes no reference
    # cycles; reference counting frees it all.
    collecting = gc.isenabled()
    gc.disable()
    try:
        for batch in batches:
            for index in batch.column("id").to_pylist():
                copier.copy_ranges(shares[index])
        summaries = copier.finish()
    finally:
        if collecting:
            gc.enable()
    yield pa.RecordBatch.from_pylist(
        [{**s, "syncs": json.dumps(s["syncs"])} for s in summaries],
        schema=pa.schema([("topic", pa.string()), ("partition", pa.int32()), ("records", pa.int64()),
                          ("written", pa.int64()), ("syncs", pa.string())]),
    )
