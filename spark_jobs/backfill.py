"""Copy the history of a plan's backfill topics with Spark: `spark-submit spark_jobs/backfill.py --plan FILE`.

The engine holds each partition of a backfill topic at a snapshot offset B (recorded in the flow's control topic).
This job copies the source range [earliest, B) of every partition to the same target partition: one Spark task per
core copies a share of the partitions side by side, reading each in offset order with the task's consumer and
writing it with the task's idempotent producer (`range_copy`: the engine's client and copy contract; Spark's Kafka
sink cannot set timestamps), keys, values, headers and timestamps kept. Then the job writes the offset-syncs of what
it copied and the partitions' progress at B, and marks the topic done: the engine copies on from B. Order is kept
and nothing is written twice: a task counts what the target already holds of its range before writing (so a re-run
after a failure, or a retried task, resumes where the last one stopped).

Exit status: 0 done, 1 failed (re-run it), 2 bad arguments or plan.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from confluent_kafka import TopicPartition
from confluent_kafka.admin import OffsetSpec

from mirror_engine.plan import aware_time
from mirror_engine.schemas import RecordRewrites
from spark_jobs.shares import balanced_shares

log = logging.getLogger("spark_jobs.backfill")


@dataclass
class PartitionBackfill:
    """One partition's share: source [start, end) to the target from `target_start`."""

    topic: str
    partition: int
    target_topic: str
    start: int
    end: int
    target_start: int
    records: int = 0  # records of the range
    written: int = 0  # records this run wrote (the rest were already on the target)
    syncs: list[tuple[int, int]] = field(default_factory=list)  # (source, target) at every change of delta


def parse_bound(value: str | None) -> int | datetime | None:
    """--from/--to: an offset, or an ISO-8601 time."""
    if value is None:
        return None
    if value.lstrip("-").isdigit():
        offset = int(value)
        if offset < 0:
            raise ValueError(f"an offset must be 0 or more, got {value}")
        return offset
    try:
        return aware_time(value)  # the plan's engine.start_from follows the same rule
    except ValueError as error:
        raise ValueError(f"neither an offset nor a time with its zone: {error}") from None


def main(argv: list[str] | None = None) -> int:
    from mirror_engine.mm2 import PlanReference
    from mirror_engine.plan import PlanError

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--plan", required=True, help="a YAML plan, or an MM2 file's flow: FILE.properties#a->b")
    parser.add_argument("--topics", help="comma-separated source topics (default: every topic held for backfill)")
    parser.add_argument("--partitions", help="comma-separated partition numbers (default: all)")
    parser.add_argument("--from", dest="start", help="first offset, or a time: skip older history")
    parser.add_argument("--to", dest="end", help="stop before this offset or time (the engine copies the rest)")
    parser.add_argument("--master", help="Spark master when not run by spark-submit (default local[2])")
    parser.add_argument("--wait-seconds", type=float, default=60.0,
                        help="how long to wait for the engine to record the snapshots (default 60)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    try:
        plan = PlanReference.parse(args.plan).load()
        start_bound, end_bound = parse_bound(args.start), parse_bound(args.end)
        only_partitions = {int(p) for p in args.partitions.split(",")} if args.partitions else None
    except (PlanError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    try:
        source_config, target_config = plan.client_configs()
    except PlanError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    wanted = args.topics.split(",") if args.topics else None
    control, pending, done = wait_for_snapshots(plan, target_config, wanted, args.wait_seconds)
    topics = [t for t in wanted if t not in done] if wanted else sorted(pending)
    if not topics and done and not (wanted and set(wanted) - set(done)):
        print(f"nothing to backfill: already done for {', '.join(done)}")
        return 0
    problems = [f"{t}: no backfill is pending for it (is it in the plan's backfill.topics, and has the engine "
                f"started copying the plan?)" for t in topics if t not in pending]
    if problems or not topics:
        print("error: " + ("; ".join(problems) or "no backfill is pending for this plan"), file=sys.stderr)
        return 2
    parts = partition_ranges(plan, source_config, [pending[t] for t in topics], only_partitions,
                             start_bound, end_bound)

    from spark_jobs.session import build_session

    started = time.monotonic()
    # The tasks read the source and write the target with the engine's client (librdkafka, the plan's settings,
    # both logins already used above): no Java Kafka client runs in this job.
    spark = build_session(f"backfill-{plan.name}", master=args.master)
    copy_ranges(spark, source_config, target_config, parts, RecordRewrites.shipped(plan))
    _store_progress(plan, target_config, parts)
    for topic in topics:
        snapshot = pending[topic]
        if {p.partition for p in parts if p.topic == topic} == set(snapshot.partitions):
            control.backfill_done(snapshot)
    print(_summary_table(parts, time.monotonic() - started))
    return 0


def wait_for_snapshots(plan: Any, target_config: dict[str, str], wanted: list[str] | None,
                       wait_s: float) -> tuple[Any, dict[str, Any], list[str]]:
    """The flow's control channel, its pending backfill snapshots by topic and the topics already done, once the
    engine recorded the `wanted` topics' (any, when None) or after `wait_s`: the engine records them when it first
    meets the topics, so a just-started engine gets that long."""
    from mirror_engine.flow import ControlChannel

    deadline = time.monotonic() + wait_s
    while True:
        control = ControlChannel(plan, target_config)
        control.load()
        pending = {t: s for t, s in control.backfills.items() if s.state == "pending"}
        done = sorted(t for t, s in control.backfills.items() if s.state == "done")
        if (wanted and all(t in pending or t in done for t in wanted)) or (not wanted and (pending or done)) \
                or time.monotonic() > deadline:
            return control, pending, done
        time.sleep(1)


def partition_ranges(plan: Any, source_config: dict[str, str], snapshots: list[Any], only_partitions: set[int] | None,
                     start_bound: int | datetime | None, end_bound: int | datetime | None) -> list[PartitionBackfill]:
    """Each chosen partition's source range [start, end): from its earliest offset (or `start_bound`) to its
    snapshot offset B (or `end_bound`, never past B), and where it starts on the target."""
    from mirror_engine.kafka import admin_client, list_offsets

    source_admin = admin_client(source_config)
    policy = plan.policy()
    parts: list[PartitionBackfill] = []
    for snapshot in snapshots:
        topic = snapshot.topic
        chosen = sorted(p for p in snapshot.partitions if only_partitions is None or p in only_partitions)
        tps = [TopicPartition(topic, p) for p in chosen]
        earliest = list_offsets(source_admin, tps, OffsetSpec.earliest())
        starts = dict(earliest)
        ends = {(topic, p): snapshot.partitions[p][0] for p in chosen}
        for bound, target in ((start_bound, starts), (end_bound, ends)):
            if isinstance(bound, int):
                target.update({k: bound for k in target})
            elif isinstance(bound, datetime):
                found = list_offsets(source_admin, tps, OffsetSpec.for_timestamp(int(bound.timestamp() * 1000)))
                target.update({k: v for k, v in found.items() if v >= 0})
        for p in chosen:
            key = (topic, p)
            end = min(ends[key], snapshot.partitions[p][0])
            start = min(max(starts[key], earliest[key]), end)
            parts.append(PartitionBackfill(topic, p, policy.format_remote_topic(plan.source.alias, topic), start, end,
                                           snapshot.partitions[p][1]))
    return parts


def copy_ranges(spark: Any, source_config: dict[str, str], target_config: dict[str, str],
                parts: list[PartitionBackfill], schemas: dict[str, Any] | None = None) -> None:
    """Copy every part's range in one Spark task per core, each a share of the partitions (`balanced_shares`); fills
    each part's records, written and syncs from what its task reports.

    The tasks read the source themselves (`range_copy`: a librdkafka consumer per task, as the engine reads), so the
    records go from the source to the target without passing through Spark's JVM: the job's DataFrame is one row
    per share, `spark.range` with one Spark partition per row."""
    work = [{"topic": p.topic, "partition": p.partition, "start": p.start, "end": p.end,
             "target_topic": p.target_topic, "target_start": p.target_start} for p in parts if p.end > p.start]
    results: dict[tuple[str, int], dict] = {}
    if work:
        shares = balanced_shares(work, lambda r: r["end"] - r["start"], spark.sparkContext.defaultParallelism)
        # Imported by name so Spark ships a reference to it, not a copy of `__main__` under spark-submit.
        from spark_jobs.range_copy import SUMMARY_SCHEMA
        from spark_jobs.range_copy import copy_partition_ranges as task

        summaries = (spark.range(0, len(shares), 1, len(shares))
                     .mapInArrow(lambda batches: task(batches, source_config, target_config, shares, schemas),
                                 SUMMARY_SCHEMA)
                     .collect())
        results = {(s["topic"], s["partition"]): {**s.asDict(), "syncs": json.loads(s["syncs"])} for s in summaries}
    for part in parts:
        summary = results.get((part.topic, part.partition), {"records": 0, "written": 0, "syncs": []})
        part.records, part.written, part.syncs = summary["records"], summary["written"], summary["syncs"]


def _store_progress(plan: Any, target_config: dict[str, str], parts: list[PartitionBackfill]) -> None:
    """The offset-syncs of what was copied, then each partition's progress at the end of its range, through the
    copy contract's side-record writer (`SideRecordWriter.store_ranges`)."""
    from mirror_engine.flow import InternalTopics, ensure_internal_topics
    from mirror_engine.kafka import admin_client, list_offsets
    from mirror_engine.replication import CopiedRange, SideRecordWriter

    topics = InternalTopics.for_plan(plan)
    admin = admin_client(target_config)
    ensure_internal_topics(admin, topics)
    target_ends = list_offsets(admin, [TopicPartition(p.target_topic, p.partition) for p in parts],
                               OffsetSpec.latest())
    for part in parts:
        expected = part.target_start + part.records
        if target_ends[(part.target_topic, part.partition)] != expected:
            raise RuntimeError(f"{part.target_topic}[{part.partition}] ends at "
                               f"{target_ends[(part.target_topic, part.partition)]}, not at {expected} = its start "
                               f"{part.target_start} + {part.records} backfilled records: another writer? Nothing "
                               f"was marked done")
    writer = SideRecordWriter.for_ranges(target_config, topics, plan.source.alias, plan.target.alias)
    writer.store_ranges([CopiedRange(part.topic, part.partition, part.end, part.target_start + part.records,
                                     [(source, target) for source, target in part.syncs]) for part in parts])


def _summary_table(parts: list[PartitionBackfill], seconds: float) -> str:
    rows = [("topic", "partition", "source range", "target from", "records", "written now")]
    rows += [(p.topic, str(p.partition), f"[{p.start}, {p.end})", str(p.target_start), str(p.records),
              str(p.written)) for p in parts]
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    total = sum(p.written for p in parts)
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)) for row in rows]
    rate = total / max(seconds, 1e-9)
    return "\n".join([*lines, f"backfilled {total} records in {seconds:.1f} s ({rate:.0f} rec/s)"])


if __name__ == "__main__":
    sys.exit(main())
