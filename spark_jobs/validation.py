"""Record-level validation of a copy: the report and how it is built, for `spark_jobs/validate.py`.

Each copied partition is read on both clusters over its copied range only, by a librdkafka consumer per cluster
(`range_validation`: in Spark tasks, each over a share of the partitions, or for a small copy all of them in the
calling process). Every record gets the copy contract's identity of its key, value, headers and timestamp
(`record_hash`, its fingerprint here), and `record_pairing` pairs the two sides by (fingerprint, occurrence among
equal fingerprints): a source record without a pair is missing on the target, a target record without a pair is
extra (a duplicate when its fingerprint is on the source). A missing and an extra record at the same place (the
source offset translates to the target offset) are one changed record. Pairs whose target offsets run backwards
against their source order are out of order. Only the mismatches (bounded per partition) reach the driver.

A target topic with `message.timestamp.type=LogAppendTime` cannot keep the source's timestamps: its broker
stamps every record with its own append time. Its records are compared by key, value and headers (on both
sides), and the report says so in `notes` instead of calling every record changed. So are the records of a
source topic holding some without a timestamp (format v0; their copies carry the time they were copied): found
while reading, and that topic's partitions are all read and paired again without timestamps.

No pyspark here: this module is loaded by the Spark job's tasks too.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field

from mirror_engine.observe import render_validation_page
from spark_jobs.record_pairing import PartitionFindings

FIRST_FEW = 5  # offsets listed per kind of problem and partition
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
    unmapped: int = 0  # source records whose schema id did not map (`schemas`), compared as they are

    @property
    def clean(self) -> bool:
        return not (self.missing or self.extra or self.changed or self.out_of_order)

    def summary(self) -> dict:
        return {
            "topic": self.topic, "partition": self.partition, "clean": self.clean,
            "source_records": self.source_records, "target_records": self.target_records,
            "missing": len(self.missing), "extra": len(self.extra), "duplicates": self.duplicates,
            "changed": len(self.changed), "out_of_order": len(self.out_of_order), "unmapped": self.unmapped,
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
                               "out_of_order", "unmapped")}
        return {"plan": self.plan, "mode": self.mode, "sample_fraction": self.sample_fraction, "clean": self.clean,
                "totals": totals, "notes": self.notes, "partitions": rows}

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2)

    def to_html(self) -> str:
        return render_validation_page(self.to_dict())


# ------------------------------------------------------------------ comparing
def untimed_note(topic: str, target_topic: str, untimestamped: bool = False) -> str:
    if untimestamped:
        return (f"topic {topic}: its source holds records of format v0, which have no timestamp; their copies on "
                f"{target_topic} carry the time they were copied: its records are compared by key, value and headers")
    return (f"topic {topic}: its target {target_topic} has message.timestamp.type=LogAppendTime, so the target broker "
            "stamps each record with its own append time and the source's timestamps cannot be kept: its records are "
            "compared by key, value and headers")


# Reads and pairs the given ranges, fingerprinting the records of the given topics without their timestamp:
# the findings per (topic, partition) of every range, and the topics whose source holds records without one.
PairRanges = Callable[[list[PartitionRange], frozenset[str]], tuple[dict[tuple[str, int], PartitionFindings], set[str]]]


def compare(ranges: list[PartitionRange], pair_ranges: PairRanges, translate: Callable[[str, int, int], int | None],
            plan: str, mode: str, fraction: float = 1.0, untimed: frozenset[str] = frozenset()) -> ValidationReport:
    """The report of a copy, whichever way its ranges are read and paired (in this process or by Spark's tasks).

    `untimed` are the source topics whose target stamps records with its own time (LogAppendTime). A topic whose
    source holds records without a timestamp (format v0) is found while reading; its partitions, all of them, are
    then read and paired again without timestamps (a record's identity is made in the read, from what it holds)."""
    findings, untimestamped = pair_ranges(ranges, untimed)
    if untimestamped - untimed:  # their copies carry the copy's time: compare them without timestamps
        untimed = untimed | frozenset(untimestamped)
        findings.update(pair_ranges([r for r in ranges if r.topic in untimestamped], untimed)[0])
    results = [result_from_findings(r.topic, r.partition, findings[(r.topic, r.partition)], translate)
               for r in sorted(ranges, key=lambda r: (r.topic, r.partition))]
    targets = {r.topic: r.target_topic for r in ranges}
    notes = [untimed_note(topic, targets.get(topic, topic), topic in untimestamped) for topic in sorted(untimed)]
    return ValidationReport(plan, mode, results, fraction, notes)


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
    result.unmapped = found.unmapped
    return result


def report_to_files(report: ValidationReport, directory: str, name: str) -> tuple[str, str]:
    from pathlib import Path

    folder = Path(directory)
    folder.mkdir(parents=True, exist_ok=True)
    json_path, html_path = folder / f"{name}.json", folder / f"{name}.html"
    json_path.write_text(report.to_json())
    html_path.write_text(report.to_html())
    return str(json_path), str(html_path)

