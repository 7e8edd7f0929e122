"""Validate what a plan's flow copied, record by record: `spark-submit spark_jobs/validate.py --plan FILE`.

Reads the copied range of every partition on both clusters (the engine's stored progress says how far
it copied), compares fingerprints of key, value, headers and timestamp, and writes a JSON report (for
the DAG) and an HTML page (for people) to the plan's `validation.report_dir`. Exits 1 when the copy is
not clean, 2 on a bad plan. `--in-process` compares without Spark, in this process (`validate_local.py`),
as the DAG does for a copy below `validation.in_process_max_records`.
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from collections.abc import Callable

from confluent_kafka import TopicPartition
from confluent_kafka.admin import OffsetSpec

from mirror_engine.flow import FlowMapping
from mirror_engine.kafka import admin_client, describe_topic_configs, list_offsets
from mirror_engine.observe import ReportStore
from mirror_engine.plan import MigrationPlan, PlanError, load_plan
from mirror_engine.security import ClusterSecurity
from spark_jobs.cluster_access import (
    ClusterLoginError,
    allow_oauth_urls,
    check_logins,
    executor_oauth_options,
    plan_security,
)
from spark_jobs.validation import (
    PartitionRange,
    ValidationReport,
    compare,
    fingerprinted,
    kafka_options,
    read_ranges,
    report_to_files,
    sample_by_content,
    untimestamped_topics,
)

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
    parser.add_argument("--plan", required=True)
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
        plan = load_plan(args.plan)
    except PlanError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    mode = args.mode or plan.validation.mode
    fraction = (args.fraction or plan.validation.sample_fraction) if mode == "sample" else 1.0
    try:
        source_config, target_config = plan.client_configs()
        source_security, target_security = plan_security(plan)
        source_options, target_options = kafka_options(source_security), kafka_options(target_security)
    except PlanError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    with FlowMapping(plan, target_config) as mapping:
        mapping.refresh()
        ranges = copied_ranges(plan, mapping, source_config, set(args.topics.split(",")) if args.topics else None)
        if not ranges:
            print(f"error: plan '{plan.name}' has copied nothing yet: nothing to validate", file=sys.stderr)
            return 1

        started = time.monotonic()
        if args.in_process:
            from spark_jobs.validate_local import compare_in_process

            report = compare_in_process(ranges, source_config, target_config, mapping.translate, plan.name, mode,
                                        fraction, log_append_time_topics(target_config, ranges))
        else:
            try:
                report = _compare_with_spark(ranges, (source_security, target_security),
                                             (source_options, target_options), target_config, mapping.translate,
                                             plan.name, mode, fraction, args.master)
            except ClusterLoginError as error:
                print(f"error: {error}", file=sys.stderr)
                return 2
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


def _compare_with_spark(ranges: list[PartitionRange], securities: tuple[ClusterSecurity, ClusterSecurity],
                        options: tuple[dict[str, str], dict[str, str]], target_config: dict[str, str],
                        translate: Callable[[str, int, int], int | None], plan_name: str, mode: str, fraction: float,
                        master: str | None) -> ValidationReport:
    """The report from Spark, after both clusters accepted the login of Spark's Kafka source (ClusterLoginError
    at once otherwise, not minutes of retries)."""
    from spark_jobs.packages import job_packages
    from spark_jobs.session import build_session

    source_security, target_security = securities
    source_options, target_options = options
    spark = build_session(f"validate-{plan_name}", master=master,
                          packages=lambda: job_packages(source_security, target_security),
                          executor_java_options=executor_oauth_options(source_security, target_security))
    allow_oauth_urls(spark, source_security, target_security)
    check_logins(spark, [(source_security, source_options), (target_security, target_options)])
    source_ranges: dict[str, dict[int, tuple[int, int]]] = {}
    target_ranges: dict[str, dict[int, tuple[int, int]]] = {}
    for r in ranges:
        source_ranges.setdefault(r.topic, {})[r.partition] = (r.source_start, r.source_end)
        target_ranges.setdefault(r.target_topic, {})[r.partition] = (r.target_start, r.target_end)
    labels = {r.target_topic: r.topic for r in ranges} | {r.topic: r.topic for r in ranges}
    # Every core reads, also when there are fewer partitions than cores: Spark splits them into offset ranges.
    cores = spark.sparkContext.defaultParallelism
    source = read_ranges(spark, source_options, source_ranges, labels, cores)
    target = read_ranges(spark, target_options, target_ranges, labels, cores)
    untimed = log_append_time_topics(target_config, ranges)
    # Sample mode picks records by fingerprint, so must know first which topics to fingerprint without their
    # timestamp (a read of the source of its own); a full comparison finds them while pairing.
    untimestamped = untimestamped_topics(source) if source is not None and fraction < 1.0 else frozenset()
    untimed |= untimestamped
    empty = spark.createDataFrame(
        [], "topic string, partition int, offset long, fp long, fp_untimed long, stampless boolean")
    source_fp = fingerprinted(source, untimed) if source is not None else empty
    target_fp = fingerprinted(target, untimed) if target is not None else empty
    return compare(sample_by_content(source_fp, fraction), sample_by_content(target_fp, fraction), ranges,
                   translate, plan_name, mode, fraction, untimed, untimestamped)


if __name__ == "__main__":
    sys.exit(main())
