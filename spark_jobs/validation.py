"""Record-level validation of a copy: the functions behind `spark_jobs/validate.py`.

Both sides are read once with Spark's Kafka source over the copied ranges only. Every record gets a
fingerprint of its key, value, headers and timestamp in the JVM (Spark's built-in `xxhash64`, no Python
UDF). The (offset, fingerprint) rows of both sides meet in one shuffle into one Spark partition per Kafka
partition (no sort), where `record_pairing` pairs them by (fingerprint, occurrence among equal
fingerprints): a source record without a pair is missing on the target, a target record without a pair is extra (a
duplicate when its fingerprint is on the source). A missing and an extra record at the same place (the
source offset translates to the target offset) are one changed record. Pairs whose target offsets run
backwards against their source order are out of order. Only the mismatches (bounded per partition) reach
the driver.

A target topic with `message.timestamp.type=LogAppendTime` cannot keep the source's timestamps: its broker
stamps every record with its own append time. Its records are compared by key, value and headers (on both
sides), and the report says so in `notes` instead of calling every record changed.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import accumulate

from pyspark.sql import DataFrame, Row, SparkSession
from pyspark.sql import functions as F

from mirror_engine.observe import render_validation_page
from mirror_engine.security import ClusterSecurity
from spark_jobs.record_pairing import FINDINGS_SCHEMA, PartitionFindings

FIRST_FEW = 5  # offsets listed per kind of problem and partition
# Spark's Kafka source polls 500 records and fetches 1 MiB per partition by default: on small records that is
# a poll per few KiB. Larger polls and fetches read a range in fewer round trips (bench/README.md).
FETCH_OPTIONS = {"kafka.max.poll.records": "10000", "kafka.max.partition.fetch.bytes": str(8 << 20),
                 "kafka.fetch.max.bytes": str(64 << 20)}
MAX_MISMATCHES = 10_000  # mismatched records per partition brought to the driver


@dataclass(frozen=True)
class PartitionRange:
    """The copied range of one partition: source [source_start, source_end) to target [target_start, target_end)."""

    topic: str
    partition: int
    target_topic: str
    source_start: int
    source_end: int
    target_start: int
    target_end: int


@dataclass
class PartitionResult:
    topic: str
    partition: int
    source_records: int = 0
    target_records: int = 0
    missing: list[int] = field(default_factory=list)  # source offsets
    extra: list[int] = field(default_factory=list)  # target offsets (duplicates and foreign records)
    duplicates: int = 0
    changed: list[tuple[int, int]] = field(default_factory=list)  # (source offset, target offset)
    out_of_order: list[int] = field(default_factory=list)  # source offsets

    @property
    def clean(self) -> bool:
        return not (self.missing or self.extra or self.changed or self.out_of_order)

    def summary(self) -> dict:
        return {
            "topic": self.topic, "partition": self.partition, "clean": self.clean,
            "source_records": self.source_records, "target_records": self.target_records,
            "missing": len(self.missing), "extra": len(self.extra), "duplicates": self.duplicates,
            "changed": len(self.changed), "out_of_order": len(self.out_of_order),
            "first_missing": self.missing[:FIRST_FEW], "first_extra": self.extra[:FIRST_FEW],
            "first_changed": [list(pair) for pair in self.changed[:FIRST_FEW]],
            "first_out_of_order": self.out_of_order[:FIRST_FEW],
        }


@dataclass
class ValidationReport:
    plan: str
    mode: str
    partitions: list[PartitionResult]
    sample_fraction: float = 1.0
    notes: list[str] = field(default_factory=list)  # what was compared otherwise, and why

    @property
    def clean(self) -> bool:
        return all(p.clean for p in self.partitions)

    def to_dict(self) -> dict:
        rows = [p.summary() for p in self.partitions]
        totals = {kind: sum(row[kind] for row in rows)
                  for kind in ("source_records", "target_records", "missing", "extra", "duplicates", "changed",
                               "out_of_order")}
        return {"plan": self.plan, "mode": self.mode, "sample_fraction": self.sample_fraction, "clean": self.clean,
                "totals": totals, "notes": self.notes, "partitions": rows}

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2)

    def to_html(self) -> str:
        return render_validation_page(self.to_dict())


# ------------------------------------------------------------------ reading and fingerprinting
def kafka_options(security: ClusterSecurity) -> dict[str, str]:
    """Spark Kafka source options for a cluster: its security model rendered for the Java client
    (`mirror_engine.security.java_client`: JAAS values escape backslashes and double quotes)."""
    from spark_jobs.cluster_access import kafka_source_options

    return kafka_source_options(security)


def read_ranges(spark: SparkSession, options: dict[str, str], ranges: dict[str, dict[int, tuple[int, int]]],
                topic_label: dict[str, str], min_partitions: int | None = None) -> DataFrame | None:
    """Records of {topic: {partition: (start, end)}}, each labelled with `topic_label[topic]` as `topic`.

    One Spark partition per Kafka partition, in offset order; with `min_partitions`, Spark splits the
    larger Kafka partitions into offset ranges until there are that many (for readers that need no order
    across the whole partition, such as validation, when there are fewer partitions than cores)."""
    frames = []
    for topic, partitions in sorted(ranges.items()):
        wanted = {p: r for p, r in partitions.items() if r[1] > r[0]}
        if not wanted:
            continue
        frame = (
            spark.read.format("kafka").options(**FETCH_OPTIONS).options(**options)
            .option("assign", json.dumps({topic: sorted(wanted)}))
            .option("startingOffsets", json.dumps({topic: {str(p): r[0] for p, r in wanted.items()}}))
            .option("endingOffsets", json.dumps({topic: {str(p): r[1] for p, r in wanted.items()}}))
            .option("includeHeaders", "true")
            # Records deleted from a range (retention, or lost on the target) are what validation reports as
            # missing or extra, not a reason to fail the job.
            .option("failOnDataLoss", "false")
            .options(**({"minPartitions": str(min_partitions)} if min_partitions else {}))
            .load()
            .withColumn("topic", F.lit(topic_label[topic]))
        )
        frames.append(frame)
    if not frames:
        return None
    result = frames[0]
    for frame in frames[1:]:
        result = result.unionByName(frame)
    return result


def fingerprinted(records: DataFrame, untimed_topics: frozenset[str] = frozenset()) -> DataFrame:
    """topic, partition, offset, fp, fp_untimed, stampless. Null flags are hashed too: xxhash64 skips null
    inputs, which would make a null key with value v hash like key v with a null value. Records of
    `untimed_topics` (a LogAppendTime target) are fingerprinted without their timestamp, on both sides.
    fp_untimed is the fingerprint without the timestamp (xxhash64 skips the null); stampless says the record
    has no timestamp (format v0): the pairing uses fp_untimed for the topics that hold such records."""
    timestamp = F.col("timestamp")
    if untimed_topics:
        timestamp = F.when(F.col("topic").isin(*sorted(untimed_topics)), F.lit(None)).otherwise(timestamp)
    content = (F.col("key"), F.col("key").isNull(), F.col("value"), F.col("value").isNull(),
               F.coalesce(F.col("headers"), F.array()))
    return records.select("topic", "partition", "offset", F.xxhash64(*content, timestamp).alias("fp"),
                          F.xxhash64(*content).alias("fp_untimed"), (F.col("timestampType") < 0).alias("stampless"))


def sample_by_content(records: DataFrame, fraction: float) -> DataFrame:
    """Keep the records whose fingerprint falls in the fraction: the same records on both sides."""
    if fraction >= 1.0:
        return records
    return records.where(F.pmod(F.col("fp"), F.lit(1_000_000)) < int(fraction * 1_000_000))


# ------------------------------------------------------------------ comparing
def untimed_note(topic: str, target_topic: str, untimestamped: bool = False) -> str:
    if untimestamped:
        return (f"topic {topic}: its source holds records of format v0, which have no timestamp; their copies on "
                f"{target_topic} carry the time they were copied: its records are compared by key, value and headers")
    return (f"topic {topic}: its target {target_topic} has message.timestamp.type=LogAppendTime, so the target broker "
            "stamps each record with its own append time and the source's timestamps cannot be kept: its records are "
            "compared by key, value and headers")


def untimestamped_topics(source: DataFrame) -> frozenset[str]:
    """The topics whose source records include some without a timestamp (record format v0): a read of its own,
    for sample mode (which picks records by fingerprint, so must know first); a full comparison finds them while
    pairing."""
    return frozenset(row["topic"] for row in source.where(F.col("timestampType") < 0).select("topic").distinct()
                     .collect())


def by_kafka_partition(source: DataFrame, target: DataFrame, ranges: list[PartitionRange]) -> DataFrame:
    """Both sides' fingerprinted rows (key, offset, fp, fp_untimed, stampless, side), one Spark partition per
    Kafka partition of `ranges` (placed by topic, then partition number), so every Kafka partition is paired by
    a task of its own and the tasks spread over the cores. key = topic index (in sorted topic names) << 32 |
    partition; side 0 the source, 1 the target.

    `repartitionById`, not `repartition(n, key)`: that one hashes the keys (Murmur3, modulo n), which put the
    8 partitions of one topic in 4 of 8 Spark partitions (3 + 2 + 2 + 1): one task did three partitions' work
    while others had none."""
    topics = sorted({r.topic for r in ranges})
    index = F.create_map(*[F.lit(part) for i, topic in enumerate(topics) for part in (topic, i)])
    key = F.shiftleft(F.element_at(index, F.col("topic")).cast("long"), 32) + F.col("partition").cast("long")
    # Spark partition = the topic's first slot + partition: the slots of partitions outside `ranges` stay empty.
    slots = {topic: max(r.partition for r in ranges if r.topic == topic) + 1 for topic in topics}
    firsts = dict(zip(topics, accumulate((slots[t] for t in topics), initial=0), strict=False))
    first = F.create_map(*[F.lit(part) for topic in topics for part in (topic, firsts[topic])])
    columns = [key.alias("key"), "offset", "fp", "fp_untimed", "stampless",
               (F.element_at(first, F.col("topic")) + F.col("partition")).cast("int").alias("slot")]
    sides = (source.select(*columns, F.lit(0).cast("byte").alias("side"))
             .unionByName(target.select(*columns, F.lit(1).cast("byte").alias("side"))))
    return sides.repartitionById(max(1, sum(slots.values())), "slot").drop("slot")


def compare(source: DataFrame, target: DataFrame, ranges: list[PartitionRange],
            translate: Callable[[str, int, int], int | None], plan: str, mode: str,
            fraction: float = 1.0, untimed_topics: frozenset[str] = frozenset(),
            untimestamped: frozenset[str] = frozenset()) -> ValidationReport:
    """Pair the fingerprinted records of both sides per partition (one shuffle, no sort) and build the report.

    Topics whose source holds records without a timestamp are compared without timestamps: those given in
    `untimestamped` (already fingerprinted so) and those the pairing finds."""
    # Imported by name so Spark ships a reference to the function, not a copy of its module.
    from spark_jobs.record_pairing import pair_partitions as pair

    topics = sorted({r.topic for r in ranges})
    limit = MAX_MISMATCHES
    findings = (by_kafka_partition(source, target, ranges)
                .mapInArrow(lambda batches: pair(batches, topics, limit), FINDINGS_SCHEMA).collect())
    untimestamped = frozenset(untimestamped) | {row["topic"] for row in findings if row["stampless"]}
    untimed_topics = frozenset(untimed_topics) | untimestamped
    # Per partition the pairing by timestamp, or without it for a topic with records without one (a clean
    # pairing by timestamp comes alone: it is clean without the timestamp too).
    chosen: dict[tuple[str, int], Row] = {}
    for row in findings:
        wanted = row["topic"] not in untimestamped
        if (row["topic"], row["partition"]) not in chosen or row["timed"] == wanted:
            chosen[(row["topic"], row["partition"])] = row
    results = {(r.topic, r.partition): PartitionResult(r.topic, r.partition) for r in ranges}
    for (topic, partition), row in chosen.items():
        found = PartitionFindings(row["source_records"], row["target_records"], row["missing"], row["extra"],
                                  row["extra_on_source"], row["out_of_order"])
        results[(topic, partition)] = result_from_findings(topic, partition, found, translate)
    ordered = [results[k] for k in sorted(results)]
    targets = {r.topic: r.target_topic for r in ranges}
    notes = [untimed_note(topic, targets.get(topic, topic), topic in untimestamped) for topic in sorted(untimed_topics)]
    return ValidationReport(plan, mode, ordered, fraction, notes)


def result_from_findings(topic: str, partition: int, found: PartitionFindings,
                         translate: Callable[[str, int, int], int | None]) -> PartitionResult:
    """A partition's result: a missing record whose place on the target holds a foreign record is changed."""
    result = PartitionResult(topic, partition, found.source_records, found.target_records)
    extras = dict(zip(found.extra, found.extra_on_source, strict=True))
    for source_offset in found.missing:
        target_offset = translate(topic, partition, source_offset)
        if target_offset in extras and not extras[target_offset]:
            del extras[target_offset]  # a record at the same place with other content: changed
            result.changed.append((source_offset, target_offset))
        else:
            result.missing.append(source_offset)
    result.extra = sorted(extras)
    result.duplicates = sum(1 for on_source in extras.values() if on_source)
    result.out_of_order = sorted(found.out_of_order)
    return result


def report_to_files(report: ValidationReport, directory: str, name: str) -> tuple[str, str]:
    from pathlib import Path

    folder = Path(directory)
    folder.mkdir(parents=True, exist_ok=True)
    json_path, html_path = folder / f"{name}.json", folder / f"{name}.html"
    json_path.write_text(report.to_json())
    html_path.write_text(report.to_html())
    return str(json_path), str(html_path)

