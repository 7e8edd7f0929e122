"""Record-level validation of a copy: the functions behind `spark_jobs/validate.py`.

Both sides are read with Spark's Kafka source over the copied ranges only. Every record gets a
fingerprint of its key, value, headers and timestamp (Spark's built-in `xxhash64`, no Python UDF),
and an occurrence number among equal fingerprints of its partition. Records pair by (partition,
fingerprint, occurrence): a source record without a pair is missing on the target, a target record
without a pair is extra (a duplicate when its fingerprint is on the source). A missing and an extra
record at the same place (the source offset translates to the target offset) are one changed record.
Pairs whose target offsets run backwards against their source order are out of order. Only the
mismatches (bounded per partition) reach the driver.
"""

from __future__ import annotations

import html
import json
from collections.abc import Callable
from dataclasses import dataclass, field

from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from mirror_engine.cluster_security import ClusterSecurity

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

    @property
    def clean(self) -> bool:
        return all(p.clean for p in self.partitions)

    def to_dict(self) -> dict:
        rows = [p.summary() for p in self.partitions]
        totals = {kind: sum(row[kind] for row in rows)
                  for kind in ("source_records", "target_records", "missing", "extra", "duplicates", "changed",
                               "out_of_order")}
        return {"plan": self.plan, "mode": self.mode, "sample_fraction": self.sample_fraction, "clean": self.clean,
                "totals": totals, "partitions": rows}

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2)

    def to_html(self) -> str:
        return render_html(self.to_dict())


# ------------------------------------------------------------------ reading and fingerprinting
def kafka_options(security: ClusterSecurity) -> dict[str, str]:
    """Spark Kafka source options for a cluster: its security model rendered for the Java client
    (`mirror_engine.java_client`: JAAS values escape backslashes and double quotes)."""
    from spark_jobs.cluster_access import kafka_source_options

    return kafka_source_options(security)


def read_ranges(spark: SparkSession, options: dict[str, str], ranges: dict[str, dict[int, tuple[int, int]]],
                topic_label: dict[str, str]) -> DataFrame | None:
    """Records of {topic: {partition: (start, end)}}, each labelled with `topic_label[topic]` as `topic`."""
    frames = []
    for topic, partitions in sorted(ranges.items()):
        wanted = {p: r for p, r in partitions.items() if r[1] > r[0]}
        if not wanted:
            continue
        frame = (
            spark.read.format("kafka").options(**options)
            .option("assign", json.dumps({topic: sorted(wanted)}))
            .option("startingOffsets", json.dumps({topic: {str(p): r[0] for p, r in wanted.items()}}))
            .option("endingOffsets", json.dumps({topic: {str(p): r[1] for p, r in wanted.items()}}))
            .option("includeHeaders", "true")
            # Records deleted from a range (retention, or lost on the target) are what validation reports as
            # missing or extra, not a reason to fail the job.
            .option("failOnDataLoss", "false")
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


def fingerprinted(records: DataFrame) -> DataFrame:
    """topic, partition, offset, fp, occ. Null flags are hashed too: xxhash64 skips null inputs, which would
    make a null key with value v hash like key v with a null value."""
    fp = F.xxhash64(
        F.col("key"), F.col("key").isNull(), F.col("value"), F.col("value").isNull(),
        F.coalesce(F.col("headers"), F.array()), F.col("timestamp"),
    )
    occurrence = Window.partitionBy("topic", "partition", "fp").orderBy("offset")
    return (records.select("topic", "partition", "offset", fp.alias("fp"))
            .withColumn("occ", F.row_number().over(occurrence)))


def sample_by_content(records: DataFrame, fraction: float) -> DataFrame:
    """Keep the records whose fingerprint falls in the fraction: the same records on both sides."""
    if fraction >= 1.0:
        return records
    return records.where(F.pmod(F.col("fp"), F.lit(1_000_000)) < int(fraction * 1_000_000))


# ------------------------------------------------------------------ comparing
def compare(source: DataFrame, target: DataFrame, ranges: list[PartitionRange],
            translate: Callable[[str, int, int], int | None], plan: str, mode: str,
            fraction: float = 1.0) -> ValidationReport:
    src = source.select("topic", "partition", F.col("offset").alias("s_off"), "fp", "occ")
    tgt = target.select("topic", "partition", F.col("offset").alias("t_off"), "fp", "occ")
    joined = src.join(tgt, ["topic", "partition", "fp", "occ"], "full_outer").cache()

    results = {(r.topic, r.partition): PartitionResult(r.topic, r.partition) for r in ranges}
    for row in src.groupBy("topic", "partition").count().collect():
        results[(row["topic"], row["partition"])].source_records = row["count"]
    for row in tgt.groupBy("topic", "partition").count().collect():
        results[(row["topic"], row["partition"])].target_records = row["count"]

    by_source_order = Window.partitionBy("topic", "partition").orderBy("s_off")
    reordered = (joined.where(F.col("s_off").isNotNull() & F.col("t_off").isNotNull())
                 .withColumn("previous_t", F.lag("t_off").over(by_source_order))
                 .where(F.col("previous_t") > F.col("t_off")))
    source_fps = src.select("topic", "partition", "fp").distinct().withColumn("on_source", F.lit(True))
    mismatches = (
        joined.where(F.col("s_off").isNull() | F.col("t_off").isNull())
        .join(source_fps, ["topic", "partition", "fp"], "left")
        .withColumn("n", F.row_number().over(Window.partitionBy("topic", "partition")
                                             .orderBy(F.coalesce("s_off", "t_off"))))
        .where(F.col("n") <= MAX_MISMATCHES)
    )
    missing: dict[tuple[str, int], list[int]] = {}
    extra: dict[tuple[str, int], list[tuple[int, bool]]] = {}
    for row in mismatches.collect():
        key = (row["topic"], row["partition"])
        if row["t_off"] is None:
            missing.setdefault(key, []).append(row["s_off"])
        else:
            extra.setdefault(key, []).append((row["t_off"], bool(row["on_source"])))
    for row in reordered.select("topic", "partition", "s_off").collect():
        results[(row["topic"], row["partition"])].out_of_order.append(row["s_off"])
    joined.unpersist()

    for key, result in results.items():
        extras = dict(sorted(extra.get(key, [])))
        for source_offset in sorted(missing.get(key, [])):
            target_offset = translate(key[0], key[1], source_offset)
            if target_offset in extras and not extras[target_offset]:
                del extras[target_offset]  # a record at the same place with other content: changed
                result.changed.append((source_offset, target_offset))
            else:
                result.missing.append(source_offset)
        result.extra = sorted(extras)
        result.duplicates = sum(1 for on_source in extras.values() if on_source)
        result.out_of_order.sort()
    ordered = [results[k] for k in sorted(results)]
    return ValidationReport(plan, mode, ordered, fraction)


# ------------------------------------------------------------------ the page a person opens
def render_html(report: dict) -> str:
    rows = report["partitions"]
    status = "clean" if report["clean"] else "NOT CLEAN"
    tallest = max([max(r["source_records"], r["target_records"]) for r in rows] + [1])
    bar_width, chart_height = 28, 160
    bars = []
    for i, row in enumerate(rows):
        for j, (kind, colour) in enumerate((("source_records", "#4c78a8"), ("target_records", "#72b7b2"))):
            height = chart_height * row[kind] / tallest
            x = 40 + i * (2 * bar_width + 12) + j * bar_width
            bars.append(f'<rect x="{x}" y="{chart_height - height + 10:.1f}" width="{bar_width - 2}" '
                        f'height="{height:.1f}" fill="{colour}"><title>{html.escape(row["topic"])}'
                        f'[{row["partition"]}] {kind.split("_")[0]}: {row[kind]}</title></rect>')
        bars.append(f'<text x="{40 + i * (2 * bar_width + 12)}" y="{chart_height + 26}" font-size="10">'
                    f'{html.escape(row["topic"][-12:])}[{row["partition"]}]</text>')
    width = 60 + len(rows) * (2 * bar_width + 12)
    legend = "".join(
        f'<rect x="{width - x}" y="4" width="10" height="10" fill="{colour}"/>'
        f'<text x="{width - x + 14}" y="13" font-size="11">{label}</text>'
        for x, colour, label in ((150, "#4c78a8", "source"), (80, "#72b7b2", "target"))
    )
    table = "\n".join(
        f'<tr class="{"ok" if r["clean"] else "bad"}"><td>{html.escape(r["topic"])}</td><td>{r["partition"]}</td>'
        f'<td>{r["source_records"]}</td><td>{r["target_records"]}</td><td>{r["missing"]}</td><td>{r["extra"]}</td>'
        f'<td>{r["duplicates"]}</td><td>{r["changed"]}</td><td>{r["out_of_order"]}</td>'
        f'<td>{html.escape(_firsts(r))}</td></tr>'
        for r in rows
    )
    totals = report["totals"]
    return f"""<!doctype html>
<html><head><meta charset="utf-8"><title>Validation of {html.escape(report["plan"])}: {status}</title>
<style>
body {{ font-family: sans-serif; margin: 2em; }} table {{ border-collapse: collapse; }}
td, th {{ border: 1px solid #ccc; padding: 4px 8px; text-align: right; }} td:first-child {{ text-align: left; }}
tr.bad {{ background: #fde2e1; }} .status {{ font-size: 1.4em; color: {"#2e7d32" if report["clean"] else "#c62828"}; }}
</style></head><body>
<h1>Validation of plan {html.escape(report["plan"])}</h1>
<p class="status">{status}</p>
<p>Mode: {report["mode"]}{f" (fraction {report['sample_fraction']})" if report["mode"] == "sample" else ""}.
Source records {totals["source_records"]}, target records {totals["target_records"]}; missing {totals["missing"]},
extra {totals["extra"]} (of which duplicates {totals["duplicates"]}), changed {totals["changed"]},
out of order {totals["out_of_order"]}.</p>
<h2>Records per partition</h2>
<svg width="{width}" height="{chart_height + 40}" role="img" aria-label="source and target records per partition">
{"".join(bars)}
{legend}
</svg>
<h2>Partitions</h2>
<table><tr><th>topic</th><th>partition</th><th>source</th><th>target</th><th>missing</th><th>extra</th>
<th>duplicates</th><th>changed</th><th>out of order</th><th>first offsets</th></tr>
{table}
</table></body></html>
"""


def _firsts(row: dict) -> str:
    parts = []
    for kind, label in (("first_missing", "missing at source"), ("first_extra", "extra at target"),
                        ("first_changed", "changed source->target"), ("first_out_of_order", "out of order at")):
        if row[kind]:
            parts.append(f"{label} {row[kind]}")
    return "; ".join(parts)


def report_to_files(report: ValidationReport, directory: str, name: str) -> tuple[str, str]:
    from pathlib import Path

    folder = Path(directory)
    folder.mkdir(parents=True, exist_ok=True)
    json_path, html_path = folder / f"{name}.json", folder / f"{name}.html"
    json_path.write_text(report.to_json())
    html_path.write_text(report.to_html())
    return str(json_path), str(html_path)

