"""MirrorMaker 2 on a shape of bench/scale.py, and the table of the engine beside it.

MM2 (dedicated mode, one JVM from the jar set the brokers use, `kafka_local.mm2`) copies the shape's source topics
into target topics of the same names (identity policy; it creates them itself, which is part of its start-up),
with the client settings bench/vs_mm2.py gives both contenders and MM2's defaults otherwise. Measured from
outside as for the engine: seconds to the first record and to the whole backlog on the target since launch, CPU
seconds until then (/proc), CPU of the whole run (wait4) and peak RSS (VmHWM).
"""

from __future__ import annotations

import logging
import os
import time
from dataclasses import dataclass
from pathlib import Path

from confluent_kafka import KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, OffsetSpec
from harness import MM2_CONSUMER, MM2_PRODUCER, create_topics, print_table
from scale_figures import Code, Figures, Shape

from kafka_local.cluster import KafkaCluster
from kafka_local.mm2 import MirrorMakerSettings, start_mirror_maker
from mirror_engine.kafka import list_offsets

log = logging.getLogger("scale")
# The KRaft controller's answer to a request of more than 10,000 records (a topic and each partition one record).
TOO_LARGE = "excessively large batch"


def cpu_seconds(pid: int) -> float | None:
    """User + system CPU seconds of a running process so far (its threads included); None once it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def librdkafka_cpu_seconds(pid: int) -> float | None:
    """The part of `cpu_seconds` spent in librdkafka's own threads (named `rdk:...`: each client's broker, main
    and background threads); the rest is Python's. None once the process is gone."""
    total = 0.0
    try:
        tasks = list(Path(f"/proc/{pid}/task").iterdir())
    except OSError:
        return None
    for task in tasks:
        try:
            stat = (task / "stat").read_text()
        except OSError:
            continue  # a thread that ended: counted in neither part
        name, fields = stat[stat.index("(") + 1:stat.rindex(")")], stat.rsplit(")", 1)[1].split()
        if name.startswith("rdk:"):
            total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return total


@dataclass
class Mm2Figures:
    """MirrorMaker 2 on one shape; None where it did not get there."""

    first_record_s: float | None = None  # since launch
    copied_s: float | None = None  # since launch
    rate: float | None = None  # records/s from the first record to the last
    copy_cpu_s: float | None = None  # CPU seconds from launch to the backlog copied
    cpu_s: float | None = None  # CPU seconds of the whole run, shutdown included (wait4)
    peak_rss_mib: float | None = None


def measure_mm2(shape: Shape, source: KafkaCluster, target: KafkaCluster, workdir: Path, per_partition: int,
                tasks: int, timeout_s: float = 1800.0, topics_first: bool = False) -> Mm2Figures:
    """MirrorMaker 2 copying the shape's source topics into target topics of the same names (identity policy;
    MM2 creates them itself, which is part of its start-up), with the client settings bench/vs_mm2.py gives both
    contenders and MM2's defaults otherwise. Its groups are those of the shape (synced at MM2's 60 s interval,
    not measured here). `topics_first`: the benchmark creates the target topics first, 500 per request (MM2 asks
    for all of them in one request, which the KRaft controller refuses past 10,000 records)."""
    prefix = f"s{shape.total_partitions}"
    names = [f"{prefix}.t{i:05d}" for i in range(shape.topics)]
    total = shape.total_partitions * per_partition
    figures = Mm2Figures()
    settings = MirrorMakerSettings(topics=rf"{prefix}\..*", groups=f"{prefix}-g.*", tasks_max=tasks,
                                   sync_topic_acls=False, producer=MM2_PRODUCER, consumer=MM2_CONSUMER)
    if topics_first:
        for start in range(0, len(names), 500):
            create_topics(target, names[start:start + 500], shape.partitions)
    log.info("%s: MirrorMaker 2 (tasks.max=%d)", shape, tasks)
    mm2 = start_mirror_maker(source, target, workdir / f"{prefix}-mm2", settings, wait=False)
    admin = AdminClient({**target.client_config(), "log_level": 0})
    try:
        while figures.copied_s is None and time.monotonic() - mm2.started_at < timeout_s:
            mm2.check_alive()
            if figures.first_record_s is None and mm2.log_file.exists() and TOO_LARGE in mm2.log_file.read_text(
                    errors="replace"):
                log.warning("MirrorMaker 2 could not create the target topics of %s (%s): stopping it "
                            "(--mm2-topics-first creates them beforehand):\n%s", shape, TOO_LARGE, mm2.log_tail(10))
                break
            copied = _records_on_target(admin, names, shape.partitions)
            now = time.monotonic() - mm2.started_at
            if figures.first_record_s is None and copied:
                figures.first_record_s = now
            if copied >= total:
                figures.copied_s = now
                figures.copy_cpu_s = cpu_seconds(mm2.pid)
            time.sleep(0.2)
        if figures.copied_s is None and time.monotonic() - mm2.started_at >= timeout_s:
            log.warning("MirrorMaker 2 did not copy the backlog of %s within %.0f s:\n%s", shape, timeout_s,
                        mm2.log_tail(20))
        elif figures.first_record_s is not None and figures.copied_s > figures.first_record_s:
            figures.rate = total / (figures.copied_s - figures.first_record_s)
    finally:
        usage = mm2.stop()
    figures.cpu_s, figures.peak_rss_mib = usage.cpu_s, usage.max_rss_bytes / 2**20
    return figures


def _records_on_target(admin: AdminClient, names: list[str], partitions: int) -> int:
    """Records in those of `names` the target serves already (MM2 creates its topics as it goes)."""
    metadata = admin.list_topics(timeout=60).topics
    served = [name for name in names if name in metadata and len(metadata[name].partitions) == partitions
              and all(p.leader >= 0 for p in metadata[name].partitions.values())]
    if not served:
        return 0
    try:
        tps = [TopicPartition(name, p) for name in served for p in range(partitions)]
        return sum(list_offsets(admin, tps, OffsetSpec.latest(), timeout_s=60).values())
    except KafkaException as error:  # a leader moving or not yet answering: look again
        log.debug("counting MM2's records: %s", error)
        return 0


def report_mm2(columns: list[tuple[Shape, Code]], results: list[Figures],
               mm2: dict[Shape, Mm2Figures]) -> None:
    """The engine beside MirrorMaker 2 on each shape."""
    def cell(value: float | None, digits: int = 1) -> str:
        return "-" if value is None else f"{value:,.{digits}f}"
    header, rows = ["figure"], [[name] for name in (
        "first record since launch, s", "backlog copied since launch, s", "copy rate, records/s",
        "CPU to backlog copied, s", "peak RSS (whole run), MiB")]
    for (shape, code), figures in zip(columns, results, strict=True):
        header.append(f"{shape.total_partitions:,} p {code.label}")
        values = [figures.seconds.get("run: first record"), figures.seconds.get("run: backlog copied"),
                  figures.rate, figures.copy_cpu_s, figures.peak_rss_mib]
        for row, value, digits in zip(rows, values, (1, 1, 0, 1, 0), strict=True):
            row.append(cell(value, digits))
        if shape in mm2 and code is columns[-1][1]:
            other = mm2[shape]
            header.append(f"{shape.total_partitions:,} p MM2")
            values = [other.first_record_s, other.copied_s, other.rate, other.copy_cpu_s, other.peak_rss_mib]
            for row, value, digits in zip(rows, values, (1, 1, 0, 1, 0), strict=True):
                row.append(cell(value, digits))
    for shape, other in mm2.items():  # measured without the engine (--no-engine)
        if all(shape != measured for measured, _ in columns):
            header.append(f"{shape.total_partitions:,} p MM2")
            values = [other.first_record_s, other.copied_s, other.rate, other.copy_cpu_s, other.peak_rss_mib]
            for row, value, digits in zip(rows, values, (1, 1, 0, 1, 0), strict=True):
                row.append(cell(value, digits))
    print_table("The engine beside MirrorMaker 2 on the same shapes", header, rows, [
        "the engine's seconds count from `run`'s launch after `prepare` created the target topics; MM2's from its "
        "launch, creating the target topics itself",
        "MM2: dedicated mode, one JVM (-Xmx2g as its start script), identity policy, the engine's client settings; "
        "CPU from /proc at the backlog copied, peak RSS from VmHWM"])
