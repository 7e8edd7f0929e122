"""Validation of a small copy in the calling process, without Spark: `validate.py --in-process`.

Starting a Spark application (spark-submit, a JVM, a session, Python workers) costs tens of seconds on
a small machine, far more than reading a few hundred thousand records twice. So a copy below the plan's
`validation.in_process_max_records` is read here with one consumer per cluster (read_committed, every
partition at once), each record fingerprinted by the copy contract's `fingerprint` (key, value, headers,
timestamp), and paired by `record_pairing.pair_partition`, the function the Spark job runs per partition:
the report is the same, record by record. Larger copies go to Spark, which spreads the reading over its
executors.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from confluent_kafka import TIMESTAMP_NOT_AVAILABLE, Consumer, KafkaError, TopicPartition

from mirror_engine.kafka import SHORT_FETCH_WAIT
from mirror_engine.replication import fingerprint
from spark_jobs.record_pairing import pair_partition
from spark_jobs.validation import (
    MAX_MISMATCHES,
    PartitionRange,
    ValidationReport,
    result_from_findings,
    untimed_note,
)

STALL_S = 60.0  # a range that yields nothing for this long is an error (the records are not there)


def read_fingerprints(config: dict[str, str], wanted: dict[tuple[str, int], tuple[int, int]], fraction: float,
                      untimed: frozenset[str] = frozenset(), untimestamped: set[str] | None = None,
                      ) -> dict[tuple[str, int], tuple[list[int], list[int]]]:
    """(offsets, 64-bit fingerprints) of the records in [start, end) of each (topic, partition). Records of the
    `untimed` topics are fingerprinted without their timestamp; topics holding records without one (format v0)
    are added to `untimestamped`."""
    found: dict[tuple[str, int], tuple[list[int], list[int]]] = {key: ([], []) for key in wanted}
    open_ranges = {key: (start, end) for key, (start, end) in wanted.items() if end > start}
    if not open_ranges:
        return found
    keep_below = int(fraction * 1_000_000)
    consumer = Consumer({**config, "group.id": "mirror-engine-validate", "enable.auto.commit": False,
                         "isolation.level": "read_committed", "enable.partition.eof": True, **SHORT_FETCH_WAIT})
    try:
        consumer.assign([TopicPartition(topic, partition, start) for (topic, partition), (start, _end)
                         in open_ranges.items()])
        last_progress = time.monotonic()
        while open_ranges:
            messages = consumer.consume(10_000, timeout=0.5)
            if messages:
                last_progress = time.monotonic()
            elif time.monotonic() - last_progress > STALL_S:
                raise RuntimeError(f"no records for {STALL_S:.0f} s from {sorted(open_ranges)[:3]}: are the ranges "
                                   f"still on the cluster? Run the validation again")
            for message in messages:
                key = (message.topic(), message.partition())
                if key not in open_ranges:
                    continue
                error = message.error()
                if error is not None:
                    if error.code() == KafkaError._PARTITION_EOF:  # the end of what the cluster has: all read
                        del open_ranges[key]
                        continue
                    raise RuntimeError(f"{key[0]}[{key[1]}]: {error.str()}")
                offset = message.offset()
                if offset >= open_ranges[key][1]:
                    del open_ranges[key]
                    continue
                stamp_type, stamp = message.timestamp()
                if stamp_type == TIMESTAMP_NOT_AVAILABLE and untimestamped is not None:
                    untimestamped.add(key[0])
                digest = fingerprint(message.key(), message.value(), message.headers(),
                                     -1 if key[0] in untimed else stamp)
                fp = int.from_bytes(digest[:8], "little", signed=True)
                if fraction >= 1.0 or fp % 1_000_000 < keep_below:
                    offsets, fps = found[key]
                    offsets.append(offset)
                    fps.append(fp)
                if offset == open_ranges[key][1] - 1:
                    del open_ranges[key]
    finally:
        consumer.close()
    return found


def compare_in_process(ranges: list[PartitionRange], source_config: dict[str, str], target_config: dict[str, str],
                       translate: Callable[[str, int, int], int | None], plan: str, mode: str,
                       fraction: float = 1.0, untimed: frozenset[str] = frozenset()) -> ValidationReport:
    """The Spark job's report for a small copy. `untimed` are the source topics whose target stamps records with
    its own time (LogAppendTime): compared by key, value and headers, as are topics with v0 records (no timestamp),
    which are found while reading and read again without timestamps."""
    untimestamped: set[str] = set()
    source_ranges = {(r.topic, r.partition): (r.source_start, r.source_end) for r in ranges}
    source = read_fingerprints(source_config, source_ranges, fraction, untimed, untimestamped)
    if untimestamped - untimed:  # their copies carry the copy's time: compare them without timestamps
        untimed = untimed | frozenset(untimestamped)
        source = read_fingerprints(source_config, source_ranges, fraction, untimed)
    targets = {r.target_topic: r.topic for r in ranges}
    target = read_fingerprints(target_config, {(r.target_topic, r.partition): (r.target_start, r.target_end)
                                               for r in ranges}, fraction,
                               frozenset(t for t, topic in targets.items() if topic in untimed))
    results = []
    for r in sorted(ranges, key=lambda r: (r.topic, r.partition)):
        s_off, s_fp = source[(r.topic, r.partition)]
        t_off, t_fp = target[(r.target_topic, r.partition)]
        findings = pair_partition(s_off, s_fp, t_off, t_fp, MAX_MISMATCHES)
        results.append(result_from_findings(r.topic, r.partition, findings, translate))
    notes = [untimed_note(topic, next(t for t, s in targets.items() if s == topic), topic in untimestamped)
             for topic in sorted(untimed)]
    return ValidationReport(plan, mode, results, fraction, notes)
