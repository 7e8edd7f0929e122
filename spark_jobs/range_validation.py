"""Reading and pairing the copied ranges of partitions with librdkafka: in a Spark task, or in the calling process.

Each side of a range is read by a consumer of its cluster (librdkafka, `read_committed`, as the engine reads;
a short fetch wait, so the end of a range is not waited for), every record known by the copy contract's
`record_hash` (key, value, headers, timestamp: `fingerprint`'s identity, as Python's own per-process hash, about a
tenth of the digest's cost), and the two sides paired by `record_pairing.pair_partition`. Both sides of a partition
are read and paired in one process, so their hashes compare; none leaves it.

- The Spark job (`validate.py`) runs `pair_ranges_task` in one task per core, each over a share of the copied
  partitions (`shares`), as the backfill copies (`range_copy`): the records never pass through Spark's JVM (its
  Kafka source and a shuffle of the fingerprints cost more CPU than the comparison itself), and only the
  findings, bounded lists, reach the driver.
- A copy below the plan's `validation.in_process_max_records` is compared in the calling process
  (`compare_in_process`, `validate.py --in-process`), one consumer per cluster reading every partition at once:
  starting a Spark application (spark-submit, a JVM, a session, Python workers) costs tens of seconds on a
  small machine, more than reading a few hundred thousand records twice.

Both build the same report, record by record (`validation.compare`). This module imports no pyspark: the
Python worker loads only what the comparison needs.
"""

from __future__ import annotations

import gc
import json
import time
import zlib
from array import array
from collections.abc import Callable, Iterator
from dataclasses import asdict
from typing import Any

from confluent_kafka import TIMESTAMP_NOT_AVAILABLE, Consumer, KafkaError, TopicPartition

from mirror_engine.kafka import SHORT_FETCH_WAIT, assign_known, consume_available, in_batches
from mirror_engine.replication import record_hash
from mirror_engine.schemas import RecordRewrites
from spark_jobs.record_pairing import PartitionFindings, pair_partition
from spark_jobs.validation import MAX_MISMATCHES, PartitionRange, ValidationReport, compare

STALL_S = 60.0  # a range that yields nothing for this long is an error (the records are not there)
BATCH = 10_000  # records taken from the consumer at a time
READER_SETTINGS = {
    "group.id": "mirror-engine-validate",
    "enable.auto.commit": False,
    "isolation.level": "read_committed",  # what the engine copies: no aborted records
    "enable.partition.eof": True,
    **SHORT_FETCH_WAIT,
    # librdkafka waits a second by default before fetching again once its prefetch queue is full: a pause at
    # every refill of a range read faster than that (as the backfill's tasks found, `range_copy`).
    "fetch.queue.backoff.ms": 10,
}

# (offsets, fingerprints) per (topic, partition): 8-byte integers (a list would hold an object of 28 to 36 bytes and
# a pointer per value), read by numpy without a copy. A fingerprint is the record's `record_hash`.
Fingerprints = dict[tuple[str, int], tuple["array[int]", "array[int]"]]
SAMPLE_SLOTS = 1_000_000  # a sample keeps the records whose slot (of key and value) is below fraction x this


def sample_slot(key: bytes | None, value: bytes | None) -> int:
    """Where a record falls in sample mode: the same in every process (Spark's tasks and the in-process comparison
    pick the same records), from its key and value only, so a record whose headers or timestamp changed on the
    target is still picked on both sides and found changed."""
    return zlib.crc32(value or b"", zlib.crc32(key or b"")) % SAMPLE_SLOTS


def read_fingerprints(config: dict[str, str], wanted: dict[tuple[str, int], tuple[int, int]], fraction: float,
                      untimed: frozenset[str] = frozenset(), untimestamped: set[str] | None = None,
                      rewrites: RecordRewrites | None = None, unmapped: dict[tuple[str, int], int] | None = None,
                      ) -> Fingerprints:
    """(offsets, 64-bit fingerprints) of the records in [start, end) of each (topic, partition), read by one
    consumer. Records of the `untimed` topics are fingerprinted without their timestamp; with `fraction` below 1
    only the records whose `sample_slot` falls in it are kept (the same records on both sides). Topics holding
    records without a timestamp (format v0) are added to `untimestamped`. `rewrites`: the source's records as
    their copies carry them (the plan's schema ids, translated; looked up, never moved), and the records whose id
    did not map are counted per partition in `unmapped`."""
    found: Fingerprints = {key: (array("q"), array("q")) for key in wanted}
    # The ranges still being read, with what their records need, taken in one lookup per record: the range's end,
    # whether it is fingerprinted without timestamps, and the appends of its arrays.
    reading = {key: (end, key[0] in untimed, found[key][0].append, found[key][1].append,
                     rewrites.of(key[0]) if rewrites else None)
               for key, (start, end) in wanted.items() if end > start}
    if not reading:
        return found
    keep_all, keep_below = fraction >= 1.0, int(fraction * SAMPLE_SLOTS)
    consumer = Consumer({**config, **READER_SETTINGS})
    # The headers of every record are a list of tuples: allocations that set off the cyclic collector's sweeps
    # of the whole heap (the growing lists of offsets and fingerprints) every few thousand records. The read
    # makes no reference cycles; reference counting frees it all.
    collecting = gc.isenabled()
    gc.disable()
    try:
        # Leaders asked first, and what has arrived taken without waiting out a consume timeout: a consumer's
        # start and its range's end would otherwise wait 0.5 to 1 s each, twice per partition in a Spark task.
        assign_known(consumer, [TopicPartition(topic, partition, wanted[(topic, partition)][0])
                                for topic, partition in reading])
        last_progress = time.monotonic()
        while reading:
            messages = consume_available(consumer, 0.5, BATCH)
            if messages:
                last_progress = time.monotonic()
            elif time.monotonic() - last_progress > STALL_S:
                raise RuntimeError(f"no records for {STALL_S:.0f} s from {sorted(reading)[:3]}: are the ranges "
                                   f"still on the cluster? Run the validation again")
            for message in messages:
                key = (message.topic(), message.partition())
                state = reading.get(key)
                if state is None:
                    continue
                error = message.error()
                if error is not None:
                    if error.code() == KafkaError._PARTITION_EOF:  # the end of what the cluster has: all read
                        del reading[key]
                        continue
                    raise RuntimeError(f"{key[0]}[{key[1]}]: {error.str()}")
                end, timeless, add_offset, add_fp, rewrite = state
                offset = message.offset()
                if offset >= end:
                    del reading[key]
                    continue
                stamp_type, stamp = message.timestamp()
                if stamp_type == TIMESTAMP_NOT_AVAILABLE and untimestamped is not None:
                    untimestamped.add(key[0])
                key_bytes, value = message.key(), message.value()
                if rewrite is not None and rewrites is not None:
                    before = rewrites.unmapped
                    key_bytes, value = rewrite(key_bytes, value)
                    if unmapped is not None and rewrites.unmapped != before:
                        unmapped[key] = unmapped.get(key, 0) + 1
                if keep_all or sample_slot(key_bytes, value) < keep_below:
                    add_offset(offset)
                    add_fp(record_hash(key_bytes, value, message.headers(), -1 if timeless else stamp))
                if offset == end - 1:
                    del reading[key]
    finally:
        if collecting:
            gc.enable()
        consumer.close()
    return found


def pair_ranges(ranges: list[PartitionRange], source_config: dict[str, str], target_config: dict[str, str],
                fraction: float, untimed: frozenset[str], schemas: dict[str, Any] | None = None,
                ) -> tuple[dict[tuple[str, int], PartitionFindings], set[str]]:
    """Read both sides of `ranges` (one consumer per cluster) and pair each partition: the findings per (source
    topic, partition), and the source topics holding records without a timestamp. `untimed` are source topics
    whose records are fingerprinted without their timestamp, on both sides. `schemas`: the plan's registries
    (`RecordRewrites.shipped`): records compare modulo the id mapping."""
    untimestamped: set[str] = set()
    unmapped: dict[tuple[str, int], int] = {}
    source = read_fingerprints(source_config, {(r.topic, r.partition): (r.source_start, r.source_end)
                                               for r in ranges}, fraction, untimed, untimestamped,
                               RecordRewrites.from_shipped(schemas, read_only=True), unmapped)
    target = read_fingerprints(target_config, {(r.target_topic, r.partition): (r.target_start, r.target_end)
                                               for r in ranges}, fraction,
                               frozenset(r.target_topic for r in ranges if r.topic in untimed))
    findings = {}
    for r in ranges:
        s_off, s_fp = source[(r.topic, r.partition)]
        t_off, t_fp = target[(r.target_topic, r.partition)]
        findings[(r.topic, r.partition)] = pair_partition(s_off, s_fp, t_off, t_fp, MAX_MISMATCHES)
        findings[(r.topic, r.partition)].unmapped = unmapped.get((r.topic, r.partition), 0)
    return findings, untimestamped


FINDINGS_SCHEMA = "topic string, partition int, findings string, stampless boolean"
# Records (both sides) a task reads before it pairs them: 16 bytes each while read, numpy's sorted copies while
# paired. A task holds its share this many records at a time, never less than one partition.
PAIRED_AT_ONCE = 10_000_000


def records_of(r: PartitionRange) -> int:
    """The records of a copied range, both sides."""
    return r.source_end - r.source_start + r.target_end - r.target_start


def pair_ranges_task(batches: Iterator[Any], source_config: dict[str, str], target_config: dict[str, str],
                     shares: list[list[PartitionRange]], fraction: float, untimed: frozenset[str],
                     schemas: dict[str, Any] | None = None) -> Iterator[Any]:
    """The function `mapInArrow` runs over `spark.range(len(shares))` (the backfill's kind of task, so one
    application's jobs share their Python workers): pair the ranges of the shares whose index is in the batches'
    `id` column, `PAIRED_AT_ONCE` records at a time, then yield per range its findings (as JSON) and whether its
    source holds records without a timestamp (`FINDINGS_SCHEMA`)."""
    import pyarrow as pa

    rows = []
    for batch in batches:
        for index in batch.column("id").to_pylist():
            for group in in_batches(shares[index], records_of, PAIRED_AT_ONCE):
                found, untimestamped = pair_ranges(group, source_config, target_config, fraction, untimed, schemas)
                rows += [{"topic": r.topic, "partition": r.partition, "stampless": r.topic in untimestamped,
                          "findings": json.dumps(asdict(found[(r.topic, r.partition)]))} for r in group]
    yield pa.RecordBatch.from_pylist(rows, schema=pa.schema([("topic", pa.string()), ("partition", pa.int32()),
                                                             ("findings", pa.string()), ("stampless", pa.bool_())]))


def compare_in_process(ranges: list[PartitionRange], source_config: dict[str, str], target_config: dict[str, str],
                       translate: Callable[[str, int, int], int | None], plan: str, mode: str,
                       fraction: float = 1.0, untimed: frozenset[str] = frozenset(),
                       schemas: dict[str, Any] | None = None) -> ValidationReport:
    """The Spark job's report for a small copy, every partition read here. `untimed` are the source topics whose
    target stamps records with its own time (LogAppendTime)."""
    return compare(ranges, lambda chosen, without: pair_ranges(chosen, source_config, target_config, fraction,
                                                               without, schemas),
                   translate, plan, mode, fraction, untimed)
