"""Validate what a plan's flow copied, record by record: `spark-submit spark_jobs/validate.py --plan FILE`.

Reads the copied range of every partition on both clusters (the engine's stored progress says how far
it copied), compares fingerprints of key, value, headers and timestamp, and writes a JSON report (for
the DAG) and an HTML page (for people) to the plan's `validation.report_dir`. One Spark task per core reads both
sides of a share of the copied partitions with librdkafka and pairs them (`range_validation`).
Exits 1 when the copy is not clean, 2 on a bad plan or a cluster that refuses the login. `--in-process`
compares without Spark, in this process, as the DAG does for a copy below `validation.in_process_max_records`.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from typing import Any

from confluent_kafka import TopicPartition
from confluent_kafka.admin import OffsetSpec

from mirror_engine.flow import FlowMapping
from mirror_engine.kafka import (
    ClusterUnreachable,
    admin_client,
    describe_plan_clusters,
    describe_topic_configs,
    list_offsets,
)
from mirror_engine.mm2 import PlanReference
from mirror_engine.observe import ReportStore
from mirror_engine.plan import MigrationPlan, PlanError
from mirror_engine.schemas import RecordRewrites
from spark_jobs.record_pairing import PartitionFindings
from spark_jobs.shares import balanced_shares
from spark_jobs.validation import PairRanges, PartitionRange, compare, report_to_files

log = logging.getLogger("spark_jobs.validate")


def copied_ranges(plan: MigrationPlan, mapping: FlowMapping, source_config: dict[str, str],
                  topics: set[str] | None = None) -> list[PartitionRange]:
    """Per partition the source range the flow copied and where it landed on the target."""
    policy = plan.policy()
    keys = sorted(k for k in mapping.progress if (not topics or k[0] in topics) and plan.replicates_topic(k[0]))
    earliest = list_offsets(admin_client(source_config), [TopicPartition(t, p) for t, p in keys],
                            OffsetSpec.earliest()) if keys else {}
    ranges = []
    for topic, partition in keys:
        progress = mapping.progress[(topic, partition)]
        partition_map = mapping.offsets.partition(topic, partition)
        flow_start = partition_map.start_offset if partition_map else None
        end = progress.position
        # Records the source's retention removed since can no longer be compared.
        start = end if flow_start is None else min(max(flow_start, earliest[(topic, partition)]), end)
        target_start = mapping.translate(topic, partition, start)
        target_end = progress.target_position
        if target_start is None or target_end < 0:
            start, target_start, target_end = end, 0, 0  # nothing translatable copied yet
        ranges.append(PartitionRange(topic, partition, policy.format_remote_topic(plan.source.alias, topic),
                                     start, end, target_start, target_end))
    return ranges


def log_append_time_topics(target_config: dict[str, str], ranges: list[PartitionRange]) -> frozenset[str]:
    """The source topics whose target topic stamps records with the broker's time (LogAppendTime)."""
    by_target = {r.target_topic: r.topic for r in ranges}
    entries = describe_topic_configs(admin_client(target_config), sorted(by_target))
    return frozenset(by_target[name] for name, configs in entries.items()
                     if any(e.name == "message.timestamp.type" and e.value == "LogAppendTime" for e in configs))


def copied_record_count(plan: MigrationPlan, topics: set[str] | None = None) -> int:
    """How many source records a validation of the plan would compare now (the target holds as many)."""
    source_config, target_config = plan.client_configs()
    with FlowMapping(plan, target_config) as mapping:
        mapping.refresh()
        return sum(r.source_end - r.source_start for r in copied_ranges(plan, mapping, source_config, topics))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--plan", required=True, help="a YAML plan, or an MM2 file's flow: FILE.properties#a->b")
    parser.add_argument("--topics", help="comma-separated source topics (default: every topic the flow copied)")
    parser.add_argument("--mode", choices=("full", "sample"), help="default: the plan's validation.mode")
    parser.add_argument("--fraction", type=float, help="sample mode: fraction of records, chosen by content")
    parser.add_argument("--report-dir", help="default: the plan's validation.report_dir")
    parser.add_argument("--master", help="Spark master when not run by spark-submit (default local[2])")
    parser.add_argument("--in-process", action="store_true",
                        help="compare in this process without Spark (for a small copy)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    try:
        plan = PlanReference.parse(args.plan).load()
    except PlanError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    mode = args.mode or plan.validation.mode
    fraction = (args.fraction or plan.validation.sample_fraction) if mode == "sample" else 1.0
    try:
        source_config, target_config = plan.client_configs()
        # A login that cannot succeed ends the job here, naming the cluster and why, before any Spark task
        # retries it; the tasks log in with these same settings.
        describe_plan_clusters(plan, source_config, target_config, timeout_s=30)
    except (PlanError, ClusterUnreachable) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    with FlowMapping(plan, target_config) as mapping:
        mapping.refresh()
        ranges = copied_ranges(plan, mapping, source_config, set(args.topics.split(",")) if args.topics else None)
        if not ranges:
            print(f"error: plan '{plan.name}' has copied nothing yet: nothing to validate", file=sys.stderr)
            return 1

        started = time.monotonic()
        untimed = log_append_time_topics(target_config, ranges)
        if args.in_process:
            from spark_jobs.range_validation import compare_in_process

            report = compare_in_process(ranges, source_config, target_config, mapping.translate, plan.name, mode,
                                        fraction, untimed, RecordRewrites.shipped(plan))
        else:
            from spark_jobs.session import build_session

            spark = build_session(f"validate-{plan.name}", master=args.master)
            report = compare(ranges, _pair_with_spark(spark, source_config, target_config, fraction,
                                                      RecordRewrites.shipped(plan)),
                             mapping.translate, plan.name, mode, fraction, untimed)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    json_path, html_path = report_to_files(report, args.report_dir or plan.validation.report_dir,
                                           f"validation-{plan.name}-{stamp}")
    # Also where every component reads it (the files are on this machine only).
    stored = ReportStore(plan, target_config).put("validation", stamp, report.to_dict())
    totals = report.to_dict()["totals"]
    print(f"validation of '{plan.name}' ({mode}): {'clean' if report.clean else 'NOT CLEAN'} in "
          f"{time.monotonic() - started:.1f} s: {totals}")
    for note in report.notes:
        print(f"  note: {note}")
    for partition in report.partitions:
        if not partition.clean:
            print(f"  {partition.topic}[{partition.partition}]: {partition.summary()}")
    print(f"report: {json_path}\npage:   {html_path}\nstored: {stored} on the target")
    return 0 if report.clean else 1


def _pair_with_spark(spark: Any, source_config: dict[str, str], target_config: dict[str, str],
                     fraction: float, schemas: dict[str, Any] | None = None) -> PairRanges:
    """Ranges read and paired by Spark: one task per core, each a share of the partitions (`balanced_shares`), read
    by one librdkafka consumer per cluster (the plan's settings, the files shipped with the job by their relative
    names, as the backfill's tasks), so the records never pass through Spark's JVM and no shuffle is needed: each
    task returns its partitions' findings."""

    def pair(ranges: list[PartitionRange],
             untimed: frozenset[str]) -> tuple[dict[tuple[str, int], PartitionFindings], set[str]]:
        # Imported by name so Spark ships a reference to it, not a copy of `__main__` under spark-submit.
        from spark_jobs.range_validation import FINDINGS_SCHEMA, records_of
        from spark_jobs.range_validation import pair_ranges_task as task

        shares = balanced_shares(ranges, records_of, spark.sparkContext.defaultParallelism)
        rows = (spark.range(0, len(shares), 1, len(shares))
                .mapInArrow(lambda batches: task(batches, source_config, target_config, shares, fraction, untimed,
                                                 schemas), FINDINGS_SCHEMA)
                .collect())
        return ({(row["topic"], row["partition"]): PartitionFindings(**json.loads(row["findings"])) for row in rows},
                {row["topic"] for row in rows if row["stampless"]})

    return pair


if __name__ == "__main__":
    sys.exit(main())
