"""The backfill's Spark task: copy Arrow batches of one source partition's range to its target partition.

Spark's Kafka source hands each task one Kafka partition in offset order, as Arrow record batches. The
task writes them through the copy contract (`mirror_engine.replication.copy_contract`): an idempotent, gapless
producer, the same partition number, key, value, headers and timestamp, and an offset-sync wherever
(target - source) changes. Per record it does one `produce()` and nothing else: columns are turned into
Python lists once per batch, the order check is one vectorised comparison per batch, the sync rule is
asked once per batch when the batch has no offset gap (the delta cannot change inside it), and the
producer reports deliveries only when they fail (`delivery.report.only.error`), so no Python callback
runs per record. The cyclic garbage collector is off while a task copies. This module imports no
pyspark: the Python worker loads only what the copy needs.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import Consumer, Producer, TopicPartition

from mirror_engine.replication import SyncOnDelta, produce_when_room, target_producer_settings

SUMMARY_SCHEMA = "topic string, partition int, records long, written long, syncs string"


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


class RangeCopier:
    """Copies the batches of a task's partitions; `finish()` waits for every acknowledgement."""

    def __init__(self, target_config: dict[str, str], plan_parts: dict[tuple[str, int], dict]) -> None:
        self.target_config = target_config
        self.plan_parts = plan_parts
        self.states: dict[tuple[str, int], RangeState] = {}
        self.errors: list[str] = []
        self.producer: Producer | None = None

    def _state(self, topic: str, partition: int) -> RangeState:
        state = self.states.get((topic, partition))
        if state is None:
            info = self.plan_parts[(topic, partition)]
            consumer = Consumer({**self.target_config, "group.id": "mirror-engine-backfill"})
            try:
                _low, high = consumer.get_watermark_offsets(TopicPartition(info["target_topic"], partition), timeout=30)
            finally:
                consumer.close()
            # The records already on the target past the range's start are its first records (the copy contract).
            state = self.states[(topic, partition)] = RangeState(
                topic, partition, info["target_topic"], info["target_start"], max(0, high - info["target_start"]))
            if self.producer is None:
                settings = target_producer_settings(self.target_config, linger_ms=20, compression="lz4",
                                                    batch_bytes=1_048_576)
                self.producer = Producer({**settings, "delivery.report.only.error": True,
                                          "on_delivery": self._on_failed_delivery})
        return state

    def _on_failed_delivery(self, error: Any, _message: Any) -> None:
        if error is not None:
            self.errors.append(error.str())

    def copy(self, batch: Any) -> None:
        """One Arrow batch (topic, partition, offset, key, value, headers, ts), in offset order per partition."""
        if batch.num_rows == 0:
            return
        # No pyarrow.compute nor to_numpy here: they import pandas, which costs a worker more than many batches.
        topics, partitions = batch.column("topic").to_pylist(), batch.column("partition").to_pylist()
        rows = len(topics)
        if topics.count(topics[0]) == rows and partitions.count(partitions[0]) == rows:
            self._copy_run(self._state(topics[0], partitions[0]), batch)  # the usual case: one Kafka partition
            return
        import pyarrow as pa

        keys = list(zip(topics, partitions, strict=True))
        for key in dict.fromkeys(keys):
            self._copy_run(self._state(*key), batch.filter(pa.array([k == key for k in keys])))

    def _copy_run(self, state: RangeState, batch: Any) -> None:
        import numpy as np

        offsets = int64_values(batch.column("offset"))
        steps = np.diff(offsets)
        if offsets[0] <= state.previous or (steps <= 0).any():
            raise RuntimeError(f"{state.topic}[{state.partition}]: rows out of offset order after {state.previous}")
        state.previous = int(offsets[-1])
        count, first_target = len(offsets), state.target_start + state.index
        if (steps == 1).all():  # no gap: (target - source) is the same for the whole batch
            if state.rule.due(int(offsets[0]), first_target):
                state.syncs.append((int(offsets[0]), first_target))
        else:  # compacted or transactional history: look at every record
            for i, offset in enumerate(offsets.tolist()):
                if state.rule.due(offset, first_target + i):
                    state.syncs.append((offset, first_target + i))
        skip = max(0, state.already - state.index)
        state.index += count
        if skip >= count:
            return
        keys, values = batch.column("key").to_pylist(), batch.column("value").to_pylist()
        stamps, headers = batch.column("ts").to_pylist(), header_lists(batch.column("headers"))
        if skip:
            keys, values, stamps, headers = keys[skip:], values[skip:], stamps[skip:], headers[skip:]
        producer, topic, partition = self.producer, state.target_topic, state.partition
        assert producer is not None
        produce = producer.produce
        for key, value, stamp, record_headers in zip(keys, values, stamps, headers, strict=True):
            try:
                # All positional (topic, value, key, partition, on_delivery, callback, timestamp, headers).
                produce(topic, value, key, partition, None, None, stamp, record_headers)
            except BufferError:
                produce_when_room(producer, topic, value, key, partition, None, stamp, record_headers)
        state.written += count - skip
        producer.poll(0)

    def finish(self) -> list[dict]:
        """Wait for the target to acknowledge everything; one summary per partition."""
        if self.producer is not None and self.producer.flush(300):
            self.errors.append("records still unacknowledged after 300 s")
        if self.errors:
            raise RuntimeError(f"the target rejected backfilled records: {self.errors[:3]}")
        return [{"topic": s.topic, "partition": s.partition, "records": s.index, "written": s.written,
                 "syncs": s.syncs} for s in self.states.values()]


def int64_values(column: Any) -> Any:
    """A numpy view of a null-free int64 Arrow column (`to_numpy()` would import pandas into the worker)."""
    import numpy as np

    return np.frombuffer(column.buffers()[1], dtype=np.int64, count=len(column), offset=column.offset * 8)


def header_lists(column: Any) -> list[list[tuple[str, bytes | None]] | None]:
    """Per row, the record's headers as (name, value) pairs, or None: from the flattened column, not per row."""
    rows = len(column)
    offsets = column.offsets.to_pylist()
    if offsets[-1] == offsets[0]:
        return [None] * rows
    entries = column.values
    pairs = list(zip(entries.field("key").to_pylist(), entries.field("value").to_pylist(), strict=True))
    found = [pairs[offsets[i]:offsets[i + 1]] or None for i in range(rows)]
    if column.null_count:  # a null list may still span entries (Arrow allows it): it has no headers
        found = [row if valid else None for row, valid in zip(found, column.is_valid().to_pylist(), strict=True)]
    return found


def copy_arrow_batches(batches: Iterator[Any], target_config: dict[str, str],
                       plan_parts: dict[tuple[str, int], dict]) -> Iterator[Any]:
    """The function `mapInArrow` runs: copy every batch, then yield one summary batch (syncs as JSON)."""
    import gc

    import pyarrow as pa

    copier = RangeCopier(target_config, plan_parts)
    # Two containers per record (its header list and pairs) set off the cyclic collector's sweeps of the
    # worker's whole heap (pyspark's modules) every few thousand records: in the profile they cost several
    # times the header lists themselves. The copy makes no reference cycles; reference counting frees it all.
    collecting = gc.isenabled()
    gc.disable()
    try:
        for batch in batches:
            copier.copy(batch)
        summaries = copier.finish()
    finally:
        if collecting:
            gc.enable()
    yield pa.RecordBatch.from_pylist(
        [{**s, "syncs": json.dumps(s["syncs"])} for s in summaries],
        schema=pa.schema([("topic", pa.string()), ("partition", pa.int32()), ("records", pa.int64()),
                          ("written", pa.int64()), ("syncs", pa.string())]),
    )
